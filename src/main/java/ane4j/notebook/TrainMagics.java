package ane4j.notebook;

import ane4j.run.RunSpec;
import ane4j.run.TrainOptions;
import java.util.ArrayList;
import java.util.List;
import tech.tablesaw.api.Table;

/** {@code %%train}, {@code %train status|stop|resume|plot|table|record} and {@code %generate}. */
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
}
