package ane4j.cli;

import ane4j.model.Generator;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.Tokenizer;
import ane4j.run.KeyTable.Key;
import ane4j.run.ProgressLine;
import ane4j.run.RunSpec;
import ane4j.run.RunState;
import ane4j.run.SetupProgress;
import ane4j.run.StepMetrics;
import ane4j.run.TrainOptions;
import ane4j.session.LocalSession;
import ane4j.session.Run;
import ane4j.session.Session;
import ane4j.session.Training;
import ane4j.session.WorkerSession;
import ane4j.train.Checkpoint;
import ane4j.train.Trainer;
import ane4j.worker.Supervisor;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine;

/**
 * {@code ane4j train [--model tiny] [--steps N] …}: trains with a progress line, then writes a loss plot and a sample.
 * The flags are the run layer's key table ({@link RunSpec#KEYS}, the keys of {@code %%train}), read by picocli; the
 * run goes where {@code %%train}'s goes: a supervised worker JVM, or with {@code --in-process} this JVM, where the
 * backend is replaced at the compile budget and the run resumes.
 */
final class TrainCommand {
    private TrainCommand() {}

    /** Errors are one line; the usage is one flag away. */
    private static final String HELP_HINT = " (ane4j train --help lists every option)";

    static final String USAGE = "train [--model " + String.join("|", ModelConfig.PRESETS) + "|FILE] [--dim N --n-layers N …] [--init FILE.bin|.safetensors] "
            + "[--data TOKENS.bin] [--steps N] [--lr F] [--backend ane|ref] [--compile-budget N] [--in-process] [--run-dir DIR] [--resume] "
            + "[--from-record run.json] … (ane4j train --help lists every option)";

    /** The command line: one option per key of the table (kebab-case, and the camelCase key and its aliases too), --from-record and --help. */
    static CommandLine commandLine() {
        CommandSpec spec = CommandSpec.create().name("ane4j train");
        for (Key k : RunSpec.KEYS.keys()) {
            java.util.LinkedHashSet<String> names = new java.util.LinkedHashSet<>();
            names.add(k.flag());
            names.add("--" + k.name());
            k.aliases().forEach(a -> names.add("--" + a));
            OptionSpec.Builder b = OptionSpec.builder(names.toArray(String[]::new)).type(String.class).userObject(k.name()).description(k.help());
            if (k.type() == Key.Type.BOOL) b.arity("0..1").fallbackValue("true").paramLabel("true|false");
            else b.arity("1").paramLabel(k.type() == Key.Type.CHOICE ? String.join("|", k.allowed()) : k.type().label());
            spec.addOption(b.build());
        }
        spec.addOption(OptionSpec.builder("--from-record").type(String.class).arity("1").paramLabel("run.json")
                .description("rerun a recorded run: its options, with the flags given here over them").build());
        spec.addOption(OptionSpec.builder("-h", "--help").usageHelp(true).description("this list").build());
        CommandLine cl = new CommandLine(spec);
        cl.setUnmatchedOptionsArePositionalParams(false);
        return cl;
    }

    static int run(String[] args, PrintStream out) {
        CommandLine cl = commandLine();
        ParseResult parsed;
        try {
            parsed = cl.parseArgs(args);
        } catch (CommandLine.UnmatchedArgumentException e) {
            String a = e.getUnmatched().isEmpty() ? "?" : e.getUnmatched().getFirst();
            throw new CliException((a.startsWith("-") ? RunSpec.KEYS.unknown(a.replaceFirst("=.*", "")).getMessage() : "unexpected argument '" + a + "'")
                    + HELP_HINT);
        } catch (CommandLine.MissingParameterException e) {
            String flag = e.getMissing().isEmpty() ? "an option" : ((OptionSpec) e.getMissing().getFirst()).longestName();
            throw new CliException(flag + " has no value; give " + flag + " VALUE (or " + flag + "=VALUE)");
        } catch (CommandLine.ParameterException e) {
            throw new CliException(e.getMessage() + HELP_HINT);
        }
        if (parsed.isUsageHelpRequested()) {
            out.println("usage: ane4j " + USAGE + "\n\noptions (also the keys of a %%train cell, key = value):");
            out.print(RunSpec.usage());
            out.println("  --from-record run.json        rerun a recorded run: its options, with the flags given here over them");
            return 0;
        }
        Map<String, String> given = new LinkedHashMap<>();
        String record = null;
        for (OptionSpec o : parsed.matchedOptions()) {
            if (o.longestName().equals("--from-record")) record = o.getValue();
            else if (o.userObject() instanceof String key) {
                if (given.containsKey(key)) throw new CliException("--" + key + " is given twice; keep one");
                given.put(key, o.getValue());
            }
        }
        // the two contradict each other (the 2026-12-05 reliability report, H-h: both were accepted, rc 0). Refused here,
        // where the user gives them: the run layer itself restarts a worker with resume = true over any options
        if ("true".equals(String.valueOf(given.get("resume"))) && "true".equals(String.valueOf(given.get("restartFromScratch"))))
            throw new CliException("[train] --resume and --restart-from-scratch contradict each other: give --resume to continue the run,"
                    + " or --restart-from-scratch (alone) to set its checkpoints and metrics aside and start at step 0");
        if (record != null) {
            try {
                given = RunSpec.overRecord(Path.of(record), given);
            } catch (IllegalArgumentException e) {
                throw new CliException(e.getMessage());
            }
        }
        // a Hugging Face id (Qwen/Qwen3-0.6B) as --init, --model or --tokenizer: its snapshot in the huggingface_hub cache
        try {
            given = ane4j.hub.HfHub.resolveRunKeys(given, RunSpec.KEYS::canonical, ane4j.hub.HfHub::fromEnvironment);
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage());
        }
        RunSpec spec;
        Run.Placed placed;
        try {
            spec = RunSpec.of(given);
            placed = Run.place(spec);
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage());
        }
        try {
            return run(placed, out);
        } catch (RuntimeException | Error e) {
            Run.removeIfUnused(placed);   // a run that never reached step 0 leaves no empty folder behind
            throw e;
        }
    }

    private static int run(Run.Placed placed, PrintStream out) {
        RunSpec spec = placed.spec();
        TrainOptions o = spec.train();
        long t0 = System.nanoTime();
        Progress progress = new Progress(out).steps(o.steps());   // runs/latest is pointed by the Run at its first step
        // shared tensor folders of launchers and kernels that died (SIGKILL) are this start's to remove
        Supervisor.removeStaleSharedMemory(progress::onMessage);
        try (StopSignals signals = StopSignals.install(out); Session session = session(spec, progress)) {
            if (spec.inProcess()) out.printf("ane4j train: %s on %s (in process), %d steps, run dir %s%n", spec.modelName(), session.backendName(), o.steps(), o.runDir());
            else out.printf("ane4j train: %s in a supervised worker JVM, %d steps, run dir %s%n", spec.modelName(), o.steps(), o.runDir());
            Run run = Run.start(session, placed, progress);   // the run of %%train: same folder rule, budget restarts, loss.png
            signals.onStop(run::stop);
            try {
                run.await();
            } catch (OutOfMemoryError e) {
                throw new CliException(String.format(Locale.ROOT, "[train] out of Java heap (%s) training %s in this JVM (max heap %d MB): train in the "
                        + "supervised worker (without --in-process) with --heap 8g, or give this JVM more with ANE4J_JAVA_OPTS=-Xmx8g",
                        e.getMessage(), spec.modelName(), Runtime.getRuntime().maxMemory() >> 20));
            }
            List<StepMetrics> h = run.history();
            Training training = run.training();
            progress.finish();
            if (session instanceof WorkerSession w) {
                Supervisor.Status st = w.supervisor().status();
                out.printf("worker: backend %s, %d compiles%s, %d restart%s%n", st.backend(), st.compileCount(), st.restarts() > 0 ? " in its last process" : "",
                        st.restarts(), st.restarts() == 1 ? "" : "s");
                // the worker holds the run's whole training state (11 GB for qwen3-0.6b): it exits before this JVM reads
                // the weights from the checkpoint for the sample and the export, so the two never add up
                w.close();
            } else if (run.restarts() > 0) {
                out.printf("in process: backend %s, %d restart%s at the compile budget%n", session.backendName(), run.restarts(), run.restarts() == 1 ? "" : "s");
            }
            if (run.state() == RunState.STOPPED && signals.received() != null) {
                Path checkpoint = training.checkpoint();
                long at = h.isEmpty() ? 0 : h.getLast().step() + 1;
                out.println("[train] stopped by " + signals.received() + " at step " + at + " of " + o.steps() + "; checkpoint " + checkpoint
                        + "; continue with: ane4j train --resume --run-dir " + o.runDir());
                run.close();
                return signals.exitCode();
            }
            if (h.isEmpty()) return 0;
            String ran = backendThatRan(o.runDir());
            if (ran != null) out.println("backend that ran: " + ran + " (run.json machine.backend)");
            if (o.graph() != null) {   // a graph run: its trained parameters as .npy (no sample, no export)
                GraphParams.write(o, h, (System.nanoTime() - t0) / 1e9, out);
                run.close();
                return 0;
            }
            long skippedUpdates = h.stream().filter(StepMetrics::skipped).count();
            if (skippedUpdates > 0)
                out.printf("skipped updates: %d of %d steps (a non-finite gradient; the loss scale halves each time)%n", skippedUpdates, h.size());
            // the weights are read once: in process the trainer's own, from a worker its newest readable checkpoint
            // (a second read only to check it would hold another 2.4 GB of qwen3-0.6b beside the trainer's 11 GB)
            Path checkpoints = o.runDir().resolve("checkpoints");
            if (Checkpoint.list(checkpoints).isEmpty()) throw new CliException("training ended without a checkpoint in " + checkpoints);
            Parameters params;
            try {
                params = training.parameters();
            } catch (IllegalStateException e) {
                throw new CliException("training ended without a readable checkpoint in " + checkpoints + " (" + e.getMessage() + ")");
            }
            describe(out, o, params.config(), params.data().length);
            double secs = (System.nanoTime() - t0) / 1e9;
            int window = Math.max(1, Math.min(10, h.size() / 2));
            float first = mean(h, 0, window), last = mean(h, h.size() - window, h.size());
            out.printf(Locale.ROOT, "loss %.3f → %.3f (mean of first/last %d steps) in %.1f s; metrics: %s%n", first, last, window, secs, o.runDir().resolve("metrics.jsonl"));
            String validation = validationSummary(h);
            if (validation != null) out.println(validation);
            out.println("loss plot: " + o.runDir().resolve("loss.png"));
            Tokenizer tokenizer = training.tokenizer();
            if (tokenizer != null && tokenizer.vocabSize() <= params.config().vocabSize()) {
                String sample = new Generator(params, tokenizer).generate("Once upon a time", Math.min(80, params.config().seqLen()), 0.8f, 0.9f, o.seed());
                out.println("sample: " + sample.replace('\n', ' '));
            } else {
                out.println("sample: skipped (no tokenizer matching the model: give --tokenizer FILE, or put it next to the data)");
            }
            if (o.lora() > 0) out.println("LoRA adapter (PEFT layout): " + Trainer.adapterDir(o) + "; the sample and the export below are the fused model");
            ExportCommand.exportRun(o.runDir(), params, tokenizer, out);
            run.close();
        }
        return 0;
    }

    /** The backend run.json records (after an automatic fallback, ref), or null when it cannot be read. */
    static String backendThatRan(Path runDir) {
        try {
            Object root = ane4j.model.Json.parse(Files.readString(runDir.resolve("run.json")));
            return root instanceof Map<?, ?> top && top.get("machine") instanceof Map<?, ?> m && m.get("backend") instanceof String b ? b : null;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** Where the run trains: this JVM ({@code --in-process}), else a supervised worker JVM started with the run's settings. */
    private static Session session(RunSpec spec, Progress progress) {
        if (spec.inProcess()) return new LocalSession(spec.newBackend());
        // the worker's INFO records (e.g. which BLAS it loaded, once per worker) are noise here; warnings pass
        return new WorkerSession(WorkerSession.workerOptions(spec, Supervisor.Options.defaults()
                .withLog(line -> { if (!line.startsWith("INFO: ")) progress.onMessage(line); }).withHints(Supervisor.Hints.CLI)));
    }

    private static void describe(PrintStream out, TrainOptions o, ModelConfig c, int nParams) {
        out.printf("model %s: %,d parameters (dim %d, %d layers, %d heads), seq %d, %s weights, %s storage, loss scaling %s%n",
                c.name(), nParams, c.dim(), c.nLayers(), c.nHeads(), c.seqLen(), o.weights(), o.storage(), o.lossScaling());
    }

    private static float mean(List<StepMetrics> h, int from, int to) {
        double sum = 0;
        for (int i = from; i < to; i++) sum += h.get(i).loss();
        return (float) (sum / Math.max(1, to - from));
    }

    /** "validation loss 2.314 (perplexity 10.1) after step 200; best 2.301 after step 150", or null without validation. */
    static String validationSummary(List<StepMetrics> h) {
        StepMetrics lastVal = null, best = null;
        for (StepMetrics m : h) {
            if (!m.validated()) continue;
            lastVal = m;
            if (best == null || m.valLoss() < best.valLoss()) best = m;
        }
        if (lastVal == null) return null;
        return String.format(Locale.ROOT, "validation loss %.3f (perplexity %.2f) after step %d; best %.3f after step %d",
                lastVal.valLoss(), Math.exp(lastVal.valLoss()), lastVal.step() + 1, best.valLoss(), best.step() + 1);
    }

    /**
     * The run's {@link ProgressLine}, rewritten in place on a terminal (the setup stages before it) and printed every
     * 10% otherwise.
     */
    static final class Progress implements Trainer.Listener {
        private final PrintStream out;
        private final boolean tty;
        private final ProgressLine line = new ProgressLine();   // the one step line of every face
        private long lastPrinted = -1;
        private boolean dirty;
        private int setupWidth;   // of the setup line on the terminal, which the first step line overwrites
        private long steps;       // of the run, for the setup line

        Progress(PrintStream out) {
            this(out, System.console() != null);
        }

        Progress(PrintStream out, boolean tty) {
            this.out = out;
            this.tty = tty;
        }

        /** On a terminal, before the first step: {@code step 0/40 · starting worker…}, {@code … compiling kernel 3/10 (ffnFused)…} in place. */
        @Override public void onSetup(SetupProgress p) {
            if (!tty || lastPrinted >= 0) return;
            String text = ProgressLine.beforeFirstStep(steps, p.line());
            out.print("\r" + text + " ".repeat(Math.max(0, setupWidth - text.length())));
            setupWidth = text.length();
            dirty = true;
        }

        /** The run's length, for the setup line. */
        Progress steps(long n) {
            steps = n;
            return this;
        }

        @Override public void onStep(StepMetrics m) {
            String text = line.add(m);
            long done = m.step() + 1;
            boolean every = done % Math.max(1, m.steps() / 10) == 0 || done == m.steps() || lastPrinted < 0;
            if (tty) {
                out.print("\r" + text + " ".repeat(Math.max(3, setupWidth - text.length())));
                setupWidth = 0;
                dirty = true;
            } else if (every) out.println(text);
            lastPrinted = done;
        }

        @Override public void onMessage(String line) {
            if (dirty) { out.println(); dirty = false; }
            out.println(line);
        }

        void finish() { if (dirty) { out.println(); dirty = false; } }
    }
}
