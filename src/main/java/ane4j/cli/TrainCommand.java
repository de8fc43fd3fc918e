package ane4j.cli;

import ane4j.backend.Backend;
import ane4j.backend.Backends;
import ane4j.backend.CompileBudgetExceededException;
import ane4j.backend.ref.RefBackend;
import ane4j.model.EmbeddedCorpus;
import ane4j.model.Generator;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.Parameters;
import ane4j.model.Tokenizer;
import ane4j.train.Checkpoint;
import ane4j.train.RunFolder;
import ane4j.train.TrainOptions;
import ane4j.train.Trainer;
import ane4j.worker.Supervisor;
import ane4j.worker.TrainingSession;
import java.nio.file.Files;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;

/** {@code ane4j train [--model tiny] [--steps N] …}: trains with a progress line, then writes a loss plot and a sample. */
final class TrainCommand {
    private TrainCommand() {}

    static final String USAGE = "train [--model tiny|stories15m|stories110m|qwen3-0.6b|FILE] [--init FILE.bin|.safetensors] [--data TOKENS.bin] "
            + "[--steps N] [--lr F] [--accum N] [--backend ane|ref] [--weights dynamic|static] [--storage fp16|fp32] "
            + "[--loss-scaling static|dynamic|none] [--attention fused|threestage] [--compile-budget N] [--run-dir DIR] [--resume] [--restart-from-scratch] [--override] [--in-process]";

    static int run(String[] args, PrintStream out) {
        if (java.util.Arrays.asList(args).contains("--help") || java.util.Arrays.asList(args).contains("-h")) {
            out.println("usage: ane4j " + USAGE + "\n\noptions and defaults:");
            TrainOptions.DEFAULTS.forEach((k, v) -> out.printf("  --%-16s %s%n", k, v.isEmpty() ? "(none)" : v));
            out.println("  --compileBudget    (backend default: 100 on the ANE, unlimited on ref)");
            out.println("  --inProcess        train in this JVM instead of a supervised worker JVM");
            out.println("  --heap             the worker's -Xmx (e.g. 8g)");
            return 0;
        }
        Map<String, String> opts = parse(args);
        String budget = opts.remove("compileBudget");
        boolean inProcess = Boolean.parseBoolean(opts.remove("inProcess"));
        String heap = opts.remove("heap");
        if (budget != null && !budget.matches("[1-9]\\d{0,17}"))
            throw new CliException("--compile-budget " + budget + " is not a positive whole number (e.g. --compile-budget 100)");
        if (heap != null && !heap.matches("\\d+[kKmMgGtT]?"))
            throw new CliException("--heap " + heap + " is not a JVM heap size (e.g. --heap 8g)");
        boolean newRunFolder = !opts.containsKey("runDir") && !Boolean.parseBoolean(opts.getOrDefault("resume", "false"));
        opts.put("runDir", runDir(opts));
        try {
            return run(opts, budget, inProcess, heap, newRunFolder, out);
        } catch (RuntimeException | Error e) {
            // a run that never reached step 0 leaves no empty folder behind (runs/latest still names the previous run)
            if (newRunFolder) {
                try {
                    Path dir = Path.of(opts.get("runDir"));
                    try (var files = Files.list(dir)) {   // the worker's run.lock alone is not something the user had
                        if (files.allMatch(f -> f.getFileName().toString().equals(ane4j.train.RunFolder.LOCK_FILE)))
                            Files.deleteIfExists(dir.resolve(ane4j.train.RunFolder.LOCK_FILE));
                    }
                    Files.deleteIfExists(dir);
                } catch (IOException notEmpty) {
                    // it holds something: kept
                }
            }
            throw e;
        }
    }

    private static int run(Map<String, String> opts, String budget, boolean inProcess, String heap, boolean newRunFolder, PrintStream out) {
        TrainOptions o;
        try {
            o = TrainOptions.of(opts);
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage() + "\n  usage: ane4j " + USAGE);
        }
        long t0 = System.nanoTime();
        Progress progress = new Progress(out, newRunFolder ? () -> pointLatestAt(o.runDir()) : () -> {});
        // shared tensor folders of launchers and kernels that died (SIGKILL) are this start's to remove
        Supervisor.removeStaleSharedMemory(progress::onMessage);
        List<Trainer.StepMetrics> h;
        Parameters params;
        Tokenizer tokenizer;
        boolean stopped;
        Path checkpoint;
        try (StopSignals signals = StopSignals.install(out)) {
            if (inProcess) {
                Backend backend = backend(o, budget);
                out.printf("ane4j train: %s on %s (in process), %d steps, run dir %s%n", o.init() != null ? o.init() : o.model(), backend.name(), o.steps(), o.runDir());
                try (Trainer trainer = new Trainer(o, backend, progress)) {
                    describe(out, o, trainer.config(), trainer.parameters().data().length);
                    signals.onStop(trainer::requestStop);
                    h = trainer.run(progress, 0);
                    params = trainer.adapters() != null ? trainer.adapters().fused(trainer.parameters()) : trainer.parameters();
                    tokenizer = trainer.tokenizer();
                    stopped = trainer.nextStep() < o.steps();
                    checkpoint = trainer.lastCheckpoint();
                } catch (OutOfMemoryError e) {
                    throw new CliException(String.format(Locale.ROOT, "[train] out of Java heap (%s) training %s in this JVM (max heap %d MB): train in the "
                            + "supervised worker (without --in-process) with --heap 8g, or give this JVM more with ANE4J_JAVA_OPTS=-Xmx8g",
                            e.getMessage(), o.init() != null ? o.init() : o.model(), Runtime.getRuntime().maxMemory() >> 20));
                } catch (CompileBudgetExceededException e) {
                    throw new CliException(e.getMessage().replaceFirst(";.*", "") + "; train in the supervised worker (without --in-process, it restarts "
                            + "and resumes), or raise --compile-budget");
                }
            } else {
                // the worker's INFO records (e.g. which BLAS it loaded, once per worker) are noise here; warnings pass
                Supervisor.Options so = Supervisor.Options.defaults().withLog(line -> { if (!line.startsWith("INFO: ")) progress.onMessage(line); })
                        .withRefStorage(o.storage()).withHints(Supervisor.Hints.CLI);
                if (o.backend() != null) so = so.withBackend(o.backend());
                if (budget != null) so = so.withCompileBudget(Long.parseLong(budget));
                if (heap != null) so = so.withHeap(heap);
                out.printf("ane4j train: %s in a supervised worker JVM, %d steps, run dir %s%n", o.init() != null ? o.init() : o.model(), o.steps(), o.runDir());
                try (Supervisor supervisor = new Supervisor(so)) {
                    TrainingSession session = supervisor.startTraining(o, progress);
                    signals.onStop(session::stop);
                    h = session.await();
                    stopped = session.status().state() == TrainingSession.State.STOPPED;
                    Supervisor.Status st = supervisor.status();
                    out.printf("worker: backend %s, %d compiles, %d restart%s%n", st.backend(), st.compileCount(), st.restarts(), st.restarts() == 1 ? "" : "s");
                }
                Checkpoint.Found found = Checkpoint.findNewest(o.runDir().resolve("checkpoints"));
                found.unreadable().values().forEach(why -> progress.onMessage("[checkpoint] skipping " + why));
                Checkpoint.Contents c = found.contents();
                if (c == null) throw new CliException("training ended without a readable checkpoint in " + o.runDir().resolve("checkpoints"));
                checkpoint = found.file();
                params = new Parameters(new ParameterLayout(c.state().config()), c.params());
                if (c.lora() != null) params = ane4j.train.LoraAdapters.of(params.config(), o, c.lora()).fused(params);
                describe(out, o, c.state().config(), c.params().length);
                tokenizer = o.data() == null ? EmbeddedCorpus.tokenizer() : tokenizerBeside(o.data());
            }
            progress.finish();
            if (stopped && signals.received() != null) {
                if (!h.isEmpty()) plot(h, o.runDir().resolve("loss.png"));
                long at = h.isEmpty() ? 0 : h.getLast().step() + 1;
                out.println("[train] stopped by " + signals.received() + " at step " + at + " of " + o.steps() + "; checkpoint " + checkpoint
                        + "; continue with: ane4j train --resume --run-dir " + o.runDir());
                return signals.exitCode();
            }
        }
        if (h.isEmpty()) return 0;
        double secs = (System.nanoTime() - t0) / 1e9;
        int window = Math.max(1, Math.min(10, h.size() / 2));
        float first = mean(h, 0, window), last = mean(h, h.size() - window, h.size());
        out.printf(Locale.ROOT, "loss %.3f → %.3f (mean of first/last %d steps) in %.1f s; metrics: %s%n", first, last, window, secs, o.runDir().resolve("metrics.jsonl"));
        String validation = validationSummary(h);
        if (validation != null) out.println(validation);
        Path png = o.runDir().resolve("loss.png");
        plot(h, png);
        out.println("loss plot: " + png);
        if (tokenizer != null && tokenizer.vocabSize() <= params.config().vocabSize()) {
            String sample = new Generator(params, tokenizer).generate("Once upon a time", Math.min(80, params.config().seqLen()), 0.8f, 0.9f, o.seed());
            out.println("sample: " + sample.replace('\n', ' '));
        } else {
            out.println("sample: skipped (no tokenizer.bin matching the model next to the data)");
        }
        if (o.lora() > 0) out.println("LoRA adapter (PEFT layout): " + Trainer.adapterDir(o) + "; the sample and the export below are the fused model");
        ExportCommand.exportRun(o.runDir(), params, tokenizer, out);
        return 0;
    }

    private static void describe(PrintStream out, TrainOptions o, ModelConfig c, int nParams) {
        out.printf("model %s: %,d parameters (dim %d, %d layers, %d heads), seq %d, %s weights, %s storage, loss scaling %s%n",
                c.name(), nParams, c.dim(), c.nLayers(), c.nHeads(), c.seqLen(), o.weights(), o.storage(), o.lossScaling());
    }

    private static Tokenizer tokenizerBeside(Path data) {
        Path tok = data.resolveSibling("tokenizer.bin");
        return Files.exists(tok) ? Tokenizer.read(tok) : null;
    }

    /**
     * The run directory: the one given; with --resume and none given, the one runs/latest points at; otherwise a new
     * runs/&lt;model&gt;-&lt;time&gt;, which runs/latest then points at.
     */
    static String runDir(Map<String, String> opts) {
        if (opts.containsKey("runDir")) return opts.get("runDir");
        Path runs = runsFolder(), latest = runs.resolve("latest");
        if (Boolean.parseBoolean(opts.getOrDefault("resume", "false"))) {
            if (!Files.exists(latest)) throw new CliException("--resume without --run-dir needs runs/latest; there is none (give --run-dir DIR)");
            Path dir;
            try {
                dir = latest.toRealPath();
            } catch (IOException e) {
                throw new CliException("cannot resolve " + latest + ": " + RunFolder.reason(e));
            }
            if (Checkpoint.list(dir.resolve("checkpoints")).isEmpty())
                throw new CliException("[run] --resume: " + latest + " is " + dir + ", which has no checkpoint to resume from; start a new run without "
                        + "--resume, or give --run-dir DIR of a run that wrote checkpoints");
            return dir.toString();
        }
        String model = Path.of(opts.getOrDefault("init", opts.getOrDefault("model", "tiny"))).getFileName().toString().replaceAll("[^A-Za-z0-9._-]", "_");
        String stamp = java.time.LocalDateTime.now().format(java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
        Path dir = runs.resolve(model + "-" + stamp);
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new CliException("[run] cannot create " + dir + ": " + RunFolder.reason(e) + "; give --run-dir DIR somewhere writable");
        }
        return dir.toString();
    }

    /** Where new run folders go: ./runs, or the folder the system property {@code ane4j.runs} names. */
    static Path runsFolder() { return Path.of(System.getProperty("ane4j.runs", "runs")); }

    /** runs/latest → {@code dir}, once its run has really started (its first step); a failed start leaves it alone. */
    static void pointLatestAt(Path dir) {
        Path latest = runsFolder().resolve("latest");
        try {
            Files.deleteIfExists(latest);
            Files.createSymbolicLink(latest, dir.getFileName());
        } catch (IOException | UnsupportedOperationException e) {
            // symlinks are a convenience; the run directory is printed anyway
        }
    }

    static Backend backend(TrainOptions o, String budget) {
        Long b = budget == null ? null : Long.parseLong(budget);
        if (o.backend() == null || o.backend().equals("ref")) {
            if (o.backend() == null && !System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("mac")) {
                return new RefBackend(new RefBackend.Options(o.storage().equals("fp32"), false, b));
            }
            if (o.backend() != null) return new RefBackend(new RefBackend.Options(o.storage().equals("fp32"), false, b));
        }
        if (b != null) System.setProperty("ane4j.compileBudget", Long.toString(b));
        if (o.backend() != null) System.setProperty(Backends.PROPERTY, o.backend());
        return Backends.select();
    }

    /** {@code --steps 5 --resume --loss-scaling dynamic} → {steps=5, resume=true, lossScaling=dynamic}; a valued option without its value is refused. */
    static Map<String, String> parse(String[] args) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) throw new CliException("unexpected argument '" + a + "'\n  usage: ane4j " + USAGE);
            String key = camel(a.substring(2));
            int eq = key.indexOf('=');
            if (eq > 0) m.put(key.substring(0, eq), a.substring(a.indexOf('=') + 1));
            else if (i + 1 < args.length && !args[i + 1].startsWith("--")) m.put(key, args[++i]);
            else if (SWITCHES.contains(key)) m.put(key, "true");
            else throw new CliException(a + " has no value; give " + a + " VALUE (or --" + GenerateCommand.kebab(key) + "=VALUE)");
        }
        return m;
    }

    /** The options that stand alone; every other option takes a value. */
    private static final java.util.Set<String> SWITCHES = java.util.Set.of("resume", "restartFromScratch", "override", "inProcess");

    private static String camel(String s) {
        StringBuilder sb = new StringBuilder();
        boolean up = false;
        for (char c : s.toCharArray()) {
            if (c == '-') { up = true; continue; }
            sb.append(up ? Character.toUpperCase(c) : c);
            up = false;
        }
        return sb.toString();
    }

    private static float mean(List<Trainer.StepMetrics> h, int from, int to) {
        double sum = 0;
        for (int i = from; i < to; i++) sum += h.get(i).loss();
        return (float) (sum / Math.max(1, to - from));
    }

    /** "validation loss 2.314 (perplexity 10.1) after step 200; best 2.301 after step 150", or null without validation. */
    static String validationSummary(List<Trainer.StepMetrics> h) {
        Trainer.StepMetrics lastVal = null, best = null;
        for (Trainer.StepMetrics m : h) {
            if (!m.validated()) continue;
            lastVal = m;
            if (best == null || m.valLoss() < best.valLoss()) best = m;
        }
        if (lastVal == null) return null;
        return String.format(Locale.ROOT, "validation loss %.3f (perplexity %.2f) after step %d; best %.3f after step %d",
                lastVal.valLoss(), Math.exp(lastVal.valLoss()), lastVal.step() + 1, best.valLoss(), best.step() + 1);
    }

    static void plot(List<Trainer.StepMetrics> h, Path png) {
        double[] x = new double[h.size()], y = new double[h.size()];
        for (int i = 0; i < h.size(); i++) { x[i] = h.get(i).step(); y[i] = h.get(i).loss(); }
        List<Trainer.StepMetrics> validated = h.stream().filter(Trainer.StepMetrics::validated).toList();
        XYChart chart = new XYChartBuilder().width(720).height(360).title("training loss").xAxisTitle("step").yAxisTitle("loss").build();
        chart.getStyler().setLegendVisible(!validated.isEmpty()).setMarkerSize(validated.isEmpty() ? 0 : 6);
        chart.addSeries("train", x, y).setMarker(org.knowm.xchart.style.markers.SeriesMarkers.NONE);
        // the validation loss (metrics.jsonl valLoss) after the steps where it ran: a second curve with markers
        if (!validated.isEmpty()) {
            double[] vx = validated.stream().mapToDouble(Trainer.StepMetrics::step).toArray(), vy = validated.stream().mapToDouble(Trainer.StepMetrics::valLoss).toArray();
            chart.addSeries("validation", vx, vy).setMarker(org.knowm.xchart.style.markers.SeriesMarkers.CIRCLE);
        }
        try {
            javax.imageio.ImageIO.setUseCache(false);   // its cache is a temp file: a full /tmp must not cost the plot
            BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
        } catch (IOException e) {
            throw new CliException("cannot write " + png + ": " + RunFolder.reason(e));
        }
    }

    /** One progress line, rewritten in place on a terminal and printed every 10% otherwise. */
    static final class Progress implements Trainer.Listener {
        private final PrintStream out;
        private final boolean tty = System.console() != null;
        private long started = System.nanoTime(), lastPrinted = -1;
        private boolean dirty;

        private Runnable onFirstStep;

        Progress(PrintStream out, Runnable onFirstStep) {
            this.out = out;
            this.onFirstStep = onFirstStep;
        }

        @Override public void onStep(Trainer.StepMetrics m) {
            if (onFirstStep != null) {
                onFirstStep.run();
                onFirstStep = null;
            }
            if (lastPrinted < 0) started = System.nanoTime();
            double elapsed = (System.nanoTime() - started) / 1e9;
            long done = m.step() + 1, left = m.steps() - done;
            long eta = lastPrinted < 0 ? 0 : Math.round(elapsed / Math.max(1, done - firstStep) * left);
            if (lastPrinted < 0) firstStep = m.step();
            if (m.validated()) valLoss = m.valLoss();
            String line = String.format(Locale.ROOT, "step %d/%d  loss %.4f%s  lr %.2e  %.0f tok/s  %.1f ms/step  ETA %d:%02d%s",
                    done, m.steps(), m.loss(), Float.isNaN(valLoss) ? "" : String.format(Locale.ROOT, "  val %.4f", valLoss), m.lr(), m.tokensPerSecond(),
                    m.msPerStep(), eta / 60, eta % 60, m.skipped() ? "  (update skipped)" : "");
            boolean every = done % Math.max(1, m.steps() / 10) == 0 || done == m.steps() || lastPrinted < 0;
            if (tty) {
                out.print("\r" + line + "   ");
                dirty = true;
            } else if (every) out.println(line);
            lastPrinted = done;
        }

        private long firstStep;
        private float valLoss = Float.NaN;   // the latest validation loss, shown until the next one

        @Override public void onMessage(String line) {
            if (dirty) { out.println(); dirty = false; }
            out.println(line);
        }

        void finish() { if (dirty) { out.println(); dirty = false; } }
    }
}
