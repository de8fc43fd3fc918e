package ane4j.worker;

import ane4j.run.StepMetrics;
import ane4j.backend.Backend;
import ane4j.backend.Backends;
import ane4j.backend.CompileBudgetExceededException;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.mil.MilParser;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.run.RunFolder;
import ane4j.run.RunSpec;
import ane4j.run.SetupProgress;
import ane4j.run.StopFlag;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The worker JVM: owns one {@link Backend}, the compiled kernels and the training run, and serves the supervisor's
 * requests on stdin/stdout ({@code package-info}). Its backend is built from the supervisor's first frame ({@code
 * START}); requests are handled one at a time on the main thread; training runs on its own thread through {@code
 * Trainer.run}, stopped by the run's stop flag (set by {@code STOP_TRAINING}) at an update boundary with a checkpoint.
 */
public final class WorkerMain {
    /** Test hook: halt (as if killed) when training is about to run this step. */
    static final String HALT_AT_STEP_PROPERTY = "ane4j.worker.haltAtStep";

    private final Backend backend;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final Map<Integer, Kernel> kernels = new HashMap<>();
    private final Map<Long, Mapping> regions = new HashMap<>();
    private final long haltAtStep = Long.getLong(HALT_AT_STEP_PROPERTY, -1);
    private volatile Trainer trainer;   // of the run in progress, or null
    private Thread trainThread;
    private volatile Thread trainEnding;   // a training thread past its last step: it only closes and sends TRAIN_END
    private volatile StopFlag trainStop = new StopFlag();   // the run's stop flag in this JVM: STOP_TRAINING sets it, the trainer serves it
    private volatile boolean exitAfterTraining;   // the compile budget is spent: the run stops for a restart, not for good
    private volatile TrainOptions trainOptions;   // of the run started last

    private record Mapping(Arena arena, MemorySegment segment) {}

    private WorkerMain(Backend backend, DataInputStream in, DataOutputStream out) {
        this.backend = backend;
        this.in = in;
        this.out = out;
    }

    public static void main(String[] args) {
        // frames own the real stdout; anything else printed goes to stderr, which the supervisor forwards
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16));
        PrintStream err = System.err;
        System.setOut(err);
        DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(FileDescriptor.in), 1 << 16));
        Backend backend;
        try {
            backend = backend(in);
        } catch (RuntimeException | IOException e) {
            err.println(e.getMessage());
            err.flush();
            Runtime.getRuntime().halt(ExitCode.FAILED.code);
            return;
        }
        WorkerMain worker = new WorkerMain(backend, in, out);
        worker.handleSignals();
        worker.serve();
    }

    /** The backend the supervisor's first frame ({@link Protocol#START}) describes; no system property is read for it. */
    private static Backend backend(DataInputStream in) throws IOException {
        Protocol.Frame f = Protocol.read(in);
        if (f == null) throw new IOException("[worker] the supervisor closed the pipe before sending the backend's settings");
        if (f.type() != Protocol.START) throw new IllegalStateException("[worker] the first frame is of type " + f.type() + ", not the backend's settings");
        Protocol.Reader r = f.reader();
        String choice = r.str();
        boolean fp32 = r.i32() != 0;
        long budget = r.i64();
        Backends.Selection s = Backends.create(new Backends.Settings(choice.isEmpty() ? null : choice, fp32, budget < 0 ? null : budget));
        System.getLogger("ane4j.backend").log(System.Logger.Level.INFO, "[backend] using " + s.backend().name() + " — " + s.reason());
        return s.backend();
    }

    /**
     * Ctrl-C in a terminal goes to the whole process group, this worker included: the launcher decides what it means
     * (a stop at the next step boundary, asked for over the channel), so the worker ignores SIGINT. SIGTERM sent to
     * the worker itself checkpoints training at the next step boundary and exits. sun.misc.Signal (jdk.unsupported)
     * is the one accessible way to replace the JVM's handlers (jdk.internal.misc.Signal is not exported); a shutdown
     * hook could not keep the JVM alive for the step to finish.
     */
    @SuppressWarnings("removal")
    private void handleSignals() {
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("INT"), sig -> {});
            sun.misc.Signal.handle(new sun.misc.Signal("TERM"), sig -> {
                stopTraining();
                halt(ExitCode.DONE);
            });
        } catch (IllegalArgumentException e) {
            // a platform without these signals (or -Xrs): the JVM's defaults stay
        }
    }

    private void serve() {
        send(0, Protocol.READY, new Protocol.Writer().i64(ProcessHandle.current().pid()).str(backend.name()).i64(backend.compileBudget()).bytes());
        while (true) {
            Protocol.Frame f;
            try {
                f = Protocol.read(in);
            } catch (IOException e) {
                f = null;
            }
            if (f == null) {
                // the parent is gone, and with it the run folder's lock: take the folder over to checkpoint training at
                // the next step boundary, unless another run has taken it already (then leave its folder alone)
                if (takeOverRunFolder()) stopTraining();
                halt(ExitCode.ORPHANED);
            }
            try {
                handle(f);
            } catch (CompileBudgetExceededException e) {
                exitForBudget(e);
            } catch (RuntimeException | Error e) {
                send(f.id(), Protocol.ERROR, new Protocol.Writer().str(message(e)).bytes());
            }
        }
    }

    private void handle(Protocol.Frame f) {
        Protocol.Reader r = f.reader();
        switch (f.type()) {
            case Protocol.COMPILE -> {
                int id = r.i32();
                String function = r.str(), text = r.str(), modelDir = r.str();
                Program p = modelDir.isEmpty() ? MilParser.parse(text) : MilParser.parse(text, Path.of(modelDir));
                Kernel k = backend.compile(p, function.isEmpty() ? p.main().name() : function);
                Kernel old = kernels.put(id, k);
                if (old != null) old.close();
                reply(f, new Protocol.Writer().specs(k.inputs()).specs(k.outputs()).i64(backend.compileCount()));
            }
            case Protocol.EVALUATE -> {
                Kernel k = kernel(r.i32());
                Map<String, TensorBuffer> ins = buffers(r), outs = buffers(r);
                long t0 = System.nanoTime();
                k.evaluate(ins, outs);
                reply(f, new Protocol.Writer().i64(System.nanoTime() - t0));
            }
            case Protocol.RELEASE_KERNEL -> {
                Kernel k = kernels.remove(r.i32());
                if (k != null) k.close();
                reply(f, new Protocol.Writer());
            }
            case Protocol.RELEASE_REGION -> {
                Mapping m = regions.remove(r.i64());
                if (m != null) m.arena().close();
                reply(f, new Protocol.Writer());
            }
            case Protocol.TRAIN -> {
                // the whole run description: its training keys, then where and how it runs
                Map<String, String> keys = new LinkedHashMap<>(r.map());
                if (r.hasMore()) keys.putAll(r.map());
                startTraining(f, RunSpec.of(keys));
            }
            case Protocol.WARM_UP -> {
                // what the default run reads first is drawn while the user reads the notebook (the run waits for it)
                Thread.ofPlatform().daemon().name("ane4j-warm-up").start(() -> {
                    try {
                        Trainer.warmUp();
                    } catch (RuntimeException e) {
                        // the run draws it itself and reports any problem
                    }
                });
                reply(f, new Protocol.Writer());
            }
            case Protocol.STOP_TRAINING -> {
                trainStop.request();
                reply(f, new Protocol.Writer());
            }
            case Protocol.STATUS -> {
                Trainer t = trainer;
                long step = t == null ? -1 : t.nextStep();
                reply(f, new Protocol.Writer().str(backend.name()).i64(backend.compileCount()).i64(backend.compileBudget()).i32(kernels.size()).i64(step));
            }
            case Protocol.SHUTDOWN -> {
                stopTraining();
                reply(f, new Protocol.Writer());
                halt(ExitCode.DONE);
            }
            default -> throw new IllegalArgumentException("[worker] unknown request type " + f.type());
        }
    }

    private Kernel kernel(int id) {
        Kernel k = kernels.get(id);
        if (k == null) throw new IllegalStateException("[worker] no kernel " + id + " in this worker (it was released)");
        return k;
    }

    /** {@code u32 n, n × (name, region id, path, region size, offset, type)}: views of the shared files. */
    private Map<String, TensorBuffer> buffers(Protocol.Reader r) {
        int n = r.i32();
        Map<String, TensorBuffer> m = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            String name = r.str();
            long region = r.i64();
            String path = r.str();
            long size = r.i64(), offset = r.i64();
            TensorType type = r.type();
            MemorySegment seg = map(region, path, size);
            m.put(name, TensorBuffer.wrap(seg.asSlice(offset, type.byteSize()), type));
        }
        return m;
    }

    private MemorySegment map(long region, String path, long size) {
        Mapping m = regions.get(region);
        if (m == null) {
            Arena arena = Arena.ofShared();
            try (FileChannel ch = FileChannel.open(Path.of(path), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                m = new Mapping(arena, ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena));
            } catch (IOException e) {
                arena.close();
                throw new IllegalStateException("[worker] cannot map the shared tensor file " + path + ": " + RunFolder.reason(e), e);
            }
            regions.put(region, m);
        }
        return m.segment();
    }

    // -----------------------------------------------------------------------------------------------------------------
    // training

    private void startTraining(Protocol.Frame f, RunSpec spec) {
        TrainOptions o = spec.train();
        Thread previous = trainThread;
        // the parent may send TRAIN as soon as it has TRAIN_END, while that thread is still returning
        if (previous != null && previous.isAlive() && previous == trainEnding) {
            try {
                previous.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (previous != null && previous.isAlive())
            throw new IllegalStateException("[worker] a training run is already in progress");
        if (o.backend() != null && !o.backend().equals(backend.name()))
            throw new IllegalArgumentException("[train] backend = " + o.backend() + " but the worker runs " + backend.name() + "; set Supervisor.Options.backend");
        if (spec.compileBudget() != null && spec.compileBudget() != backend.compileBudget())
            throw new IllegalArgumentException("[train] compileBudget = " + spec.compileBudget() + " but the worker's backend has " + backend.compileBudget()
                    + "; set Supervisor.Options.compileBudget");
        int id = f.id();
        Trainer.Listener listener = new Trainer.Listener() {
            @Override public void onStep(StepMetrics m) { send(id, Protocol.STEP, Protocol.step(m)); }

            @Override public void onMessage(String line) { send(id, Protocol.MESSAGE, new Protocol.Writer().str(line).bytes()); }

            @Override public void onSetup(SetupProgress p) { send(id, Protocol.PROGRESS, Protocol.progress(p)); }
        };
        StopFlag stop = new StopFlag();
        trainStop = stop;
        trainOptions = o;
        // the supervisor in the user's JVM holds the run folder's lock; a budget exception here leaves the last checkpoint as it was
        Trainer t = SetupProgress.reporting(listener::onSetup, () -> new Trainer(o, backend, listener, false, spec.placement())).stopOn(stop);
        trainer = t;
        reply(f, new Protocol.Writer().i64(t.nextStep()));
        trainThread = Thread.ofPlatform().name("ane4j-train").start(() -> train(id, t, o, listener));
    }

    private void train(int id, Trainer t, TrainOptions o, Trainer.Listener listener) {
        byte end = Protocol.END_DONE;
        String msg = "";
        try {
            boolean hookRan = false;
            if (haltAtStep >= 0 && t.nextStep() <= haltAtStep) {   // the test hook: halt as if killed just before that step
                if (t.nextStep() < haltAtStep) t.run(listener, haltAtStep - t.nextStep());
                if (t.nextStep() == haltAtStep) halt(ExitCode.FAILED);
                hookRan = true;   // it ended before that step: the last step, or a stop served
            }
            // to the last step, or to a stop served where the gradients are zero (after an update) with its checkpoint
            if (!hookRan) t.run(listener);
            if (t.nextStep() < o.steps()) end = Protocol.END_STOPPED;
        } catch (CompileBudgetExceededException e) {
            exitForBudget(e);
        } catch (RuntimeException | Error e) {
            end = Protocol.END_FAILED;
            msg = message(e);
        } finally {
            trainEnding = Thread.currentThread();
            if (trainer == t) trainer = null;
            t.close();
        }
        if (!exitAfterTraining) send(id, Protocol.TRAIN_END, new Protocol.Writer().i32(end).str(msg).bytes());
    }

    private static float lastLoss(Trainer t) {
        return t.lastStep() == null ? Float.NaN : t.lastStep().loss();
    }

    /** True when no run is training, or this worker now holds the run folder of the one that is. */
    private boolean takeOverRunFolder() {
        TrainOptions o = trainOptions;
        Thread t = trainThread;
        if (o == null || t == null || !t.isAlive()) return true;
        try {
            RunFolder.lock(o.runDir(), "ane4j worker " + ProcessHandle.current().pid() + " writing the last checkpoint of its launcher, which died");
            return true;   // held until this process halts
        } catch (RuntimeException e) {
            System.err.println("[worker] the launcher died and " + o.runDir() + " is in use by another run now: " + e.getMessage() + "; stopping without a checkpoint");
            return false;
        }
    }

    /** Asks the training thread to checkpoint and stop at the next step boundary, and waits for it. */
    private void stopTraining() {
        trainStop.request();
        Thread t = trainThread;
        if (t != null) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * The compile budget is spent: checkpoint training in flight and exit for a restart. On the training thread the
     * trainer is at a step boundary (the update applied, the step counted); on the request thread (a kernel's compile)
     * the run's trainer serves a stop at its next update boundary first, and the run is resumed, not ended.
     */
    private void exitForBudget(CompileBudgetExceededException e) {
        Thread training = trainThread;
        if (training != null && training.isAlive() && Thread.currentThread() != training) {
            exitAfterTraining = true;
            stopTraining();
        } else {
            Trainer t = trainer;
            if (t != null) t.saveCheckpoint(lastLoss(t));
        }
        send(0, Protocol.EXITING, new Protocol.Writer().i32(ExitCode.RESTART_BUDGET.code).str("compile budget " + e.budget() + " reached").bytes());
        halt(ExitCode.RESTART_BUDGET);
    }

    // -----------------------------------------------------------------------------------------------------------------

    private void reply(Protocol.Frame f, Protocol.Writer body) { send(f.id(), Protocol.OK, body.bytes()); }

    private void send(int id, byte type, byte[] body) {
        synchronized (out) {
            try {
                Protocol.write(out, id, type, body);
            } catch (IOException e) {
                // the parent is gone; the read loop sees end of stream and exits
            }
        }
    }

    private void halt(ExitCode code) {
        synchronized (out) {
            try {
                out.flush();
            } catch (IOException ignored) {
                // nothing to tell a parent that is gone
            }
        }
        System.err.flush();
        Runtime.getRuntime().halt(code.code);
    }

    private static String message(Throwable e) {
        String m = e.getMessage();
        if (m == null || m.isBlank()) m = e.toString();
        return m.startsWith("[") ? m : "[worker] " + e.getClass().getSimpleName() + ": " + m;
    }
}
