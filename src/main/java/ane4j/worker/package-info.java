/**
 * The supervised worker JVM (docs/DESIGN.md §1): {@link ane4j.worker.Supervisor} in the user's JVM runs all backend work in
 * a child JVM ({@link ane4j.worker.WorkerMain}), restarts it when its compile budget is spent or it dies, and restores
 * kernels and training so the caller does not notice (one log line per restart).
 *
 * <h2>Process</h2>
 * The worker runs with the parent's {@code java} ({@code ProcessHandle.current().info().command()}), its
 * {@code java.class.path}, {@code --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector
 * -XX:+ExitOnOutOfMemoryError -XX:+DisplayVMOutputToStderr}, {@code -Xmx} from {@code Options.heap}, then
 * {@code Options.jvmOptions}, then every {@code ane4j.*} system property of the parent overridden by
 * {@code Options.backend} ({@code ane4j.backend}), {@code Options.compileBudget} ({@code ane4j.compileBudget}),
 * {@code Options.refStorage} ({@code ane4j.ref.storage}) and {@code Options.systemProperties}.
 * Exit codes are {@link ane4j.worker.ExitCode}: 0 DONE, 1 FAILED, 3 OUT_OF_MEMORY, 75 RESTART_BUDGET (a checkpoint of
 * training in flight was just written), 76 ORPHANED (stdin closed: the parent is gone; training was checkpointed);
 * 128+n means signal n (137 = SIGKILL, 134 = SIGABRT from a native crash).
 *
 * <h2>Channel</h2>
 * Control messages go over the worker's stdin (requests) and stdout (replies and events); the worker moves
 * {@code System.out} to stderr so nothing else reaches the channel. stderr is forwarded line by line to
 * {@code Options.log} (a restarted worker's start-up lines are kept back). A frame is, big-endian:
 * <pre>
 *   u32 length (of what follows) | u32 request id | u8 type | body
 * </pre>
 * Body fields: {@code i32}, {@code i64}, {@code f32}/{@code f64} as raw bits, {@code str} = i32 byte count + UTF-8,
 * {@code type} = str dtype (MIL name) + i32 rank + i32 dims, {@code specs} = i32 n + n × (str name, type),
 * {@code map} = i32 n + n × (str key, str value).
 * <pre>
 *   worker → parent, unasked, id 0
 *     32 READY     i64 pid, str backend, i64 compile budget                     (first frame)
 *     38 EXITING   i32 exit code, str reason                                    (just before a deliberate exit)
 *   parent → worker requests; each gets 33 OK (body below) or 34 ERROR (str one-line message) with the same id
 *      1 COMPILE   i32 kernel id, str function ("" = main), str MIL text, str model dir ("" = none)
 *                  OK: specs inputs, specs outputs, i64 compiles so far
 *      2 EVALUATE  i32 kernel id, then inputs and outputs, each i32 n + n × tensor:
 *                  str name, i64 region id, str file path, i64 region size, i64 byte offset, type
 *                  OK: i64 nanoseconds the evaluation took in the worker. The worker maps a region's file once (by id) and keeps it mapped.
 *      3 RELEASE_KERNEL i32 kernel id          4 RELEASE_REGION i64 region id     (the parent does not wait)
 *      9 START     the first frame, before READY: the backend's settings, str choice ("" = automatic), i32 fp32 storage,
 *                  i64 compile budget (-1 = the backend's default). No backend setting reaches the worker as a -D property.
 *      5 TRAIN     the whole RunSpec (RunSpec.of reads it back): a map of its training keys, then a map of its placement
 *                  keys (compileBudget, inProcess, heap); checked against the backend START set up   OK: i64 step the run starts at
 *                  before OK, while the trainer sets up: 39 PROGRESS (i32 stage: 1 compiling | 2 first step,
 *                  i32 kernel k, i32 of n, str kernel name) before each compile and once after the setup;
 *                  then events with the TRAIN id: 35 STEP (i64 step, i64 steps, f32 loss, lr, lossScale, gradNorm,
 *                  i32 updated, i32 skipped, f64 ms, f64 tokens/s, i32 n + n × (str phase, f64 ms),
 *                  i64 staged activation bytes, i64 staged weight bytes),
 *                  36 MESSAGE (str line), 37 TRAIN_END (i32 0 done | 1 stopped | 2 failed, str message)
 *      6 STOP_TRAINING   checkpoint and stop at the next step boundary (TRAIN_END stopped follows)
 *      7 STATUS    OK: str backend, i64 compiles, i64 budget, i32 live kernels, i64 next training step (-1: none)
 *      8 SHUTDOWN  stop training (checkpointed), reply, exit DONE
 *     10 WARM_UP   draw what a default run reads first (Trainer.warmUp) on a background thread (the parent does not wait)
 * </pre>
 *
 * <h2>Tensors</h2>
 * Tensors never cross the channel. A region is a file in {@code /dev/shm} (else {@code java.io.tmpdir}) mapped with
 * {@code FileChannel.map} into an {@code Arena} on both sides; {@code RemoteKernel.allocateInput/Output} and
 * {@code Supervisor.allocate} return {@code TensorBuffer}s over regions, and views of them are passed as (region,
 * offset). Other buffers are copied once into a per-kernel scratch region.
 *
 * <h2>Restarts</h2>
 * The parent keeps the MIL text (and weight files) of every live kernel and the training run's options; the worker
 * keeps the backend, the compiled kernels and the training state. Training runs on its own thread through the trainer's
 * one loop ({@code Trainer.run}), which serves the run's stop flag at an update boundary with a checkpoint. When a
 * compile would exceed the budget (CountingBackend refuses it before any work), the worker checkpoints training (the
 * training thread where it is; a kernel's compile first stops training at its next update boundary) and exits with
 * RESTART_BUDGET. On any worker exit the next worker
 * recompiles every live kernel, restarts training with {@code resume = true} (newest valid checkpoint), and the request
 * in flight is retried. A worker that made no progress (no new training step, no request answered) counts toward
 * {@code Options.maxRetries}; past it the supervisor gives up with the cause, and the next request starts afresh.
 */
package ane4j.worker;
