package ane4j.notebook;

import ane4j.model.Generator;
import ane4j.train.TrainOptions;
import ane4j.train.Trainer;
import ane4j.train.Trainer.StepMetrics;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.dflib.jjava.jupyter.kernel.BaseKernel;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.IntColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

/**
 * A training run started from a notebook ({@code %%train}) or from Java ({@link Ane#train}): it trains on a thread
 * of its own, one micro-step at a time, so it can be watched live, stopped between steps and resumed.
 */
public final class TrainingRun {
    public enum State { PREPARING, RUNNING, STOPPED, FINISHED, FAILED }

    /** Keys a run configuration may have besides {@link TrainOptions#DEFAULTS}. */
    public static final String COMPILE_BUDGET = "compileBudget";

    private static volatile TrainingRun current;
    private static final AtomicInteger RUNS = new AtomicInteger();

    private final Session session;
    private final TrainOptions options;
    private final Long compileBudget;
    private final List<StepMetrics> history = new CopyOnWriteArrayList<>();
    private final LinkedBlockingQueue<String> messages = new LinkedBlockingQueue<>();
    private final List<String> allMessages = new CopyOnWriteArrayList<>();
    private volatile Training training;
    private volatile Thread thread;
    private volatile State state = State.PREPARING;
    private volatile boolean stopRequested;
    private volatile Throwable failure;

    private TrainingRun(Session session, TrainOptions options, Long compileBudget) {
        this.session = session;
        this.options = options;
        this.compileBudget = compileBudget;
    }

    /** Starts a run in the session; it becomes the {@link #current()} run. */
    public static TrainingRun start(Session session, TrainOptions options, Long compileBudget) {
        TrainingRun run = new TrainingRun(session, options, compileBudget);
        current = run;
        run.launch();
        return run;
    }

    /** Starts a run from {@code key = value} lines (see {@link #parseConfig}). */
    public static TrainingRun start(Session session, String config) {
        Map<String, String> m = parseConfig(config);
        Long budget = compileBudget(m);
        return start(session, TrainOptions.of(withDefaultRunDir(m)), budget);
    }

    /** The last run started in this JVM, or null. */
    public static TrainingRun current() {
        return current;
    }

    /**
     * {@code key = value} pairs, one per line or separated by {@code ;}; blank lines and {@code #} comments are skipped.
     * Key spelling as in {@link TrainOptions#of} ({@code weight-decay}, {@code weight_decay}, {@code weightDecay}).
     */
    public static Map<String, String> parseConfig(String text) {
        Map<String, String> m = new LinkedHashMap<>();
        int n = 0;
        for (String raw : text.split("[\\n;]")) {
            n++;
            String line = raw.strip();
            int hash = line.indexOf('#');
            if (hash >= 0) line = line.substring(0, hash).strip();
            if (line.isEmpty()) continue;
            int eq = line.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("[train] line " + n + " '" + raw.strip() + "' is not 'key = value' (e.g. steps = 60)");
            m.put(line.substring(0, eq).strip(), line.substring(eq + 1).strip());
        }
        return m;
    }

    /** Removes and returns {@code compileBudget} (any spelling) from the configuration; null when absent. */
    static Long compileBudget(Map<String, String> m) {
        String key = m.keySet().stream().filter(k -> k.replace("-", "").replace("_", "").equalsIgnoreCase(COMPILE_BUDGET)).findFirst().orElse(null);
        if (key == null) return null;
        String v = m.remove(key);
        try {
            long b = Long.parseLong(v.strip());
            if (b < 1) throw new NumberFormatException();
            return b;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("[train] compileBudget = '" + v + "' is not a positive integer");
        }
    }

    /** Without a runDir a run gets a fresh one under the temp directory, so runs never mix their checkpoints. */
    static Map<String, String> withDefaultRunDir(Map<String, String> m) {
        boolean given = m.keySet().stream().anyMatch(k -> k.replace("-", "").replace("_", "").equalsIgnoreCase("runDir"));
        if (given) return m;
        Map<String, String> out = new LinkedHashMap<>(m);
        String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
        out.put("runDir", Path.of(System.getProperty("java.io.tmpdir"), "ane4j-runs",
                stamp + "-" + ProcessHandle.current().pid() + "-" + RUNS.incrementAndGet()).toString());
        return out;
    }

    // ---- running

    private void launch() {
        stopRequested = false;
        state = State.RUNNING;
        Thread t = new Thread(this::loop, "ane4j-train");
        t.setDaemon(true);
        thread = t;
        t.start();
    }

    private void loop() {
        try {
            if (training == null) {
                training = session.train(options, compileBudget, new Trainer.Listener() {
                    @Override public void onStep(StepMetrics m) { history.add(m); }

                    @Override public void onMessage(String line) {
                        allMessages.add(line);
                        messages.add(line);
                    }
                });
            }
            if (!stopRequested) training.run(Long.MAX_VALUE);
            if (training.finished()) {
                state = State.FINISHED;
                training.close();
            } else {
                state = State.STOPPED;
            }
        } catch (Throwable e) {
            failure = e;
            state = State.FAILED;
            if (training != null) training.close();
        }
    }

    /** Asks the run to stop after the current micro-step ({@link #resume()} continues it). */
    public TrainingRun stop() {
        stopRequested = true;
        Training t = training;
        if (t != null) t.requestStop();
        return this;
    }

    /** Continues a stopped run. */
    public TrainingRun resume() {
        switch (state) {
            case RUNNING, PREPARING -> throw new IllegalStateException("[train] the run is still running (" + progressLine() + ")");
            case FINISHED -> throw new IllegalStateException("[train] the run is finished (" + history.size() + " steps); start a new one with %%train");
            case FAILED -> throw new IllegalStateException("[train] the run failed: " + failure.getMessage() + "; fix it and start a new one");
            case STOPPED -> launch();
        }
        return this;
    }

    /** Waits until the run is finished, stopped or failed; rethrows a failure. */
    public TrainingRun await() {
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

    void rethrowFailure() {
        if (failure == null) return;
        if (failure instanceof RuntimeException r && r.getMessage() != null && r.getMessage().startsWith("[")) throw new MagicException(r.getMessage(), r);
        if (failure instanceof RuntimeException r) throw r;
        if (failure instanceof Error err) throw err;
        throw new IllegalStateException("[train] " + failure, failure);
    }

    public boolean running() {
        return state == State.RUNNING || state == State.PREPARING;
    }

    public State state() { return state; }

    public Throwable failure() { return failure; }

    public TrainOptions options() { return options; }

    public Long compileBudget() { return compileBudget; }

    public Path runDir() { return options.runDir(); }

    /** The metrics of every step so far (restarts included). */
    public List<StepMetrics> history() { return List.copyOf(history); }

    /** The loss of every step so far. */
    public double[] losses() {
        return history.stream().mapToDouble(StepMetrics::loss).toArray();
    }

    /** Backend replacements so far (compile budget reached, worker died). */
    public int restarts() {
        Training t = training;
        return t == null ? 0 : t.restarts();
    }

    /** One-line messages so far (restarts, skipped updates). */
    public List<String> messages() { return List.copyOf(allMessages); }

    /** The underlying training (null until it has started). */
    public Training training() { return training; }

    // ---- watching

    /** Prints progress lines to {@code out} (at every 10% and for each message) until the run stops; returns this. */
    public TrainingRun follow(PrintStream out) {
        long every = Math.max(1, options.steps() / 10), shown = 0;
        while (true) {
            boolean alive = running();
            drainMessages(out);
            int n = history.size();
            if (n > shown && (n / every > shown / every || !alive)) {
                out.println(progressLine());
                shown = n;
            }
            if (!alive) break;
            sleep(50);
        }
        return await();
    }

    /**
     * Shows the run live in the current notebook cell: a progress line and a loss plot updated in place, restarts as
     * one printed line each. Interrupting the cell stops the run after its current step.
     */
    Table followInNotebook(BaseKernel kernel) {
        DisplayHandle line = Notebook.display(kernel, progressLine());
        DisplayHandle plot = null;
        Runnable onInterrupt = this::stop;
        Notebook.onInterrupt(onInterrupt);
        long lastLine = 0, lastPlot = 0;
        int shownLine = 0, shownPlot = 0;
        try {
            while (true) {
                boolean alive = running();
                drainMessages(System.out);
                long now = System.nanoTime();
                int n = history.size();
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
                sleep(50);
            }
        } finally {
            Notebook.removeInterrupt(onInterrupt);
        }
        line.update(progressLine());
        if (plot != null) plot.update(chart());
        rethrowFailure();
        if (state == State.STOPPED) System.out.println("stopped at step " + history.size() + "/" + options.steps() + "; %train resume continues");
        Notebook.display(kernel, runTable());
        return table();
    }

    private void drainMessages(PrintStream out) {
        for (String m; (m = messages.poll()) != null; ) out.println(m);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- views

    /** {@code step 12/60  loss 4.2310  lr 2.40e-03  1054 tok/s  58.2 ms/step · restarts 1 · running} */
    public String progressLine() {
        if (history.isEmpty()) return "step 0/" + options.steps() + " · " + state.name().toLowerCase(Locale.ROOT) + (failure != null ? ": " + failure.getMessage() : "");
        StepMetrics m = history.getLast();
        int r = restarts();
        return String.format(Locale.ROOT, "step %d/%d  loss %.4f  lr %.2e  %.0f tok/s  %.1f ms/step%s · %s", history.size(), options.steps(),
                m.loss(), m.lr(), m.tokensPerSecond(), m.msPerStep(), r > 0 ? " · restarts " + r : "", state.name().toLowerCase(Locale.ROOT));
    }

    /** State, progress and where the run writes. */
    public String status() {
        return progressLine() + "\nrun dir " + runDir() + (compileBudget != null ? " · compile budget " + compileBudget : "");
    }

    /** The loss curve so far. */
    public XYChart chart() {
        int n = history.size();
        double[] x = new double[Math.max(1, n)], y = new double[Math.max(1, n)];
        for (int i = 0; i < n; i++) {
            x[i] = history.get(i).step() + 1;
            y[i] = history.get(i).loss();
        }
        if (n == 0) y[0] = Double.NaN;
        XYChart c = new XYChartBuilder().width(640).height(300).title("training loss · " + options.model() + " · seed " + options.seed())
                .xAxisTitle("step").yAxisTitle("loss").build();
        c.getStyler().setLegendVisible(false).setMarkerSize(0);
        c.addSeries("loss", x, y);
        return c;
    }

    /** The metrics of every step as a table named after the run. */
    public Table table() {
        IntColumn step = IntColumn.create("step");
        DoubleColumn loss = DoubleColumn.create("loss"), lr = DoubleColumn.create("lr"), scale = DoubleColumn.create("lossScale"),
                norm = DoubleColumn.create("gradNorm"), ms = DoubleColumn.create("ms"), tps = DoubleColumn.create("tok/s");
        for (StepMetrics m : history) {
            step.append((int) m.step() + 1);
            loss.append(m.loss());
            lr.append(m.lr());
            scale.append(m.lossScale());
            norm.append(m.gradNorm());
            ms.append(Math.round(m.msPerStep() * 10) / 10.0);
            tps.append(Math.round(m.tokensPerSecond()));
        }
        String name = String.format(Locale.ROOT, "run %s · %s · seed %d · %d/%d steps · restarts %d", runDir().getFileName(), options.model(),
                options.seed(), history.size(), options.steps(), restarts());
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
        Session.Status s = session.status();
        key.append("environment.chip");
        value.append(s.chip());
        Training t = training;
        key.append("environment.worker");
        value.append(t != null && t.worker() != null ? t.worker() : s.worker());
        key.append("environment.compileBudget");
        value.append(compileBudget == null ? "backend default" : compileBudget.toString());
        key.append("environment.restarts");
        value.append(Integer.toString(restarts()));
        return Table.create("run record " + runDir().resolve("run.txt"), key, value);
    }

    /** Text from the run's current model (llama2.c-style sampling on the CPU). */
    public String generate(String prompt, int maxTokens, float temperature, float topP, long seed) {
        Training t = training;
        if (t == null) throw new IllegalStateException("[generate] the run has not started a model yet");
        if (running()) throw new IllegalStateException("[generate] training is still running; %train stop (or wait) first");
        if (t.tokenizer() == null) throw new IllegalStateException("[generate] the run's data came without tokenizer.bin next to it; nothing to decode with");
        return new Generator(t.parameters(), t.tokenizer()).generate(prompt, maxTokens, temperature, topP, seed);
    }

    @Override
    public String toString() {
        return "training run " + runDir() + ": " + progressLine();
    }
}
