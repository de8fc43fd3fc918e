package ane4j.notebook;

import ane4j.backend.TensorBuffer;
import ane4j.mil.Program;
import ane4j.run.RunSpec;
import ane4j.run.TrainOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The training magics: {@code %%train} (a preset), {@code %%fit} (a graph), {@code %train status|stop|resume|plot|table|record}
 * and {@code %generate}. {@code %%fit}'s cell holds the same {@code key = value} lines as {@code %%train}'s; its
 * {@code graph}, {@code data}, {@code valData} and {@code init} name notebook variables (a {@code Program}, maps of input →
 * {@code TensorBuffer} samples, a map of parameter → {@code float[]}) or files (a .mil file, folders of NAME.npy). Both
 * start an ordinary run of the session ({@link Ane#fit} for a graph given as variables).
 */
final class TrainMagics {

    @Magic(value = "train", cell = true, help = "%%train [NAME] [--background] — the cell holds key = value lines (the keys of ane4j train --help: "
            + "model, dim, nLayers …, data, steps, lr, seed, backend, storage, weights, runDir, resume, compileBudget, inProcess …); trains with a live "
            + "progress line and loss plot and ends with one summary; NAME binds the TrainingRun; --help lists the keys")
    Object trainCell(MagicCall call) {
        RunCell cell = RunCell.read(call, "train", true);
        if (cell.help()) return help();
        String name = cell.name();
        boolean background = cell.background();
        TrainingRun run;
        try {
            run = TrainingRun.start(Ane.session(), Ane.runSpec(RunSpec.parseText(cell.settings())));
        } catch (IllegalArgumentException e) {
            throw new MagicException(e.getMessage(), e);
        }
        if (name != null) call.bind(name, TrainingRun.class, run);
        TrainOptions o = run.options();
        System.out.println("training " + (o.init() != null ? o.init() : o.model()) + " on " + (o.backend() != null ? o.backend() : Ane.status().backend()) + ": " + o.steps()
                + " steps, seed " + o.seed() + ", " + o.weights() + " weights" + (run.compileBudget() != null ? ", compile budget " + run.compileBudget() : "")
                + ", run dir " + o.runDir());
        if (background) return "running in the background: %train status, %train plot, %train stop";
        return run.followInNotebook(call.kernel());
    }

    @Magic(value = "fit", cell = true, help = "%%fit [NAME] — train a graph: the cell holds key = value lines as %%train's, with graph = a Program variable or FILE.mil, "
            + "data = a Map<String, TensorBuffer> variable (input → samples along the first axis) or a folder of NAME.npy, optional valData, init "
            + "(Map<String, float[]> or folder), loss, steps, lr …; shows the live progress line and loss plot; NAME binds the Fit")
    Object fitCell(MagicCall call) {
        RunCell cell = RunCell.read(call, "fit", false);
        if (cell.help()) return fitHelp();
        String name = cell.name();
        Fit fit;
        try {
            Map<String, String> keys = RunSpec.parseText(cell.settings()), rest = new LinkedHashMap<>();
            Map<String, Object> objects = new LinkedHashMap<>();
            for (var e : keys.entrySet()) {
                String k = RunSpec.KEYS.canonical(e.getKey());
                if (k != null && FitFiles.OBJECT_KEYS.contains(k) && isVariable(e.getValue())) objects.put(k, variable(call, e.getValue(), k));
                else rest.put(e.getKey(), e.getValue());
            }
            if (objects.isEmpty()) {
                // files only: an ordinary graph run
                TrainingRun run = TrainingRun.start(Ane.session(), Ane.runSpec(rest));
                run.followInNotebook(call.kernel());
                fit = new Fit(run);
            } else {
                if (!(objects.get("graph") instanceof Program graph))
                    throw new IllegalArgumentException("[%%fit] graph = a Program variable is needed with data, valData or init given as variables (or give files for all of them)");
                for (String k : FitFiles.OBJECT_KEYS)
                    if (keys.keySet().stream().map(RunSpec.KEYS::canonical).anyMatch(k::equals) && !objects.containsKey(k))
                        throw new IllegalArgumentException("[%%fit] " + k + " is a file while graph is a variable; give " + k + " as a notebook variable too");
                TrainingRun run = FitFiles.start(Ane.session(), graph, samples(objects.get("data"), "data"), samples(objects.get("valData"), "valData"),
                        init(objects.get("init")), rest);
                run.followInNotebook(call.kernel());
                fit = new Fit(run);
            }
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new MagicException(e.getMessage(), e);
        }
        if (name != null) call.bind(name, Fit.class, fit);
        return fit.run().summary();
    }

    /**
     * A {@code %%train} or {@code %%fit} cell read once: its first line's {@code [NAME] [--background] [key=value …]} and the
     * body's {@code key = value} lines after them, as one settings text; {@code help} when the first line asks for it.
     * Refused in one line: a second name, a flag the magic does not take, or a run still running in the session.
     */
    private record RunCell(String name, boolean background, boolean help, String settings) {

        static RunCell read(MagicCall call, String magic, boolean takesBackground) {
            String name = null;
            boolean background = false;
            StringBuilder settings = new StringBuilder();
            for (String a : call.args()) {
                if (a.equals("--help") || a.equals("-h")) return new RunCell(null, false, true, "");
                if (takesBackground && a.equals("--background")) background = true;
                else if (a.contains("=")) settings.append(a).append('\n');
                else if (name == null && !a.startsWith("-")) name = a;
                else throw new MagicException("[%%" + magic + "] unexpected argument '" + a + "'; the first line takes [NAME]"
                        + (takesBackground ? " [--background]" : "") + ", the cell key = value lines");
            }
            settings.append(call.body());
            TrainingRun cur = TrainingRun.current();
            if (cur != null && cur.running())
                throw new MagicException("[%%" + magic + "] a run is still running (" + cur.progressLine() + "); %train stop first");
            return new RunCell(name, background, false, settings.toString());
        }
    }

    @Magic(value = "train", atOnce = {"stop", "status"}, help = "%train status|stop|resume|plot [log]|table|record|help — the current training run (plot log: a log-scale loss axis; table: every step; record: run.txt with seed, backend, JDK, OS; help: the keys of %%train)")
    Object train(MagicCall call) {
        String what = call.args().isEmpty() ? "status" : call.args().getFirst();
        if (what.equals("help") || what.equals("--help") || what.equals("-h")) return help();
        TrainingRun run = TrainingRun.current();
        // stop and status answer at once while a run runs (the cell following it ends with its summary); else in turn
        if (call.answeredAtOnce() && (run == null || !run.running())) return MagicCall.IN_TURN;
        if (run == null) throw new MagicException("[%train] no training run yet; start one with %%train (%train help lists its keys)");
        return switch (what) {
            case "status" -> run.status();
            case "stop" -> {
                if (!run.running()) yield "not running: " + run.progressLine();
                if (call.answeredAtOnce()) yield run.stopFromCell(call.atOnceCount());
                run.stop().await();
                yield "stopped at step " + run.lastStep() + "/" + run.options().steps() + "; %train resume continues";
            }
            case "resume" -> {
                try {
                    run.resume();
                } catch (IllegalStateException e) {
                    throw new MagicException(e.getMessage());
                }
                yield run.followInNotebook(call.kernel());
            }
            case "plot" -> {
                if (run.history().isEmpty()) throw new MagicException("[%train] no steps yet to plot");
                yield run.logScale(call.args().contains("log") || call.args().contains("--log")).chart();
            }
            case "table", "metrics" -> run.table();
            case "record" -> run.runTable();
            default -> throw new MagicException("[%train] unknown '" + what + "'; use status, stop, resume, plot, table, record or help");
        };
    }

    /** How to train from a notebook: the cell's form, the subcommands and every key with its default (from the key table). */
    static String help() {
        StringBuilder sb = new StringBuilder("""
                %%train [NAME] [--background] [key=value …]
                  the cell holds key = value lines (or ; between them, # comments); trains with a live progress line and
                  loss plot and ends with a summary; NAME binds the run (a TrainingRun) for the next cells
                %train status | stop | resume | plot [log] | table | record | help
                  stop ends a running run after its current step (also from another cell); resume continues it;
                  table is the per-step metrics, record the run record (run.txt)
                keys (default):
                """);
        List<String> left = RunSpec.KEYS.keys().stream().map(k -> k.name() + " = " + (k.defaultValue().isEmpty() ? "…" : k.defaultValue())).toList();
        int w = left.stream().mapToInt(String::length).max().orElse(0);
        for (int i = 0; i < left.size(); i++)
            sb.append("  ").append(left.get(i)).append(" ".repeat(w - left.get(i).length())).append("  ").append(RunSpec.KEYS.keys().get(i).help()).append('\n');
        return sb.toString().stripTrailing();
    }

    /** The options of {@code %generate}, read by picocli as the CLI's commands are. */
    @picocli.CommandLine.Command(name = "%generate")
    static final class GenerateArgs {
        @picocli.CommandLine.Parameters(paramLabel = "PROMPT") List<String> words = new ArrayList<>();
        @picocli.CommandLine.Option(names = "--tokens") int tokens = 64;
        @picocli.CommandLine.Option(names = "--temperature") float temperature = 0.8f;
        @picocli.CommandLine.Option(names = {"--top-p", "--topP"}) float topP = 0.9f;
        @picocli.CommandLine.Option(names = "--seed") long seed = 42;
        @picocli.CommandLine.Option(names = "--backend") String backend = "cpu";
        @picocli.CommandLine.Option(names = "--decode") String decode;
    }

    /** {@code %generate}'s arguments; a bad one is one line naming it. */
    static GenerateArgs parseGenerate(List<String> args) {
        GenerateArgs g = new GenerateArgs();
        try {
            new picocli.CommandLine(g).setUnmatchedOptionsArePositionalParams(false).parseArgs(args.toArray(String[]::new));
        } catch (picocli.CommandLine.UnmatchedArgumentException e) {
            throw new MagicException("[%generate] unknown option " + e.getUnmatched().getFirst() + "; use --tokens, --temperature, --top-p, --seed, --backend, --decode");
        } catch (picocli.CommandLine.ParameterException e) {
            throw new MagicException("[%generate] " + e.getMessage().replace('\n', ' '));
        }
        return g;
    }

    @Magic(value = "generate", help = "%generate [PROMPT] [--tokens N] [--temperature T] [--top-p P] [--seed S] [--backend cpu|ane|ref] [--decode backend|cpu] — text from the current model (on the CPU, or prefilled on the session's backend)")
    String generate(MagicCall call) {
        GenerateArgs g = parseGenerate(call.args());
        String prompt = g.words.isEmpty() ? "Once upon a time" : String.join(" ", g.words);
        try {
            return Ane.generate(prompt, g.tokens, g.temperature, g.topP, g.seed, g.backend, g.decode);
        } catch (IllegalStateException | IllegalArgumentException e) {
            throw new MagicException(e.getMessage().replace("[generate]", "[%generate]"));
        }
    }

    /** The cell's form, then the keys of the run table (those of %%train). */
    static String fitHelp() {
        String keys = help();
        return """
                %%fit [NAME] [key=value …]
                  trains a graph as %%train trains a preset: the cell holds key = value lines (or ; between them, # comments);
                  graph = a Program variable or FILE.mil; data = a Map<String, TensorBuffer> variable (each data input → its
                  samples along the first axis) or a folder of NAME.npy; valData likewise (default: the last valFraction of
                  data); init = a Map<String, float[]> variable or a folder of NAME.npy (parameters left out start from seed);
                  loss, params and the run keys below. Shows the live progress line and loss plot; NAME binds the Fit
                  (its run(), params(), apply(predictGraph, data)); %train status | stop | resume | plot serve the run
                """ + keys.substring(keys.indexOf("keys (default):"));
    }

    /** A Java identifier that is not a file or folder here: a notebook variable. */
    private static boolean isVariable(String v) {
        return v.matches("[A-Za-z_$][A-Za-z0-9_$]*") && !Files.exists(Path.of(v));
    }

    private static Object variable(MagicCall call, String name, String key) {
        Object v;
        try {
            v = call.eval(name);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("[%%fit] " + key + " = " + name + ": no such notebook variable or file (" + firstLine(e.getMessage()) + ")");
        }
        if (v == null) throw new IllegalArgumentException("[%%fit] " + key + " = " + name + " is null");
        return v;
    }

    private static String firstLine(String s) { return s == null ? "" : s.lines().findFirst().orElse(""); }

    @SuppressWarnings("unchecked")
    private static Map<String, TensorBuffer> samples(Object o, String key) {
        if (o == null) return null;
        if (o instanceof Map<?, ?> m && m.values().stream().allMatch(x -> x instanceof TensorBuffer) && m.keySet().stream().allMatch(x -> x instanceof String))
            return (Map<String, TensorBuffer>) m;
        throw new IllegalArgumentException("[%%fit] " + key + " must be a Map<String, TensorBuffer> (input → samples along the first axis), not " + o.getClass().getSimpleName());
    }

    @SuppressWarnings("unchecked")
    private static Map<String, float[]> init(Object o) {
        if (o == null) return null;
        if (o instanceof Map<?, ?> m && m.values().stream().allMatch(x -> x instanceof float[]) && m.keySet().stream().allMatch(x -> x instanceof String))
            return (Map<String, float[]>) m;
        throw new IllegalArgumentException("[%%fit] init must be a Map<String, float[]> (parameter → starting values), not " + o.getClass().getSimpleName());
    }
}
