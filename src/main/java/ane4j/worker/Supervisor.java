package ane4j.worker;

import ane4j.run.RunSpec;
import ane4j.run.RunState;
import ane4j.run.StepMetrics;
import ane4j.run.StopFlag;
import ane4j.backend.Backends;
import ane4j.backend.CountingBackend;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.mil.Dialect;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.train.Checkpoint;
import ane4j.run.RunFolder;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Runs all backend work (compile, evaluate, train) in a child JVM, the worker, so that the ANE compiler's leak and
 * native faults never take the user's JVM down (docs/DESIGN.md §1). The worker is started on first use with this JVM's
 * java, class path and ane4j system properties, but for the backend's settings, which are its first frame. When it
 * exits for a restart (its compile budget is spent; it checkpointed training first) or dies (killed, native crash, out of memory), the next worker recompiles every live
 * kernel from the MIL text kept here, resumes training from the newest valid checkpoint, and the request in flight is
 * retried; the log gets one line saying so. After {@link Options#maxRetries} deaths in a row without progress it gives
 * up with an error naming the cause, and stays usable: the next request starts a fresh worker.
 *
 * <pre>{@code
 * try (Supervisor s = new Supervisor()) {
 *     RemoteKernel k = s.compile(program);            // a Kernel; its buffers are shared memory
 *     TensorBuffer x = k.allocateInput("x"), y = k.allocateOutput("y");
 *     k.evaluate(Map.of("x", x), Map.of("y", y));
 *     s.train(TrainOptions.of(Map.of("steps", "200")), listener);   // blocks, streaming steps
 * }
 * }</pre>
 */
public final class Supervisor implements AutoCloseable {
    public static final String MAIN_CLASS = "ane4j.worker.WorkerMain";

    /**
     * How to run the worker.
     *
     * @param backend          {@code ane} | {@code ref} | null (this JVM's {@code -Dane4j.backend}, else automatic)
     * @param compileBudget    compiles per worker before a restart, or null ({@code -Dane4j.compileBudget}, else the backend's default)
     * @param refStorage       {@code fp16} | {@code fp32} for the reference backend, or null
     * @param heap             the worker's {@code -Xmx} ({@code 4g}), or null for the JVM default
     * @param jvmOptions       more JVM options, before the main class
     * @param systemProperties more {@code -D} properties (after the ane4j.* ones copied from this JVM)
     * @param startTimeout     how long a worker may take to report ready
     * @param requestTimeout   how long one request (compile, evaluate, training start) may take; the worker is stopped after
     * @param maxRetries       restarts in a row without progress before giving up (and deaths during one request)
     * @param sharedDir        where shared tensor files go, or null ({@code /dev/shm}, else {@code java.io.tmpdir})
     * @param log              receives the worker's stderr and the supervisor's one-line notices
     * @param hints            how the user sets the heap and the compile budget, for the fixes errors name
     */
    public record Options(String backend, Long compileBudget, String refStorage, String heap, List<String> jvmOptions,
                          Map<String, String> systemProperties, Duration startTimeout, Duration requestTimeout, int maxRetries,
                          Path sharedDir, Consumer<String> log, Hints hints) {
        public Options {
            jvmOptions = List.copyOf(jvmOptions);
            systemProperties = Map.copyOf(systemProperties);
            if (maxRetries < 1) throw new IllegalArgumentException("[worker] maxRetries must be at least 1, got " + maxRetries);
            if (refStorage != null && !refStorage.equals("fp16") && !refStorage.equals("fp32"))
                throw new IllegalArgumentException("[worker] refStorage " + refStorage + " must be fp16 or fp32");
        }

        public static Options defaults() {
            return builder().build();
        }

        /** The defaults, to change one setting at a time ({@code Options.builder().backend("ref").heap("8g").build()}). */
        public static Builder builder() {
            return new Builder();
        }

        /** These options as a builder, to change a few of them. */
        public Builder toBuilder() {
            Builder b = new Builder();
            b.backend = backend;
            b.compileBudget = compileBudget;
            b.refStorage = refStorage;
            b.heap = heap;
            b.jvmOptions = jvmOptions;
            b.systemProperties = new LinkedHashMap<>(systemProperties);
            b.startTimeout = startTimeout;
            b.requestTimeout = requestTimeout;
            b.maxRetries = maxRetries;
            b.sharedDir = sharedDir;
            b.log = log;
            b.hints = hints;
            return b;
        }

        public Options withBackend(String b) { return toBuilder().backend(b).build(); }
        public Options withCompileBudget(long b) { return toBuilder().compileBudget(b).build(); }
        public Options withRefStorage(String s) { return toBuilder().refStorage(s).build(); }
        public Options withHeap(String h) { return toBuilder().heap(h).build(); }
        public Options withJvmOptions(String... o) { return toBuilder().jvmOptions(o).build(); }
        public Options withSystemProperty(String k, String v) { return toBuilder().systemProperty(k, v).build(); }
        public Options withRequestTimeout(Duration d) { return toBuilder().requestTimeout(d).build(); }
        public Options withMaxRetries(int n) { return toBuilder().maxRetries(n).build(); }
        public Options withHints(Hints h) { return toBuilder().hints(h).build(); }
        public Options withLog(Consumer<String> l) { return toBuilder().log(l).build(); }

        /**
         * The worker's backend: these options, else this JVM's {@code -D} properties. They reach the worker as its first
         * frame ({@link Protocol#START}), never as system properties, and a training run is checked against them.
         */
        public Backends.Settings backendSettings() {
            String choice = backend != null ? backend : System.getProperty(Backends.PROPERTY);
            boolean fp32 = refStorage != null ? refStorage.equals("fp32") : Backends.fp32StorageProperty();
            Long budget = compileBudget != null ? compileBudget : CountingBackend.budgetProperty();
            return new Backends.Settings(choice == null || choice.isBlank() ? null : choice.strip(), fp32, budget);
        }

        /** {@link Options} one setting at a time; {@link #build} checks them. */
        public static final class Builder {
            private String backend, refStorage, heap;
            private Long compileBudget;
            private List<String> jvmOptions = List.of();
            private Map<String, String> systemProperties = new LinkedHashMap<>();
            private Duration startTimeout = Duration.ofSeconds(60), requestTimeout = Duration.ofMinutes(10);
            private int maxRetries = 3;
            private Path sharedDir;
            private Consumer<String> log = System.err::println;
            private Hints hints = Hints.API;

            private Builder() {}

            public Builder backend(String b) { backend = b; return this; }
            public Builder compileBudget(Long b) { compileBudget = b; return this; }
            public Builder refStorage(String s) { refStorage = s; return this; }
            public Builder heap(String h) { heap = h; return this; }
            public Builder jvmOptions(String... o) { jvmOptions = List.of(o); return this; }
            public Builder systemProperty(String k, String v) { systemProperties.put(k, v); return this; }
            public Builder startTimeout(Duration d) { startTimeout = d; return this; }
            public Builder requestTimeout(Duration d) { requestTimeout = d; return this; }
            public Builder maxRetries(int n) { maxRetries = n; return this; }
            public Builder sharedDir(Path p) { sharedDir = p; return this; }
            public Builder log(Consumer<String> l) { log = l; return this; }
            public Builder hints(Hints h) { hints = h; return this; }

            public Options build() {
                return new Options(backend, compileBudget, refStorage, heap, jvmOptions, systemProperties, startTimeout, requestTimeout,
                        maxRetries, sharedDir, log, hints);
            }
        }
    }

    /**
     * How the user sets the worker's heap and compile budget, named in the fixes errors suggest: {@link #API} for code
     * using the supervisor, {@link #CLI} for {@code ane4j train}.
     */
    public record Hints(String heap, String compileBudget, String startup) {
        public static final Hints API = new Hints("Supervisor.Options.withHeap", "Supervisor.Options.withCompileBudget (or -D" + CountingBackend.BUDGET_PROPERTY + ")",
                "the JVM options, heap and class path of Supervisor.Options");
        public static final Hints CLI = new Hints("--heap (e.g. --heap 8g)", "--compile-budget", "--heap and ANE4J_JAVA_OPTS");
    }

    /**
     * What the supervisor knows: whether a worker runs (its pid, backend, compiles used of its budget), how often it was
     * restarted, the live kernels, and the state of the training run it carries or carried last (null when none).
     */
    public record Status(boolean running, long workerPid, String backend, long compileCount, long compileBudget,
                         int restarts, int liveKernels, RunState training) {}

    private final Options options;
    private final SharedMemory shared;
    private final Object lock = new Object();
    private final Map<Integer, RemoteKernel> live = java.util.Collections.synchronizedMap(new LinkedHashMap<>());  // changed under lock
    private final Map<Long, SharedMemory.Region> userRegions = new LinkedHashMap<>();  // guarded by itself
    private final AtomicInteger kernelIds = new AtomicInteger();
    private final WorkerProcess.Events events = new Events();
    private volatile WorkerProcess worker;        // written under lock
    private volatile CarriedRun training;         // written under lock
    private volatile int restarts;
    private int streak;                           // deaths in a row without progress, under lock
    private volatile boolean closed;

    public Supervisor() { this(Options.defaults()); }

    private final Thread cleanup;

    public Supervisor(Options options) {
        this.options = options;
        SharedMemory.removeStale(options.sharedDir(), options.log());
        this.shared = new SharedMemory(options.sharedDir());
        // shared files live in memory (/dev/shm): delete them even when the user's JVM exits without close()
        this.cleanup = new Thread(shared::close, "ane4j-supervisor-cleanup");
        Runtime.getRuntime().addShutdownHook(cleanup);
    }

    public Options options() { return options; }

    /**
     * Removes the shared tensor folders that dead processes left in {@code /dev/shm}, {@code java.io.tmpdir} and
     * {@code ANE4J_SHARED_DIR} (a SIGKILLed launcher or notebook kernel never cleans up); a live process's folder is
     * never touched. Each new supervisor does this; an in-process run calls it too. Returns how many were removed.
     */
    public static int removeStaleSharedMemory(Consumer<String> log) { return SharedMemory.removeStale(null, log).size(); }

    /** Starts the worker now instead of at the first request. @throws WorkerException when it cannot start */
    public Supervisor start() {
        ensureWorker();
        return this;
    }

    /**
     * Starts the worker now and has it prepare, in the background, what a run with the default settings reads first
     * (the notebook does this at its start, ahead of its first {@code %%train}).
     */
    public Supervisor startAndWarmUp() {
        WorkerProcess w = ensureWorker();
        w.post(Protocol.WARM_UP, new byte[0]);
        return this;
    }

    /** The worker's command line. */
    public List<String> command() {
        List<String> c = new ArrayList<>();
        c.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        if (options.heap() != null) c.add("-Xmx" + options.heap());
        c.add("-Xmn64m");   // few huge long-lived arrays: a small fixed young generation keeps the touched heap (RSS) small
        c.addAll(List.of("--enable-native-access=ALL-UNNAMED", "--add-modules", "jdk.incubator.vector",
                "-XX:+ExitOnOutOfMemoryError", "-XX:+DisplayVMOutputToStderr"));
        if (Supervisor.class.desiredAssertionStatus()) c.add("-ea");
        c.add("-Djava.util.logging.SimpleFormatter.format=%4$s: %5$s%6$s%n");   // one line per log record
        c.addAll(options.jvmOptions());
        // this JVM's ane4j.* properties, but not the backend's settings: those go on the pipe ({@link #startFrame})
        Map<String, String> props = new TreeMap<>();
        for (String k : System.getProperties().stringPropertyNames()) if (k.startsWith("ane4j.") && !BACKEND_PROPERTIES.contains(k)) props.put(k, System.getProperty(k));
        props.putAll(options.systemProperties());
        props.forEach((k, v) -> c.add("-D" + k + "=" + v));
        c.addAll(List.of("-cp", System.getProperty("java.class.path"), MAIN_CLASS));
        return c;
    }

    private static final java.util.Set<String> BACKEND_PROPERTIES = java.util.Set.of(Backends.PROPERTY, CountingBackend.BUDGET_PROPERTY, Backends.REF_STORAGE_PROPERTY);

    /** The worker's first frame: its backend's settings (choice or "", fp32 storage, compile budget or -1). */
    private byte[] startFrame() {
        Backends.Settings s = options.backendSettings();
        return new Protocol.Writer().str(s.choice() == null ? "" : s.choice()).i32(s.fp32Storage() ? 1 : 0)
                .i64(s.compileBudget() == null ? -1 : s.compileBudget()).bytes();
    }

    // -----------------------------------------------------------------------------------------------------------------
    // kernels

    /** Compiles the program's main function in the worker. Weights travel as files written next to the shared tensors. */
    public RemoteKernel compile(Program program) {
        int id = kernelIds.incrementAndGet();
        Path dir = null;
        if (!program.weights().isEmpty()) {
            dir = shared.dir().resolve("kernels").resolve("k" + id);
            try {
                program.weights().writeTo(dir);
            } catch (IOException e) {
                throw new UncheckedIOException("[worker] cannot write the weights of kernel " + id + " to " + dir + ": " + RunFolder.reason(e), e);
            }
        }
        return compile(new RemoteKernel(this, id, MilWriter.write(program, Dialect.IOS18), program.main().name(), dir));
    }

    /** Compiles MIL text (its {@code main} or only function). */
    public RemoteKernel compile(String milText) { return compile(milText, "", null); }

    /**
     * Compiles one function of MIL text.
     *
     * @param modelDir where {@code @model_path/} BLOBFILE paths resolve, or null
     */
    public RemoteKernel compile(String milText, String functionName, Path modelDir) {
        return compile(new RemoteKernel(this, kernelIds.incrementAndGet(), milText, functionName == null ? "" : functionName, modelDir));
    }

    private RemoteKernel compile(RemoteKernel k) {
        synchronized (lock) {
            WorkerProcess w = ensureWorker();
            long forTraining = trainingCompiles(w);
            if (live.size() + 1 + forTraining > w.compileBudget)
                throw new IllegalStateException("[worker] the compile budget of " + w.compileBudget + " cannot hold " + (live.size() + 1)
                        + " live kernels" + (forTraining > 0 ? " beside the " + forTraining + " kernels of the training run" : "")
                        + "; close kernels you no longer need or raise it with " + options.hints().compileBudget());
            Protocol.Reader r = call(Protocol.COMPILE, compileBody(k), "compiling kernel " + k.id()).reader();
            k.specs(r.specs(), r.specs());
            live.put(k.id(), k);
        }
        return k;
    }

    /** The compiles the training run carried by {@code w} spent there when it started in it (its kernels); 0 without one. */
    private long trainingCompiles(WorkerProcess w) {
        CarriedRun s = training;
        return s == null || !s.isActive() || s.worker != w ? 0 : s.compiles;
    }

    /** The compiles {@code w} has made so far. */
    private long compileCount(WorkerProcess w) throws TimeoutException {
        Protocol.Reader r = w.call(Protocol.STATUS, new byte[0], options.requestTimeout()).reader();
        r.str();
        return r.i64();
    }

    private static byte[] compileBody(RemoteKernel k) {
        return new Protocol.Writer().i32(k.id()).str(k.functionName()).str(k.milText()).str(k.modelDir() == null ? "" : k.modelDir().toString()).bytes();
    }

    /** A zeroed tensor in shared memory, usable with any remote kernel without a copy; freed by {@link #free} or close. */
    public TensorBuffer allocate(TensorType type) {
        SharedMemory.Region r = allocateRegion(type.byteSize());
        synchronized (userRegions) { userRegions.put(r.id(), r); }
        return TensorBuffer.wrap(r.segment(), type);
    }

    /** Frees a buffer from {@link #allocate}. */
    public void free(TensorBuffer buffer) {
        SharedMemory.Region r = shared.find(buffer.segment());
        synchronized (userRegions) {
            if (r == null || userRegions.remove(r.id()) == null)
                throw new IllegalArgumentException("[worker] " + buffer + " was not allocated by Supervisor.allocate (or is already freed)");
        }
        freeRegions(List.of(r));
    }

    SharedMemory.Region allocateRegion(long bytes) {
        if (closed) throw new IllegalStateException("[worker] the supervisor is closed");
        return shared.allocate(bytes);
    }

    void evaluate(RemoteKernel k, Map<String, TensorBuffer> in, Map<String, TensorBuffer> out) {
        Protocol.Writer body = new Protocol.Writer().i32(k.id());
        List<Runnable> copyBack = new ArrayList<>();
        refs(body, k, k.inputs(), in, true, copyBack);
        refs(body, k, k.outputs(), out, false, copyBack);
        k.workerNanos(call(Protocol.EVALUATE, body.bytes(), "evaluating kernel " + k.id()).reader().i64());
        for (Runnable r : copyBack) r.run();
    }

    /** Each tensor as (name, region, path, region size, offset, type); buffers outside shared memory go through a scratch copy. */
    private void refs(Protocol.Writer w, RemoteKernel k, List<TensorSpec> specs, Map<String, TensorBuffer> given, boolean input, List<Runnable> copyBack) {
        String what = input ? "input" : "output";
        for (String name : given.keySet())
            if (specs.stream().noneMatch(s -> s.name().equals(name)))
                throw new IllegalArgumentException("[kernel] no " + what + " '" + name + "' (" + what + "s: " + specs.stream().map(TensorSpec::name).toList() + ")");
        w.i32(specs.size());
        for (TensorSpec s : specs) {
            TensorBuffer b = given.get(s.name());
            if (b == null) throw new IllegalArgumentException("[kernel] missing " + what + " '" + s.name() + "' (" + s.type() + ")");
            if (!b.type().equals(s.type())) throw new IllegalArgumentException("[kernel] " + what + " '" + s.name() + "' is " + b.type() + " but the kernel wants " + s.type());
            SharedMemory.Region r = shared.find(b.segment());
            if (r == null) {
                TensorBuffer scratch = k.scratch(what + ":" + s.name(), s.type());
                TensorBuffer user = b;
                if (input) scratch.copyFrom(user);
                else copyBack.add(() -> user.copyFrom(scratch));
                b = scratch;
                r = shared.find(b.segment());
            }
            w.str(s.name()).i64(r.id()).str(r.path().toString()).i64(r.size()).i64(b.segment().address() - r.base()).type(s.type());
        }
    }

    void release(RemoteKernel k, List<SharedMemory.Region> regions) {
        synchronized (lock) { live.remove(k.id()); }
        WorkerProcess w = worker;
        if (w != null && !closed) w.post(Protocol.RELEASE_KERNEL, new Protocol.Writer().i32(k.id()).bytes());
        freeRegions(regions);
    }

    private void freeRegions(List<SharedMemory.Region> regions) {
        WorkerProcess w = worker;
        for (SharedMemory.Region r : regions) {
            if (w != null && !closed) w.post(Protocol.RELEASE_REGION, new Protocol.Writer().i64(r.id()).bytes());
            shared.free(r);
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // training

    /**
     * What a training run in the worker reports, in order, on one thread of the supervisor (so a listener may call the
     * supervisor): each step once — a step that a restarted worker runs again is checked against its first run and not
     * reported again — one-line messages, setup progress before step 1, and at last its end.
     */
    public interface TrainingEvents extends Trainer.Listener {
        /** The run ended: FINISHED, STOPPED (served a stop, with its checkpoint) or FAILED with {@code error}; after every step. */
        void onEnd(RunState state, String error);
    }

    /** Trains in the worker and blocks until the run ends; progress goes to {@code listener} (or null). Returns its steps. */
    public List<StepMetrics> train(TrainOptions o, Trainer.Listener listener) {
        return train(RunSpec.of(o.toMap()), listener);
    }

    /** {@link #train(TrainOptions, Trainer.Listener)} of a whole run description. */
    public List<StepMetrics> train(RunSpec run, Trainer.Listener listener) {
        ane4j.run.StepHistory steps = new ane4j.run.StepHistory();
        java.util.concurrent.CompletableFuture<List<StepMetrics>> end = new java.util.concurrent.CompletableFuture<>();
        Trainer.Listener l = listener != null ? listener : m -> {};
        startTraining(run, new TrainingEvents() {
            @Override public void onStep(StepMetrics m) {
                steps.add(m);
                l.onStep(m);
            }

            @Override public void onMessage(String line) { l.onMessage(line); }

            @Override public void onSetup(ane4j.run.SetupProgress p) { l.onSetup(p); }

            @Override public void onEnd(RunState state, String error) {
                if (state == RunState.FAILED) end.completeExceptionally(new WorkerException(error));
                else end.complete(steps.list());
            }
        }, new StopFlag());
        try {
            return end.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new WorkerException("[worker] interrupted while waiting for training");
        } catch (java.util.concurrent.ExecutionException e) {
            throw (WorkerException) e.getCause();
        }
    }

    /**
     * Starts a training run in the worker and returns at once; the worker serves the run's {@code stop} flag. The whole
     * description crosses the pipe, placed where it really runs: in this supervisor's worker, with its compile budget
     * and heap (what its run record says). A run that is not a resume needs a run directory without checkpoints (a
     * restart resumes from the newest one there). This JVM holds the run folder from here to the run's end, across restarts.
     */
    public void startTraining(RunSpec run, TrainingEvents events, StopFlag stop) {
        TrainOptions o = run.train();
        Checkpoint.refuseUnresumed(o);
        RunSpec here = run.with("inProcess", "false").with("compileBudget", options.compileBudget() == null ? "" : options.compileBudget().toString())
                .with("heap", options.heap() == null ? "" : options.heap());
        CarriedRun s;
        synchronized (lock) {
            CarriedRun t = training;
            if (t != null && t.isActive()) throw new IllegalStateException("[train] a run is already training in " + t.options.runDir() + "; stop() it or wait for it");
            s = new CarriedRun(here, events, stop, RunFolder.lock(o.runDir()));
            training = s;
            WorkerProcess w = worker;
            if (w == null || !w.isAlive()) s.onSetup(ane4j.run.SetupProgress.startingWorker());
            try {
                ensureWorker();
            } catch (RuntimeException | Error e) {   // the run ends and its folder is released, whatever stopped the start
                s.finish(RunState.FAILED, String.valueOf(e.getMessage()));
                throw e;
            }
        }
        if (s.state == RunState.FAILED) throw new WorkerException(s.error);
    }

    /** Sets the stop flag of the run started with {@code run} and asks the worker carrying it to checkpoint and stop at its next update boundary. */
    public void stopTraining(StopFlag run) {
        CarriedRun s = training;
        if (s == null || s.stop != run) return;   // another run (a start that was refused must not stop the one training)
        s.stop.request();
        WorkerProcess w = s.worker;
        if (w != null && w.isAlive() && s.isActive()) w.post(Protocol.STOP_TRAINING, new byte[0]);
    }

    /** How often the worker was restarted (killed, died, or its compile budget spent) since this supervisor began. */
    public int restarts() { return restarts; }

    /** Starts training in {@code w} when a run is active and not yet there; returns the step it resumed at, or -1. */
    private long attachTraining(WorkerProcess w) throws WorkerProcess.DiedException {
        CarriedRun s = training;
        if (s == null || !s.isActive() || s.worker == w) return -1;
        Map<String, String> m = Protocol.toMap(s.options);
        m.put("resume", "true");   // the first start has no checkpoints (checked), so this is the same as a fresh start
        // setting the old run aside is for the first start only: a restarted worker resumes from this run's checkpoints
        if (s.attachments > 0) m.put("restartFromScratch", "false");
        int id = w.newId();
        s.attach(w, id);
        try {
            long before = compileCount(w);
            long step = w.call(id, Protocol.TRAIN, new Protocol.Writer().map(m).map(s.run.placement()).bytes(), options.requestTimeout()).reader().i64();
            s.compiles = Math.max(0, compileCount(w) - before);   // the run's kernels, compiled before the worker answers
            if (s.stop.requested()) w.post(Protocol.STOP_TRAINING, new byte[0]);
            return step;
        } catch (WorkerProcess.DiedException e) {
            throw e;
        } catch (WorkerException e) {
            s.finish(RunState.FAILED, e.getMessage());
            return -1;
        } catch (TimeoutException e) {
            w.kill();
            throw new WorkerProcess.DiedException("did not start training within " + options.requestTimeout().toSeconds() + " s");
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // the worker's life

    /** A request with retries across restarts. */
    private Protocol.Frame call(byte type, byte[] body, String what) {
        int deaths = 0;
        while (true) {
            WorkerProcess w = ensureWorker();
            try {
                Protocol.Frame f = w.call(type, body, options.requestTimeout());
                w.madeProgress = true;
                return f;
            } catch (WorkerProcess.DiedException e) {
                if (++deaths >= options.maxRetries() + 1)
                    throw new WorkerException("[worker] " + what + ": the worker " + e.getMessage() + " (" + deaths + " times during this request); giving up on it");
            } catch (TimeoutException e) {
                w.kill();
                throw new WorkerException("[worker] " + what + " took longer than " + options.requestTimeout().toSeconds()
                        + " s; the worker was stopped (a new one starts with the next request)");
            }
        }
    }

    /** The live worker, starting or restarting it (restoring kernels and training) when needed. */
    private WorkerProcess ensureWorker() {
        synchronized (lock) {
            while (true) {
                if (closed) throw new IllegalStateException("[worker] the supervisor is closed");
                WorkerProcess w = worker;
                if (w != null && w.isAlive()) {
                    try {
                        attachTraining(w);
                    } catch (WorkerProcess.DiedException e) {
                        continue;
                    }
                    if (w.isAlive()) return w;
                    continue;
                }
                String cause = null;
                if (w != null) {
                    cause = w.awaitDeath();
                    streak = w.madeProgress ? 0 : streak + 1;
                    worker = null;
                    if (streak >= options.maxRetries()) giveUp(cause);
                    restarts++;
                    if (streak > 0) sleep(100L << Math.min(streak - 1, 5));
                }
                long t0 = System.nanoTime();
                w = WorkerProcess.start(command(), startFrame(), events, options.log(), options.startTimeout(), cause != null, options.hints().startup());
                worker = w;
                if (closed) {   // closed while this worker started (a background start): it goes at once
                    w.kill();
                    throw new IllegalStateException("[worker] the supervisor is closed");
                }
                try {
                    int n = restoreKernels(w);
                    long step = attachTraining(w);
                    w.quiet = false;
                    if (cause != null)
                        options.log().accept(String.format(java.util.Locale.ROOT, "worker restarted: %s — %s%d kernel%s recompiled in %.1f s", cause,
                                step >= 0 ? "restored step " + step + ", " : "", n, n == 1 ? "" : "s", (System.nanoTime() - t0) / 1e9));
                    if (w.isAlive()) return w;
                } catch (WorkerProcess.DiedException e) {
                    // died while restoring: the loop counts it as a death without progress
                }
            }
        }
    }

    private int restoreKernels(WorkerProcess w) throws WorkerProcess.DiedException {
        int n = 0;
        List<RemoteKernel> all;
        synchronized (live) { all = new ArrayList<>(live.values()); }
        for (RemoteKernel k : all) {
            try {
                Protocol.Reader r = w.call(Protocol.COMPILE, compileBody(k), options.requestTimeout()).reader();
                List<TensorSpec> in = r.specs(), out = r.specs();
                if (!in.equals(k.inputs()) || !out.equals(k.outputs())) throw new WorkerException("[worker] kernel " + k.id() + " compiled to other inputs/outputs");
                n++;
            } catch (WorkerProcess.DiedException e) {
                throw e;
            } catch (WorkerException e) {
                live.remove(k.id());
                options.log().accept("[worker] kernel " + k.id() + " could not be recompiled after a restart and was dropped: " + e.getMessage());
            } catch (TimeoutException e) {
                w.kill();
                throw new WorkerProcess.DiedException("did not recompile kernel " + k.id() + " within " + options.requestTimeout().toSeconds() + " s");
            }
        }
        return n;
    }

    private void giveUp(String cause) {
        int deaths = streak;
        streak = 0;
        CarriedRun s = training;
        String where = s != null && s.isActive() ? " at step " + (s.maxStep() + 1) : "";
        String hint = cause.contains("compile budget")
                ? "; the budget cannot hold the live kernels plus one training update: raise it with " + options.hints().compileBudget()
                : cause.contains("ran out of heap") ? "; give the worker more heap with " + options.hints().heap() : "";
        String msg = "[worker] gave up after " + deaths + " restarts without progress" + where + " (the worker " + cause + " each time)" + hint;
        if (s != null && s.isActive()) s.finish(RunState.FAILED, msg);
        throw new WorkerException(msg);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private final class Events implements WorkerProcess.Events {
        @Override
        public void onEvent(WorkerProcess w, Protocol.Frame f) {
            CarriedRun s = training;
            if (s == null || !s.owns(f.id(), w)) return;
            Protocol.Reader r = f.reader();
            switch (f.type()) {
                case Protocol.STEP -> { if (s.onStep(Protocol.step(r))) w.madeProgress = true; }
                case Protocol.MESSAGE -> s.onMessage(r.str());
                case Protocol.PROGRESS -> s.onSetup(Protocol.progress(r));
                case Protocol.TRAIN_END -> {
                    int kind = r.i32();
                    String msg = r.str();
                    s.finish(kind == Protocol.END_DONE ? RunState.FINISHED : kind == Protocol.END_STOPPED ? RunState.STOPPED : RunState.FAILED, msg);
                }
                default -> options.log().accept("[worker] unexpected frame type " + f.type() + " from the worker");
            }
        }

        @Override
        public void onDeath(WorkerProcess w, String cause) {
            CarriedRun s = training;
            if (closed || s == null || !s.isActive() || s.worker != w) return;
            // nobody may be waiting on a request: restart here so training continues
            Thread.ofPlatform().daemon().name("ane4j-supervisor-restart").start(() -> {
                try {
                    ensureWorker();
                } catch (RuntimeException e) {
                    s.finish(RunState.FAILED, e.getMessage());
                }
            });
        }
    }

    // -----------------------------------------------------------------------------------------------------------------

    /** The worker's pid, or -1 when none runs. */
    public long workerPid() {
        WorkerProcess w = worker;
        return w != null && w.isAlive() ? w.pid : -1;
    }

    public Status status() {
        WorkerProcess w = worker;
        CarriedRun s = training;
        int kernels = live.size();
        RunState ts = s == null ? null : s.state;
        if (w != null && w.isAlive()) {
            try {
                Protocol.Reader r = w.call(Protocol.STATUS, new byte[0], Duration.ofSeconds(30)).reader();
                return new Status(true, w.pid, r.str(), r.i64(), r.i64(), restarts, kernels, ts);
            } catch (WorkerException | TimeoutException e) {
                // fall through: report what is known
            }
        }
        return new Status(false, -1, w == null ? null : w.backend, -1, w == null ? -1 : w.compileBudget, restarts, kernels, ts);
    }

    /** Stops training (checkpointing it), shuts the worker down, and deletes the shared files. */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        WorkerProcess w = worker;
        if (w != null && w.isAlive()) {
            try {
                w.call(Protocol.SHUTDOWN, new byte[0], Duration.ofSeconds(60));
            } catch (WorkerException | TimeoutException e) {
                // killed below
            }
            try {
                if (!w.process.waitFor(10, TimeUnit.SECONDS)) w.kill();
            } catch (InterruptedException e) {
                w.kill();
                Thread.currentThread().interrupt();
            }
        }
        CarriedRun s = training;
        if (s != null) s.finish(RunState.STOPPED, "");
        shared.close();
        try {
            Runtime.getRuntime().removeShutdownHook(cleanup);
        } catch (IllegalStateException e) {
            // already shutting down: the hook runs anyway
        }
    }

    // -----------------------------------------------------------------------------------------------------------------

    /**
     * The training run this supervisor carries across worker restarts: what a new worker needs to take it up (its
     * description, placed in its worker, and the stop flag), which worker and request carry it now, and what keeps its events whole
     * across restarts — the first loss of recent steps, to check and drop the steps a restarted worker runs again, and
     * the setup notes already said. Events go to the run's listener in order on one thread.
     */
    private static final class CarriedRun {
        private static final int REPLAY_WINDOW = 4096;
        final RunSpec run;
        final TrainOptions options;
        final StopFlag stop;
        private final TrainingEvents events;
        private final RunFolder folder;
        // the first loss of each recent step; replays start at the last checkpoint, so checkpointEvery steps back (or
        // REPLAY_WINDOW) is enough
        private final TreeMap<Long, Float> firstLoss = new TreeMap<>();
        private final java.util.Set<String> said = java.util.concurrent.ConcurrentHashMap.newKeySet();
        private final java.util.concurrent.ExecutorService delivery =
                java.util.concurrent.Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("ane4j-train-events").factory());
        volatile RunState state = RunState.RUNNING;
        volatile String error;
        volatile WorkerProcess worker;
        volatile int attachments;
        volatile long compiles;   // what starting the run in its current worker compiled there
        private volatile int requestId = -1;
        private long maxStep = -1;

        CarriedRun(RunSpec run, TrainingEvents events, StopFlag stop, RunFolder folder) {
            this.run = run;
            this.options = run.train();
            this.events = events;
            this.stop = stop;
            this.folder = folder;
        }

        boolean isActive() { return state == RunState.RUNNING; }

        void attach(WorkerProcess w, int id) {
            worker = w;
            requestId = id;
            attachments++;
        }

        boolean owns(int id, WorkerProcess w) { return id == requestId && w == worker; }

        synchronized long maxStep() { return maxStep; }

        /** A step from the worker; true when it is new (not a replay after a restart). */
        boolean onStep(StepMetrics m) {
            Float first;
            synchronized (this) {
                first = firstLoss.get(m.step());
                if (first == null && m.step() <= maxStep - replayWindow()) return false;   // older than any replay: seen before
                if (first == null) {
                    firstLoss.put(m.step(), m.loss());
                    maxStep = Math.max(maxStep, m.step());
                    while (firstLoss.firstKey() <= maxStep - replayWindow()) firstLoss.pollFirstEntry();
                }
            }
            if (first == null) {
                deliver(() -> events.onStep(m));
                return true;
            }
            if (Float.floatToRawIntBits(first) != Float.floatToRawIntBits(m.loss()))
                onMessage("[worker] step " + m.step() + " replayed after a restart gave loss " + m.loss() + ", the first run " + first + ": the run is not deterministic");
            return false;
        }

        /**
         * The worker always starts training with {@code resume = true}: its "resumed from"/"no checkpoint" line is news only
         * when the run asked for a resume, and only the first time (a restart says it in its own line). A restarted worker
         * sets the run up again: the notes of that setup (e.g. "[eval] validation loss every …") were said at the start.
         */
        void onMessage(String line) {
            boolean resumeLine = line.startsWith("[train] resumed from step") || line.startsWith("[train] no checkpoint in");
            boolean hidden = resumeLine ? attachments > 1 || !options.resume() : !said.add(line) && attachments > 1;
            if (!hidden) deliver(() -> events.onMessage(line));
        }

        /** Setup progress of the run's first start (a restart sets up again: that is told by its restart line). */
        void onSetup(ane4j.run.SetupProgress p) {
            if (attachments <= 1) deliver(() -> events.onSetup(p));
        }

        synchronized void finish(RunState s, String message) {
            if (state != RunState.RUNNING) return;
            error = s == RunState.FAILED ? message : null;
            state = s;
            folder.close();
            deliver(() -> events.onEnd(s, message));   // after every step delivered before it
            delivery.shutdown();
        }

        private long replayWindow() { return Math.max(REPLAY_WINDOW, 2L * options.checkpointEvery()); }

        private void deliver(Runnable r) {
            try {
                delivery.execute(r);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // the run has ended; late events are dropped
            }
        }
    }
}
