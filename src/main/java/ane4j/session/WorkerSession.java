package ane4j.session;

import ane4j.run.RunSpec;
import ane4j.backend.Kernel;
import ane4j.mil.Dialect;
import ane4j.mil.Program;
import ane4j.model.EmbeddedCorpus;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.Parameters;
import ane4j.model.Tokenizer;
import ane4j.train.Checkpoint;
import ane4j.run.SetupProgress;
import ane4j.run.StopFlag;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import ane4j.run.StepMetrics;
import ane4j.worker.Supervisor;
import ane4j.worker.WorkerException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;

/**
 * A session on the supervised worker ({@link Supervisor}): kernels compile and run in a child JVM, and so does
 * training, so a compile-budget restart, a native crash or a killed worker costs the notebook one printed line
 * ({@code worker restarted: …}) and nothing else.
 * <p>
 * Kernels live in the session's own worker. A training run uses that worker too when it fits its settings (backend,
 * reference storage, no compile budget of its own); otherwise it gets a worker of its own with those settings, closed
 * when the run ends. Runs resume after a stop from the checkpoint the worker writes when it stops; {@link
 * Training#parameters()} (and so {@code %generate}) reads the newest checkpoint of the run. A stop reaches the worker's
 * trainer through the pipe, so a run may take one more step after it is asked to stop.
 */
public final class WorkerSession implements Session {
    private final Supervisor.Options options;
    private final Consumer<String> log;
    private final Supervisor main;
    private final List<WorkerTraining> runs = new ArrayList<>();   // the current run and runs with a worker of their own; guarded by itself
    private volatile WorkerTraining trainingInMain;
    private volatile boolean closed;

    /** A worker with {@link Supervisor.Options#defaults()}; restart lines go to {@code System.out}, worker warnings to {@code System.err}. */
    public WorkerSession() {
        this(Supervisor.Options.defaults().withLog(WorkerSession::print));
    }

    /** A worker with these options; its log lines go to {@code options.log()}, restart lines of a training run to the run. */
    public WorkerSession(Supervisor.Options options) {
        this.options = options;
        this.log = options.log();
        this.main = new Supervisor(options.withLog(line -> route(line, trainingInMain)));
    }

    /**
     * Restart notices on stdout (they belong in the cell's output), the worker's warnings and errors on stderr; its
     * INFO lines (backend and BLAS chosen, at every start) are left out: {@code %ane} shows the backend.
     */
    public static void print(String line) {
        if (isRestart(line)) System.out.println(line);
        else if (!line.startsWith("INFO: ")) System.err.println(line);
    }

    public static boolean isRestart(String line) {
        return line.startsWith("worker restarted");
    }

    private void route(String line, WorkerTraining run) {
        if (run != null && run.active() && isRestart(line)) run.message(line);
        else log.accept(line);
    }

    /** The session's worker (kernels, and training runs that fit it). */
    public Supervisor supervisor() {
        return main;
    }

    @Override
    public Kernel compile(Program program) {
        return main.compile(program);
    }

    @Override
    public Training train(RunSpec run, Trainer.Listener listener, StopFlag stop) {
        if (closed) throw new IllegalStateException("[worker] the session is closed");
        WorkerTraining t = new WorkerTraining(run, listener, stop);
        List<WorkerTraining> earlier;
        synchronized (runs) {
            earlier = new ArrayList<>(runs);
            runs.removeIf(r -> !r.active());
            runs.add(t);
        }
        // a stopped earlier run keeps no idle worker (a resume starts a new one), and the session forgets it
        for (WorkerTraining r : earlier) if (!r.active()) r.releaseWorker();
        return t;
    }

    /** Starts the worker when it is not running yet, so the status shows its pid. */
    @Override
    public Status status() {
        String startError = null;
        try {
            if (main.workerPid() < 0) main.start();
        } catch (RuntimeException e) {
            startError = e.getMessage();
        }
        Supervisor.Status s = main.status();
        String backend = s.backend() != null ? s.backend() : options.backend() != null ? options.backend() : "auto";
        StringBuilder w = new StringBuilder();
        if (s.running()) w.append("supervised JVM, pid ").append(s.workerPid());
        else w.append("not running").append(startError != null ? " (" + startError + ")" : " (starts with the next request)");
        w.append(" · restarts ").append(s.restarts()).append(" · ").append(s.liveKernels()).append(s.liveKernels() == 1 ? " kernel" : " kernels");
        WorkerTraining t = activeRun();
        if (t != null && t.own != null) w.append(" · training run in its own worker: ").append(t.describeWorker());
        long budget = s.compileBudget() < 0 ? Long.MAX_VALUE : s.compileBudget();
        return new Status(backend, LocalSession.chip(), Dialect.fromProperty(Dialect.IOS18).name().toLowerCase(Locale.ROOT),
                Math.max(0, s.compileCount()), budget, w.toString());
    }

    @Override
    public String backendName() {
        return mainBackend();
    }

    private WorkerTraining activeRun() {
        synchronized (runs) {
            for (WorkerTraining r : runs.reversed()) if (r.active()) return r;
            return null;
        }
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        List<WorkerTraining> all;
        synchronized (runs) {
            all = new ArrayList<>(runs);
        }
        for (WorkerTraining r : all) r.releaseWorker();
        main.close();
    }

    /** A supervised worker's options for the run: backend, reference storage, compile budget, heap (sent on the pipe at its start). */
    public static Supervisor.Options workerOptions(RunSpec run, Supervisor.Options base) {
        Supervisor.Options o = base.withRefStorage(run.train().storage());
        if (run.train().backend() != null) o = o.withBackend(run.train().backend());
        if (run.compileBudget() != null) o = o.withCompileBudget(run.compileBudget());
        if (run.heap() != null) o = o.withHeap(run.heap());
        return o;
    }

    /** The run's settings the worker is started with: backend, compile budget, reference storage, heap. */
    private boolean fitsMain(RunSpec run) {
        TrainOptions o = run.train();
        if (run.compileBudget() != null && !run.compileBudget().equals(options.compileBudget())) return false;
        if (run.heap() != null && !run.heap().equals(options.heap())) return false;
        String b = mainBackend();
        if (o.backend() != null && !o.backend().equals(b)) return false;
        if (!"ref".equals(b)) return true;
        String storage = options.refStorage() != null ? options.refStorage() : System.getProperty(ane4j.backend.Backends.REF_STORAGE_PROPERTY, "fp16").strip();
        return storage.equals(o.storage());
    }

    private String mainBackend() {
        if (main.workerPid() < 0) main.start();
        return main.status().backend();
    }

    /** A training run in a worker: the session's, or one of its own. */
    final class WorkerTraining implements Training {
        private final RunSpec run;
        private final TrainOptions options;
        private final Long budget;
        private final Trainer.Listener listener;
        private final StopFlag stop;              // the run's: the supervisor sends it on to the worker's trainer
        private volatile Supervisor own;          // the run's own worker, or null
        private volatile Supervisor used;         // the worker of the last run() call
        private volatile boolean running;         // a run() call is in progress in the worker
        private volatile int restartsAtStart;     // the supervisor's restart count when it began
        private volatile boolean started;
        private volatile long done;
        private volatile int restartsBefore;
        private Parameters cached, cachedBase;
        private ane4j.train.LoraAdapters cachedAdapters;
        private Path cachedFrom;

        WorkerTraining(RunSpec run, Trainer.Listener listener, StopFlag stop) {
            this.run = run;
            this.options = run.train();
            this.budget = run.compileBudget();
            this.listener = listener != null ? listener : m -> {};
            this.stop = stop;
        }

        boolean active() {
            return running;
        }

        void message(String line) {
            listener.onMessage(line);
        }

        private synchronized Supervisor supervisor() {
            if (fitsMain(run)) return main;
            if (own == null) {
                own = new Supervisor(workerOptions(run, WorkerSession.this.options.withLog(line -> route(line, this))));
                synchronized (runs) {
                    if (!runs.contains(this)) runs.add(this);   // closed with the session
                }
            }
            return own;
        }

        synchronized void releaseWorker() {
            Supervisor s = own;
            own = null;
            if (s != null) s.close();
        }

        String describeWorker() {
            Supervisor s = own != null ? own : used;
            if (s == null) return "not started";
            Supervisor.Status st = s.status();
            String backend = st.backend() != null ? st.backend() : options.backend() != null ? options.backend() : "auto";
            String b = budget != null ? "compile budget " + budget
                    : st.compileBudget() == Long.MAX_VALUE ? "compile budget unlimited" : st.compileBudget() > 0 ? "compile budget " + st.compileBudget() : "default compile budget";
            return (st.running() ? "pid " + st.workerPid() : "exited") + ", " + backend + ", " + b + ", restarts " + restarts();
        }

        @Override
        public List<StepMetrics> run() {
            ane4j.run.StepHistory out = new ane4j.run.StepHistory();   // bounded (every step is in metrics.jsonl)
            if (finished() || stop.requested()) {
                stop.clear();
                return out.list();
            }
            boolean resuming = started;
            if (main.workerPid() < 0) listener.onSetup(SetupProgress.startingWorker());   // supervisor() starts it to learn its backend
            Supervisor s = supervisor();
            used = s;
            java.util.concurrent.CompletableFuture<Void> end = new java.util.concurrent.CompletableFuture<>();
            Supervisor.TrainingEvents l = new Supervisor.TrainingEvents() {
                @Override public void onStep(StepMetrics m) {
                    out.add(m);
                    done = Math.max(done, m.step() + 1);
                    listener.onStep(m);
                }

                @Override public void onMessage(String line) {
                    // continuing after a stop: the worker's "resumed from" line is no news
                    if (!(resuming && line.startsWith("[train] resumed from step"))) listener.onMessage(line);
                }

                @Override public void onSetup(SetupProgress p) {
                    listener.onSetup(p);
                }

                @Override public void onEnd(ane4j.run.RunState state, String error) {
                    if (state == ane4j.run.RunState.FAILED) end.completeExceptionally(new WorkerException(error));
                    else end.complete(null);
                }
            };
            if (s == main) trainingInMain = this;
            restartsAtStart = s.restarts();
            running = true;
            try {
                s.startTraining(resuming ? run.with("resume", "true") : run, l, stop);
                started = true;
                if (stop.requested()) s.stopTraining(stop);
                end.get();
            } catch (java.util.concurrent.ExecutionException e) {
                throw budgetHint((WorkerException) e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new WorkerException("[worker] interrupted while waiting for training");
            } catch (WorkerException e) {
                throw budgetHint(e);
            } finally {
                restartsBefore += s.restarts() - restartsAtStart;
                running = false;
                stop.clear();   // served by the worker's trainer (or the run ended)
            }
            return out.list();
        }

        /** A run whose own budget cannot hold one step is told so in the run configuration's terms. */
        private RuntimeException budgetHint(WorkerException e) {
            String m = e.getMessage() == null ? "" : e.getMessage();
            var giveUp = java.util.regex.Pattern.compile("gave up after \\d+ restarts without progress( at step \\d+)?").matcher(m);
            if (budget == null || !m.contains("compile budget " + budget + " reached") || !giveUp.find()) return e;
            return new IllegalStateException("[train] compileBudget " + budget + " is too small for the " + options.weights()
                    + "-weights kernels of one step: the worker " + giveUp.group() + "; raise compileBudget", e);
        }

        @Override
        public void requestStop() {
            stop.request();
            Supervisor s = used;
            if (running && s != null) s.stopTraining(stop);
        }

        @Override public long stepsDone() { return done; }

        @Override public long totalSteps() { return options.steps(); }

        /** The model of the newest checkpoint (the worker writes one at the end, at a stop, and every checkpointEvery steps). */
        @Override
        public ModelConfig config() {
            return parameters().config();
        }

        /** The weights of the run's newest valid checkpoint, LoRA adapters fused in (loaded again only when a newer one appears). */
        @Override
        public synchronized Parameters parameters() {
            Path dir = options.runDir().resolve("checkpoints");
            List<Path> all = Checkpoint.list(dir);
            if (!all.isEmpty() && all.getFirst().equals(cachedFrom)) return cached;
            Checkpoint.Contents c = Checkpoint.loadNewestWeights(dir, listener::onMessage);
            if (c == null) throw new IllegalStateException("[train] no checkpoint in " + dir + " yet: the worker writes one at the end of the run, "
                    + "when it is stopped, and every checkpointEvery steps");
            cached = cachedBase = new Parameters(new ParameterLayout(c.state().config()), c.params());
            cachedAdapters = c.lora() != null ? ane4j.train.LoraAdapters.of(cached.config(), options, c.lora()) : null;
            if (cachedAdapters != null) cached = cachedAdapters.fused(cachedBase);   // LoRA: the fused model
            cachedFrom = Checkpoint.pathFor(dir, c.state().step());
            return cached;
        }

        /** The newest checkpoint's LoRA adapters, unmerged (null: not a LoRA run). */
        @Override
        public synchronized ane4j.train.LoraAdapters adapters() {
            parameters();
            return cachedAdapters;
        }

        /** The newest checkpoint's base weights (without the adapters). */
        @Override
        public synchronized Parameters baseParameters() {
            parameters();
            return cachedBase;
        }

        /** The training data's tokenizer, as the worker's trainer found it. */
        @Override
        public Tokenizer tokenizer() {
            if (options.data() == null) return EmbeddedCorpus.tokenizer();
            Path tok = ane4j.model.ModelFiles.findTokenizer(options.tokenizer(), options.data(), options.init());
            return tok != null ? Tokenizer.read(tok) : null;
        }

        @Override public Path runDir() { return options.runDir(); }

        /** The worker writes a checkpoint when it stops and at the end; the newest readable one. */
        @Override
        public Path checkpoint() {
            Checkpoint.Found found = Checkpoint.findNewestWeights(options.runDir().resolve("checkpoints"));   // not the moments: 2.4 of qwen3-0.6b's 7.15 GB
            found.unreadable().values().forEach(why -> listener.onMessage("[checkpoint] skipping " + why));
            return found.contents() == null ? null : found.file();
        }

        @Override
        public int restarts() {
            Supervisor s = used;
            return restartsBefore + (running && s != null ? s.restarts() - restartsAtStart : 0);
        }

        @Override
        public String worker() {
            Supervisor s = used;
            return "supervised worker JVM" + (s == null ? "" : s == main ? " (the session's)" : " (the run's own: " + describeWorker() + ")");
        }

        @Override
        public void close() {
            requestStop();
            releaseWorker();
        }
    }
}
