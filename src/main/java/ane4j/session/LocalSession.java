package ane4j.session;

import ane4j.run.RunSpec;
import ane4j.backend.Backend;
import ane4j.backend.Backends;
import ane4j.backend.CompileBudgetExceededException;
import ane4j.backend.Kernel;
import ane4j.mil.Dialect;
import ane4j.mil.Program;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.Tokenizer;
import ane4j.run.SetupProgress;
import ane4j.run.StopFlag;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import ane4j.run.StepMetrics;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * A session in the notebook's own JVM on {@link Backends#select()}. When a training run reaches its compile budget
 * (static weights recompile after every update), the backend is replaced in-process and the run resumes from the
 * checkpoint written at that step, so the numbers are the same as without the restart.
 */
public final class LocalSession implements Session {
    private final Backend backend;

    /** On the backend {@link Backends} chooses ({@code -Dane4j.backend}, {@code ANE4J_BACKEND}, else automatic), without its log line. */
    public LocalSession() {
        this(Backends.choose(System.getProperty(Backends.PROPERTY), System.getenv(Backends.ENV),
                System.getProperty("os.name", ""), System.getProperty("os.arch", "")).backend());
    }

    public LocalSession(Backend backend) {
        this.backend = backend;
    }

    public Backend backend() {
        return backend;
    }

    @Override
    public Kernel compile(Program program) {
        return backend.compile(program);
    }

    @Override
    public Training train(RunSpec run, Trainer.Listener listener, StopFlag stop) {
        return new LocalTraining(run, listener, stop);
    }

    @Override
    public Status status() {
        return new Status(backend.name(), chip(), Dialect.fromProperty(Dialect.IOS18).name().toLowerCase(Locale.ROOT),
                backend.compileCount(), backend.compileBudget(), "none: in-process session (backend in this JVM)");
    }

    @Override
    public String backendName() {
        return backend.name();
    }

    @Override
    public void close() {}

    /** The Apple chip (macOS), else "none" with the OS and architecture. */
    public static String chip() {
        String os = System.getProperty("os.name", ""), arch = System.getProperty("os.arch", "");
        if (os.toLowerCase(Locale.ROOT).startsWith("mac")) {
            try {
                Process p = new ProcessBuilder("sysctl", "-n", "machdep.cpu.brand_string").redirectErrorStream(true).start();
                String s = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
                if (p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 0 && !s.isEmpty()) return s;
            } catch (IOException e) {
                return "unknown (" + arch + ")";
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return "none (" + os + " " + arch + ")";
    }

    /** A run in this JVM; replaces the backend when it reaches its compile budget. */
    static final class LocalTraining implements Training {
        private final RunSpec run;
        private final TrainOptions options;
        private final Trainer.Listener listener;
        private final StopFlag stop;    // the run's, served by each trainer in turn
        private volatile Trainer trainer;
        private Backend backend;
        private int restarts;

        LocalTraining(RunSpec run, Trainer.Listener listener, StopFlag stop) {
            this.run = run;
            this.options = run.train();
            this.listener = listener != null ? listener : m -> {};
            this.stop = stop;
            this.backend = run.newBackend();
            this.trainer = start(options, backend, false);
        }

        private final java.util.Set<String> said = java.util.concurrent.ConcurrentHashMap.newKeySet();

        private Trainer start(TrainOptions o, Backend b, boolean restarting) {
            // a restart reports itself in one line: the trainer's own "resumed from" note is left out
            Trainer.Listener quiet = new Trainer.Listener() {
                @Override public void onStep(StepMetrics m) { listener.onStep(m); }

                @Override public void onMessage(String line) {
                    if (restarting && (line.startsWith("[train] resumed from") || said.contains(line))) return;
                    said.add(line);   // a restart sets the run up again: its setup notes were said at the start
                    listener.onMessage(line);
                }
            };
            try {
                // the first start tells its compiles to the listener (a restart says what it did in one line); run.json
                // records that it ran here (a session of this JVM is in process whatever the spec said)
                java.util.Map<String, String> placement = run.with("inProcess", "true").placement();
                return (restarting ? new Trainer(o, b, quiet, true, placement)
                        : SetupProgress.reporting(listener::onSetup, () -> new Trainer(o, b, quiet, true, placement))).stopOn(stop);
            } catch (CompileBudgetExceededException e) {
                throw new IllegalArgumentException("[train] compileBudget " + b.compileBudget() + " is too small: setting up the "
                        + o.weights() + "-weights kernels alone needs more compiles; raise compileBudget", e);
            }
        }

        @Override
        public List<StepMetrics> run() {
            ane4j.run.StepHistory out = new ane4j.run.StepHistory();
            Trainer.Listener l = new Trainer.Listener() {
                @Override public void onStep(StepMetrics m) {
                    out.add(m);
                    listener.onStep(m);
                }

                @Override public void onMessage(String line) {
                    listener.onMessage(line);
                }
            };
            while (!finished()) {
                long before = trainer.stepCount();
                try {
                    trainer.run(l);
                    break;   // the last step, or a stop served with its checkpoint
                } catch (CompileBudgetExceededException e) {
                    restart(e, before);
                }
            }
            return out.list();
        }

        /** The step that hit the budget is counted and its update applied: checkpoint it, start a new backend, resume. */
        private void restart(CompileBudgetExceededException e, long historyBefore) {
            long t0 = System.nanoTime();
            long step = trainer.nextStep();
            if (step >= totalSteps()) return;   // the last step's checkpoint is written; no more kernels are needed
            if (trainer.stepCount() == historyBefore)
                throw new IllegalStateException("[train] compileBudget " + e.budget() + " is reached before one step completes; raise compileBudget", e);
            float last = trainer.lastStep().loss();
            trainer.saveCheckpoint(last);
            trainer.close();
            restarts++;
            backend = run.newBackend();
            trainer = start(options.resuming(), backend, true);
            listener.onMessage(String.format(Locale.ROOT, "backend restarted: compile budget %d reached — restored step %d, kernels recompiled in %.1f s (in-process session, restart %d)",
                    e.budget(), step, (System.nanoTime() - t0) / 1e9, restarts));
        }

        @Override public void requestStop() { stop.request(); }

        @Override public long stepsDone() { return trainer.nextStep(); }

        @Override public long totalSteps() { return options.steps(); }

        @Override public ModelConfig config() { return trainer.config(); }

        /** The current weights; with LoRA, the base with the adapters fused in. */
        @Override public Parameters parameters() { return trainer.adapters() != null ? trainer.adapters().fused(trainer.parameters()) : trainer.parameters(); }

        @Override public ane4j.train.LoraAdapters adapters() { return trainer.adapters(); }

        @Override public Parameters baseParameters() { return trainer.parameters(); }

        @Override public Tokenizer tokenizer() { return trainer.tokenizer(); }

        @Override public Path runDir() { return options.runDir(); }

        @Override public int restarts() { return restarts; }

        @Override
        public Path checkpoint() {
            if (trainer.lastStep() == null) return trainer.lastCheckpoint();
            return trainer.saveCheckpoint(trainer.lastStep().loss());
        }

        private boolean closed;

        /** Closes the trainer once (a run closes it when it finishes; its owner may close it again). */
        @Override public synchronized void close() {
            if (closed) return;
            closed = true;
            trainer.close();
        }
    }
}
