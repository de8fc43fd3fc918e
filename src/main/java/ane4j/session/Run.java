package ane4j.session;

import ane4j.run.ProgressLine;
import ane4j.run.RunFolder;
import ane4j.run.RunSpec;
import ane4j.run.RunState;
import ane4j.run.SetupProgress;
import ane4j.run.StepMetrics;
import ane4j.run.StopFlag;
import ane4j.run.TrainOptions;
import ane4j.train.Checkpoint;
import ane4j.train.Trainer;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * A training run of every face ({@code ane4j train}, {@code %%train}, {@code Ane.train}): described by a {@link RunSpec},
 * placed in the folder {@link #place the rule} gives it, trained in a {@link Session} (this JVM or a supervised worker) on a
 * thread of its own, one micro-step at a time, so it can be watched, stopped between steps and resumed. At the end
 * (and at a stop) it writes {@code loss.png} beside the run record.
 */
public final class Run {
    /** What a run tells whoever listens: every step, one-line messages, setup before step 1 (on the run's threads), and each change of state. */
    public interface Listener extends Trainer.Listener {
        @Override default void onStep(StepMetrics m) {}

        /** The run is now in {@code state} (called after the change, on the thread that made it). */
        default void onState(RunState state) {}
    }

    private final Session session;
    private final Placed placed;
    private final RunSpec spec;
    private final TrainOptions options;
    private final List<Trainer.Listener> listeners = new CopyOnWriteArrayList<>();
    private final ane4j.run.StepHistory history = new ane4j.run.StepHistory();   // bounded; metrics.jsonl has every step
    private final ProgressLine line = new ProgressLine();   // the one step line of every face (as the CLI prints it)
    private final LinkedBlockingQueue<String> messages = new LinkedBlockingQueue<>();
    private final List<String> allMessages = new CopyOnWriteArrayList<>();
    private volatile Training training;
    private volatile Thread thread;
    private volatile RunState state = RunState.PREPARING;
    private final StopFlag stop = new StopFlag();   // the run's one stop flag: its training and trainer serve this one
    private volatile Throwable failure;
    private volatile SetupProgress setup;   // the latest setup event before the first step, or null
    private final RunText text = new RunText(this);   // generation from the run's model

    private Run(Session session, Placed placed, Trainer.Listener observer) {
        this.session = session;
        this.placed = placed;
        this.spec = placed.spec();
        this.options = spec.train();
        if (observer != null) listeners.add(observer);
    }

    /**
     * Starts a run in {@code session} (with {@code inProcess = true}: in this JVM), in the folder the rule of {@link #place}
     * gives it. {@code observer} (or null) sees every step and message too, on the run's thread.
     */
    public static Run start(Session session, RunSpec spec, Trainer.Listener observer) {
        return start(session, place(spec), observer);
    }

    /** {@link #start(Session, RunSpec, Trainer.Listener)} in a folder already placed. */
    public static Run start(Session session, Placed placed, Trainer.Listener observer) {
        RunSpec spec = placed.spec();
        Session where = spec.inProcess() && !(session instanceof LocalSession) ? new LocalSession(spec.newBackend()) : session;
        Run run = new Run(where, placed, observer);
        run.launch();
        return run;
    }

    // ---- the run folder

    /** The system property naming the folder new run folders go to (default {@code runs} in the working directory). */
    public static final String RUNS_PROPERTY = "ane4j.runs";

    /** Where new run folders go. */
    public static Path runsFolder() {
        return Path.of(System.getProperty(RUNS_PROPERTY, "runs"));
    }

    /** A run described without a run folder gets one by the rule ({@link #place}); {@link Placed#isNew()} says whether it was created now. */
    public record Placed(RunSpec spec, boolean isNew) {
        public Path runDir() { return spec.train().runDir(); }
    }

    /**
     * The one rule for run folders, for the CLI, {@code %%train} and {@code Ane.train} alike: the {@code runDir} given;
     * else, with {@code resume} alone, the run {@code runs/latest} points at; else a new {@code runs/<model>-<time>}
     * (with {@code -2}, {@code -3} … when that second already has one), which {@code runs/latest} points at once its
     * first step is done. {@code runs} is relative to the working directory (a notebook's is the notebook's folder), or
     * the folder the system property {@value #RUNS_PROPERTY} names.
     */
    public static Placed place(RunSpec spec) {
        if (spec.train().runDir() != null) return new Placed(spec, false);
        Path runs = runsFolder(), latest = runs.resolve("latest");
        if (spec.train().resume()) {
            if (!Files.exists(latest))
                throw new IllegalArgumentException("[run] --resume without --run-dir (resume = true without runDir) continues " + latest + ", but there is none; give --run-dir DIR");
            Path dir;
            try {
                dir = latest.toRealPath();
            } catch (IOException e) {
                throw new IllegalArgumentException("[run] cannot resolve " + latest + ": " + RunFolder.reason(e), e);
            }
            if (Checkpoint.list(dir.resolve("checkpoints")).isEmpty())
                throw new IllegalArgumentException("[run] --resume: " + latest + " is " + dir + ", which has no checkpoint to resume from; start a new run without "
                        + "--resume, or give --run-dir DIR of a run that wrote checkpoints");
            return new Placed(spec.with("runDir", dir.toString()), false);
        }
        String model = Path.of(spec.modelName()).getFileName().toString().replaceAll("[^A-Za-z0-9._-]", "_");
        String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
        for (int n = 1; ; n++) {
            Path dir = runs.resolve(model + "-" + stamp + (n == 1 ? "" : "-" + n));
            try {
                Files.createDirectories(runs);
                Files.createDirectory(dir);
                return new Placed(spec.with("runDir", dir.toString()), true);
            } catch (FileAlreadyExistsException taken) {
                // a run started in the same second: the next suffix
            } catch (IOException e) {
                throw new IllegalArgumentException("[run] cannot create " + dir + ": " + RunFolder.reason(e) + "; give runDir (--run-dir DIR) somewhere writable", e);
            }
        }
    }

    /** runs/latest → {@code dir}, once its run has really started (its first step); a failed start leaves it alone. */
    public static void pointLatestAt(Path dir) {
        Path latest = runsFolder().resolve("latest");
        try {
            if (!dir.toAbsolutePath().getParent().equals(runsFolder().toAbsolutePath())) return;   // only runs/ folders are "latest"
            Files.deleteIfExists(latest);
            Files.createSymbolicLink(latest, dir.getFileName());
        } catch (IOException | UnsupportedOperationException e) {
            // symlinks are a convenience; the run directory is printed anyway
        }
    }

    /** A new run folder that never reached step 0 holds nothing the user had: it goes (runs/latest still names the previous run). */
    public static void removeIfUnused(Placed p) {
        if (!p.isNew()) return;
        Path dir = p.runDir();
        try {
            try (var files = Files.list(dir)) {   // the worker's run.lock alone is not something the user had
                if (files.allMatch(f -> f.getFileName().toString().equals(RunFolder.LOCK_FILE)))
                    Files.deleteIfExists(dir.resolve(RunFolder.LOCK_FILE));
            }
            Files.deleteIfExists(dir);
        } catch (IOException notEmpty) {
            // it holds something: kept
        }
    }

    // ---- running

    private void launch() {
        stop.clear();
        setState(RunState.RUNNING);
        Thread t = new Thread(this::loop, "ane4j-train");
        t.setDaemon(true);
        thread = t;
        t.start();
    }

    private void loop() {
        try {
            if (training == null) {
                training = session.train(spec, new Trainer.Listener() {
                    @Override public void onStep(StepMetrics m) {
                        if (history.isEmpty() && placed.isNew()) pointLatestAt(placed.runDir());
                        history.add(m);
                        line.add(m);
                        for (Trainer.Listener l : listeners) l.onStep(m);
                    }

                    @Override public void onMessage(String line) {
                        message(line);
                    }

                    @Override public void onSetup(SetupProgress p) {
                        setup = p;
                        for (Trainer.Listener l : listeners) l.onSetup(p);
                    }
                }, stop);
            }
            if (!stop.requested()) training.run();
            if (!history.isEmpty()) {
                try {
                    LossChart.save(history(), runDir());
                } catch (UncheckedIOException e) {
                    message(e.getMessage());
                }
            }
            if (training.finished()) {
                training.close();
                setState(RunState.FINISHED);
            } else {
                setState(RunState.STOPPED);
            }
        } catch (Throwable e) {
            failure = e;
            if (training != null) training.close();
            else removeIfUnused(placed);   // a run that never reached step 0 leaves no empty folder behind
            setState(RunState.FAILED);
        }
    }

    private void message(String line) {
        allMessages.add(line);
        messages.add(line);
        for (Trainer.Listener l : listeners) l.onMessage(line);
    }

    private void setState(RunState s) {
        state = s;
        for (Trainer.Listener l : listeners) if (l instanceof Listener rl) rl.onState(s);
    }

    /** A listener's registration: closing it removes the listener. */
    public interface Subscription extends AutoCloseable {
        @Override void close();
    }

    /** Adds a listener for the rest of the run (resumes included); closing the result removes it. */
    public Subscription listen(Trainer.Listener l) {
        listeners.add(l);
        return () -> listeners.remove(l);
    }

    /**
     * A listener that counts what happened (a step, a message, setup progress, a change of state): a view waits on it
     * instead of polling the run, and redraws when something did.
     */
    public static final class Changes implements Listener {
        private final java.util.concurrent.Semaphore changed = new java.util.concurrent.Semaphore(0);

        @Override public void onStep(StepMetrics m) { changed.release(); }

        @Override public void onMessage(String line) { changed.release(); }

        @Override public void onSetup(SetupProgress p) { changed.release(); }

        @Override public void onState(RunState s) { changed.release(); }

        /**
         * Waits up to {@code ms} for something to happen (forever when {@code ms} is negative) and takes every change so far;
         * false when interrupted (the flag cleared).
         */
        public boolean await(long ms) {
            try {
                if (ms < 0) changed.acquire();
                else if (!changed.tryAcquire(ms, java.util.concurrent.TimeUnit.MILLISECONDS)) return true;
                changed.drainPermits();
                return true;
            } catch (InterruptedException e) {
                return false;
            }
        }
    }

    /** Asks the run to stop after the current micro-step ({@link #resume()} continues it). */
    public Run stop() {
        stop.request();
        Training t = training;
        if (t != null) t.requestStop();
        return this;
    }

    /** Continues a stopped run. */
    public Run resume() {
        switch (state) {
            case RUNNING, PREPARING -> throw new IllegalStateException("[train] the run is still running (" + progressLine() + ")");
            case FINISHED -> throw new IllegalStateException("[train] the run is finished (" + history.count() + " steps); start a new one with %%train");
            case FAILED -> throw new IllegalStateException("[train] the run failed: " + failure.getMessage() + "; fix it and start a new one");
            case STOPPED -> {
                line.restartClock();   // the ETA's pace, without the pause
                launch();
            }
        }
        return this;
    }

    /** Waits until the run is finished, stopped or failed; rethrows a failure. */
    public Run await() {
        Thread t = thread;
        try {
            if (t != null) t.join();
        } catch (InterruptedException e) {
            stop();
            Thread.currentThread().interrupt();
        }
        rethrowFailure();
        return this;
    }

    /** Throws the run's failure, if any, as it was. */
    public void rethrowFailure() {
        if (failure == null) return;
        if (failure instanceof RuntimeException r) throw r;
        if (failure instanceof Error err) throw err;
        throw new IllegalStateException("[train] " + failure, failure);
    }

    /** Ends the run's training (a finished run keeps its checkpoints; its worker, if of its own, exits). */
    public void close() {
        Training t = training;
        if (t != null) t.close();
    }

    public boolean running() {
        return state == RunState.RUNNING || state == RunState.PREPARING;
    }

    public RunState state() { return state; }

    public Throwable failure() { return failure; }

    public RunSpec spec() { return spec; }

    public TrainOptions options() { return options; }

    public Long compileBudget() { return spec.compileBudget(); }

    public Path runDir() { return options.runDir(); }

    /** True when the rule of {@link #place} created the run folder for this run. */
    public boolean newRunDir() { return placed.isNew(); }

    /** The session the run trains in. */
    public Session session() { return session; }

    /** The metrics of every step so far (restarts included). */
    public List<StepMetrics> history() { return history.list(); }

    /** How many steps this run has reported (restarts included); {@link #history()} keeps a downsampled set of them. */
    public long stepCount() { return history.count(); }

    /** The loss of the steps {@link #history()} keeps (every step up to {@link ane4j.run.StepHistory#RECENT}, then downsampled). */
    public double[] losses() {
        return history.list().stream().mapToDouble(StepMetrics::loss).toArray();
    }

    /** Backend replacements so far (compile budget reached, worker died). */
    public int restarts() {
        Training t = training;
        return t == null ? 0 : t.restarts();
    }

    /** One-line messages so far (restarts, skipped updates). */
    public List<String> messages() { return List.copyOf(allMessages); }

    /** Prints the messages not printed yet. */
    public void drainMessages(PrintStream out) {
        for (String m; (m = messages.poll()) != null; ) out.println(m);
    }

    /** The underlying training (null until it has started). */
    public Training training() { return training; }

    /** Prints progress lines to {@code out} (at every 10% and for each message) until the run stops; returns this. */
    public Run follow(PrintStream out) {
        long every = Math.max(1, options.steps() / 10), shown = 0;
        boolean interrupted = false;
        Changes changes = new Changes();
        try (Subscription subscription = listen(changes)) {
            while (true) {
                boolean alive = running();
                drainMessages(out);
                long n = history.count();
                if (n > shown && (n / every > shown / every || !alive)) {
                    out.println(progressLine());
                    shown = n;
                }
                if (!alive) break;
                // an interrupt (Ctrl-C in jshell, Kernel > Interrupt around Ane.train) stops the run after its current
                // step; the loop then waits for that
                if (!changes.await(-1) && !interrupted) {
                    interrupted = true;
                    stop();
                }
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
        return interrupted ? this : await();
    }

    /** The {@link ProgressLine} of the last step, then the run's: {@code step 12/60  loss 4.2310  lr 2.40e-03  1054 tok/s  58.2 ms/step  ETA 0:03 · restarts 1 · running} */
    public String progressLine() {
        String last = line.last();
        if (last == null) return ProgressLine.beforeFirstStep(options.steps(), (running() ? setupLine() : state.name().toLowerCase(Locale.ROOT))
                + (failure != null ? ": " + failure.getMessage() : ""));
        int r = restarts();
        return last + (r > 0 ? " · restarts " + r : "") + " · " + state.name().toLowerCase(Locale.ROOT);
    }

    /** What the run does before its first step: {@code starting worker…}, {@code compiling kernel 3/10 (ffnFused)…}, {@code first step…}. */
    public String setupLine() {
        SetupProgress p = setup;
        return p == null ? "starting…" : p.line();
    }

    /** The latest setup event before the first step (null before the first one): the worker start, each kernel compile. */
    public SetupProgress setupProgress() { return setup; }

    /** State, progress and where the run writes. */
    public String status() {
        return progressLine() + "\nrun dir " + runDir() + (compileBudget() != null ? " · compile budget " + compileBudget() : "");
    }

    /** Text from the run's current model (llama2.c-style sampling on the CPU). */
    public String generate(String prompt, int maxTokens, float temperature, float topP, long seed) {
        return generate(prompt, maxTokens, temperature, topP, seed, "cpu", null);
    }

    /** Text from the run's current model, on the CPU or prefilled on the session's backend ({@link RunText#generate}). */
    public String generate(String prompt, int maxTokens, float temperature, float topP, long seed, String backend, String decode) {
        return text.generate(prompt, maxTokens, temperature, topP, seed, backend, decode);
    }

    /** Where and how fast the last {@link #generate} ran, or null. */
    public String lastGenerate() { return text.last(); }

    @Override
    public String toString() {
        return "training run " + runDir() + ": " + progressLine();
    }
}
