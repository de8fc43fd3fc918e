package ane4j.notebook;

import ane4j.session.LossChart;
import ane4j.session.Run;
import ane4j.run.RunSpec;
import ane4j.session.Session;
import ane4j.session.Training;
import ane4j.run.RunState;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import ane4j.run.StepMetrics;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import org.dflib.jjava.jupyter.kernel.BaseKernel;
import org.knowm.xchart.XYChart;
import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.IntColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

/**
 * A training run started from a notebook ({@code %%train}) or from Java ({@link Ane#train}): the run layer's {@link Run}
 * (it trains on a thread of its own, one micro-step at a time, so it can be watched live, stopped between steps and
 * resumed) with its notebook views: the live cell display, the loss chart and the tables.
 */
public final class TrainingRun {
    private static volatile TrainingRun current;

    private final Run run;
    private final long started = System.nanoTime();
    private volatile long ended;
    /** Restarts, stops and resumes, at the global step after which they happened: the chart's markers. */
    private final List<LossChart.Marker> markers = new CopyOnWriteArrayList<>();
    private volatile int messagesSeen;
    /** The steps before this run's first one, read from the run folder's metrics.jsonl (a resumed run). */
    private volatile List<StepMetrics> earlier;
    private volatile boolean logY;
    /** Who stopped the run ({@code %train stop (cell 7)}, {@code Kernel > Interrupt}), for the line the cell ends with; null: not said. */
    private volatile String stoppedBy;

    private TrainingRun(Run run) {
        this.run = run;
    }

    /**
     * Starts a run in the session (or, with {@code inProcess = true}, in this JVM), in the run folder the one rule of
     * {@link ane4j.session.Run#place} gives it; it becomes the {@link #current()} run.
     */
    public static TrainingRun start(Session session, RunSpec spec) {
        TrainingRun r = new TrainingRun(Run.start(session, spec, null));
        current = r;
        return r;
    }

    /** Starts a run from {@code key = value} lines ({@link RunSpec#parseText}). */
    public static TrainingRun start(Session session, String config) {
        return start(session, RunSpec.fromText(config));
    }

    /** The last run started in this JVM, or null. */
    public static TrainingRun current() {
        return current;
    }

    /** The run layer's run under this view. */
    public Run run() { return run; }

    /** Asks the run to stop after the current micro-step ({@link #resume()} continues it). */
    public TrainingRun stop() {
        run.stop();
        return this;
    }

    /** {@link #stop()}, saying who asked: the running cell ends with "stopped by {@code who} at step …". */
    TrainingRun stopBy(String who) {
        stoppedBy = who;
        return stop();
    }

    /**
     * {@code %train stop} in cell {@code stopCell}, answered while another cell runs: asks the run to stop after its
     * current step and returns what that cell shows; the cell following the run ends with its summary and checkpoint.
     */
    String stopFromCell(int stopCell) {
        stopBy("%train stop (cell " + stopCell + ")");
        return "stopping the training run after its current step (" + lastStep() + "/" + options().steps()
                + " done); the cell showing it ends with its summary and the checkpoint";
    }

    /** "stopped by %train stop (cell 7) at step 13/40; checkpoint …/step-13.ckpt; %train resume continues" */
    String stoppedLine() {
        Training t = run.training();
        Path checkpoint = t == null || run.history().isEmpty() ? null : t.checkpoint();
        String by = stoppedBy;
        return "stopped" + (by != null ? " by " + by : "") + " at step " + lastStep() + "/" + options().steps()
                + (checkpoint != null ? "; checkpoint " + checkpoint : "; no step ran, so no checkpoint") + "; %train resume continues";
    }

    /** Continues a stopped run. */
    public TrainingRun resume() {
        run.resume();
        stoppedBy = null;
        ended = 0;
        markers.add(new LossChart.Marker(lastStep(), "resume"));
        return this;
    }

    /** The global 1-based step of the last step so far (0 before the first). */
    long lastStep() {
        List<StepMetrics> h = run.history();
        return h.isEmpty() ? 0 : h.getLast().step() + 1;
    }

    /** Shows the loss axis of {@link #chart()} on a log scale (or not). */
    public TrainingRun logScale(boolean on) {
        logY = on;
        return this;
    }

    /** Waits until the run is finished, stopped or failed; rethrows a failure (a one-line one as a {@link MagicException}). */
    public TrainingRun await() {
        try {
            run.await();
        } catch (RuntimeException r) {
            throw oneLine(r);
        }
        return this;
    }

    void rethrowFailure() {
        try {
            run.rethrowFailure();
        } catch (RuntimeException r) {
            throw oneLine(r);
        }
    }

    private static RuntimeException oneLine(RuntimeException r) {
        return r.getMessage() != null && r.getMessage().startsWith("[") && !(r instanceof MagicException) ? new MagicException(r.getMessage(), r) : r;
    }

    public boolean running() { return run.running(); }

    public RunState state() { return run.state(); }

    public Throwable failure() { return run.failure(); }

    public TrainOptions options() { return run.options(); }

    public Long compileBudget() { return run.compileBudget(); }

    /** The run's whole description (every key, as the run record keeps it). */
    public RunSpec spec() { return run.spec(); }

    public Path runDir() { return run.runDir(); }

    /** The metrics of every step so far (restarts included). */
    public List<StepMetrics> history() { return run.history(); }

    /** The loss of every step so far. */
    public double[] losses() { return run.losses(); }

    /** Backend replacements so far (compile budget reached, worker died). */
    public int restarts() { return run.restarts(); }

    /** One-line messages so far (restarts, skipped updates). */
    public List<String> messages() { return run.messages(); }

    /** The underlying training (null until it has started). */
    public Training training() { return run.training(); }

    /** Prints progress lines to {@code out} (at every 10% and for each message) until the run stops; returns this. */
    public TrainingRun follow(PrintStream out) {
        try {
            run.follow(out);
        } catch (RuntimeException r) {
            throw oneLine(r);
        }
        if (state() == RunState.STOPPED && stoppedBy != null) out.println(stoppedLine());   // e.g. %train stop from another cell
        return this;
    }

    /**
     * Shows the run live in the current notebook cell: a progress line and a loss plot updated in place, restarts as
     * one printed line each. Interrupting the cell stops the run after its current step.
     */
    TrainingSummary followInNotebook(BaseKernel kernel) {
        DisplayHandle line = Notebook.display(kernel, progressLine());
        DisplayHandle plot = null;
        Runnable onInterrupt = () -> stopBy("Kernel > Interrupt");
        Notebook.onInterrupt(onInterrupt);
        long lastLine = 0, lastPlot = 0;
        int shownLine = 0, shownPlot = 0;
        String shownSetup = progressLine();
        Run.Changes changes = new Run.Changes();
        try (Run.Subscription subscription = run.listen(changes)) {
            while (true) {
                boolean alive = running();
                run.drainMessages(System.out);
                noteRestarts();
                long now = System.nanoTime();
                int n = (int) run.stepCount();
                if (n == 0 && !progressLine().equals(shownSetup)) {
                    shownSetup = progressLine();   // before step 1: starting worker…, compiling kernel k/n (name)…, each as it comes
                    line.update(shownSetup);
                }
                if (n > shownLine && (now - lastLine > 200_000_000L || !alive)) {
                    line.update(progressLine());
                    shownLine = n;
                    lastLine = now;
                }
                if (n > shownPlot && (now - lastPlot > 1_000_000_000L || !alive)) {
                    if (plot == null) plot = Notebook.display(kernel, chart());
                    else plot.update(chart());
                    shownPlot = n;
                    lastPlot = System.nanoTime();
                }
                if (!alive) break;
                // wait for the run to tell of a change; a step not drawn yet (the line at most 5 times a second, the
                // plot once a second) is drawn when its time comes. The interrupt stops the run; then wait for its step to end
                long now2 = System.nanoTime(), due = Long.MAX_VALUE;
                if (n > shownLine) due = Math.min(due, lastLine + 200_000_000L - now2);
                if (n > shownPlot) due = Math.min(due, lastPlot + 1_000_000_000L - now2);
                if (!changes.await(due == Long.MAX_VALUE ? -1 : Math.max(1, due / 1_000_000L))) stop();
            }
        } finally {
            Notebook.removeInterrupt(onInterrupt);
        }
        ended = System.nanoTime();
        noteRestarts();
        if (state() == RunState.STOPPED) markers.add(new LossChart.Marker(lastStep(), "stop"));
        line.update(progressLine());
        if (plot != null) plot.update(chart());
        rethrowFailure();
        if (state() == RunState.STOPPED) System.out.println(stoppedLine());
        return summary();
    }

    /** A marker for each restart message not seen yet, at the step it restored ("… restored step 36 …"). */
    private void noteRestarts() {
        List<String> all = run.messages();
        for (int i = messagesSeen; i < all.size(); i++) {
            String m = all.get(i);
            if (!m.startsWith("worker restarted")) continue;
            var at = java.util.regex.Pattern.compile("restored step (\\d+)").matcher(m);
            markers.add(new LossChart.Marker(at.find() ? Long.parseLong(at.group(1)) : lastStep(), "restart"));
        }
        messagesSeen = all.size();
    }

    /** The compact block a training cell ends with (the record and the table stay behind %train record / table). */
    public TrainingSummary summary() {
        long end = ended != 0 ? ended : System.nanoTime();
        return TrainingSummary.of(state().name().toLowerCase(Locale.ROOT), fullHistory(), options().steps(), (end - started) / 1e9,
                restarts(), runDir(), null);
    }

    /**
     * Every step of the run folder's history: a resumed run's earlier steps (from its metrics.jsonl, as the resume
     * truncated it) and this run's; global steps.
     */
    public List<StepMetrics> fullHistory() {
        List<StepMetrics> live = run.history();
        if (live.isEmpty()) return live;
        List<StepMetrics> before = earlier;
        if (before == null) {
            long first = live.getFirst().step();
            Path metrics = runDir().resolve("metrics.jsonl");
            before = first == 0 || !Files.exists(metrics) ? List.of()
                    : ane4j.run.StepHistory.of(ane4j.run.MetricsLog.read(metrics, options().steps(), w -> {}).stream().filter(m -> m.step() < first).toList());
            earlier = before;
        }
        if (before.isEmpty()) return live;
        List<StepMetrics> all = new java.util.ArrayList<>(before);
        all.addAll(live);
        return all;
    }

    // ---- views

    /**
     * The run's line, as {@code ane4j train} prints the step ({@link ane4j.run.ProgressLine}) with the run's state after it:
     * {@code step 12/60  loss 4.2310  lr 2.40e-03  1054 tok/s  58.2 ms/step  ETA 0:03 · restarts 1 · running}
     */
    public String progressLine() { return run.progressLine(); }

    /** State, progress and where the run writes. */
    public String status() { return run.status(); }

    /** The loss curve so far (x: the global 1-based step, as in the CLI's loss.png). */
    public XYChart chart() {
        return LossChart.of(fullHistory(), List.copyOf(markers),
                new LossChart.Style("training loss · " + (options().graph() != null ? spec().modelName() : options().model()) + " · seed " + options().seed(), 640, 300, logY));
    }

    /** The markers of the chart so far: restarts, stops, resumes. */
    public List<LossChart.Marker> markers() { return List.copyOf(markers); }

    /** The metrics of every step as a table named after the run. */
    public Table table() {
        IntColumn step = IntColumn.create("step");
        DoubleColumn loss = DoubleColumn.create("loss"), lr = DoubleColumn.create("lr"), scale = DoubleColumn.create("lossScale"),
                norm = DoubleColumn.create("gradNorm"), ms = DoubleColumn.create("ms"), tps = DoubleColumn.create("tok/s");
        for (StepMetrics m : run.history()) {
            step.append((int) m.step() + 1);
            loss.append(m.loss());
            lr.append(m.lr());
            scale.append(m.lossScale());
            norm.append(m.gradNorm());
            ms.append(Math.round(m.msPerStep() * 10) / 10.0);
            tps.append(Math.round(m.tokensPerSecond()));
        }
        String name = String.format(Locale.ROOT, "run %s · %s · seed %d · %d/%d steps · restarts %d", runDir().getFileName(), options().graph() != null ? spec().modelName() : options().model(),
                options().seed(), run.stepCount(), options().steps(), restarts());
        return Table.create(name, step, loss, lr, scale, norm, ms, tps);
    }

    /** The run record the trainer wrote (run.txt): configuration, seed, model, backend, JDK, OS, ane4j version. */
    public String runRecord() {
        Path f = runDir().resolve("run.txt");
        try {
            return Files.exists(f) ? Files.readString(f) : "";
        } catch (IOException e) {
            throw new UncheckedIOException("[train] cannot read " + f + ": " + e.getMessage(), e);
        }
    }

    /** The run record as a table, with the chip and where the backend ran added. */
    public Table runTable() {
        StringColumn key = StringColumn.create("key"), value = StringColumn.create("value");
        String section = "";
        for (String line : runRecord().lines().toList()) {
            String l = line.strip();
            if (l.isEmpty() || l.startsWith("#")) continue;
            if (l.startsWith("[") && l.endsWith("]")) {
                section = l.substring(1, l.length() - 1) + ".";
                continue;
            }
            int eq = l.indexOf('=');
            if (eq < 0) continue;
            key.append(section + l.substring(0, eq).strip());
            value.append(l.substring(eq + 1).strip());
        }
        Session.Status s = run.session().status();
        key.append("environment.chip");
        value.append(s.chip());
        Training t = run.training();
        key.append("environment.worker");
        value.append(t != null && t.worker() != null ? t.worker() : s.worker());
        key.append("environment.compileBudget");
        value.append(compileBudget() == null ? "backend default" : compileBudget().toString());
        key.append("environment.restarts");
        value.append(Integer.toString(restarts()));
        return Table.create("run record " + runDir().resolve("run.txt"), key, value);
    }

    /** Text from the run's current model (llama2.c-style sampling on the CPU). */
    public String generate(String prompt, int maxTokens, float temperature, float topP, long seed) {
        return run.generate(prompt, maxTokens, temperature, topP, seed);
    }

    /**
     * Text from the run's current model with the prompt's prefill on the session's backend ({@code backend}: its name or
     * "backend"; "cpu" for the CPU path) and decoding where {@code decode} says (backend|cpu; null: the backend's default).
     */
    public String generate(String prompt, int maxTokens, float temperature, float topP, long seed, String backend, String decode) {
        return run.generate(prompt, maxTokens, temperature, topP, seed, backend, decode);
    }

    /** Where and how fast the last generate ran (backend, prefill and decode tokens/s), or null. */
    public String lastGenerate() {
        return run.lastGenerate();
    }

    @Override
    public String toString() {
        return run.toString();
    }
}
