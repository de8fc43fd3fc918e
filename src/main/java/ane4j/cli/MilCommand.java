package ane4j.cli;

import ane4j.chip.Chip;
import ane4j.chip.ChipRules;
import ane4j.chip.Violation;
import ane4j.mil.Dialect;
import ane4j.mil.Function;
import ane4j.mil.MilException;
import ane4j.mil.MilParseException;
import ane4j.mil.MilParser;
import ane4j.mil.MilWriter;
import ane4j.mil.Operation;
import ane4j.mil.Program;
import ane4j.mil.Value;
import ane4j.mil.Weights;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ane4j mil check FILE.mil [--weights DIR | --no-weights] [--chip m1…m5]}, {@code mil fmt FILE.mil [--dialect ios16|ios18]},
 * {@code mil run}, {@code mil grad}, {@code mil split} and {@code mil emit --model NAME [--weights dynamic|static] [--os 26|27] --out DIR}.
 */
@Command(name = "mil", description = "MIL programs: mil check FILE.mil, mil fmt FILE.mil, mil run FILE.mil --input x=x.npy --output DIR, mil grad FILE.mil --loss L --wrt A,B --out DIR, mil split FILE.mil --chip m1 --out DIR, mil emit --model NAME --out DIR")
final class MilCommand implements Callable<Integer> {
    @Mixin Cli.HelpOption help;

    @Override
    public Integer call() { throw new CliException("expected 'check', 'fmt', 'run', 'grad', 'split' or 'emit' (usage: ane4j mil check FILE.mil)"); }

    /** The {@code mil} command with its three subcommands. */
    static CommandLine commandLine(PrintStream out, PrintStream err) {
        return new CommandLine(new MilCommand()).addSubcommand(new Check(out, err)).addSubcommand(new Fmt(out, err))
                .addSubcommand(new MilRunCommand(out)).addSubcommand(new MilGradCommand(out)).addSubcommand(new MilSplitCommand(out)).addSubcommand(new Emit(out));
    }

    @Command(name = "emit", sortOptions = false, sortSynopsis = false, description = {"Write every training kernel of a model as it would be handed to",
            "Apple's compiler: DIR/<kernel>/model.mil and DIR/<kernel>/weights/… (for bug reports and review)."})
    static final class Emit implements Callable<Integer> {
        @Mixin Cli.HelpOption help;
        @Option(names = "--model", paramLabel = "NAME", required = true, description = "a preset (tiny, stories15m, …, qwen3-0.6b) or a .conf file") String model;
        @Option(names = "--weights", paramLabel = "dynamic|static", defaultValue = "dynamic",
                description = "dynamic: weights are input columns (the default); static: baked in as BLOBFILE constants (zeros here)") String weights;
        @Option(names = "--os", paramLabel = "26|27", defaultValue = "26", description = "the macOS whose rules apply: 27 packs every program's weights into one weight.bin") int os;
        @Option(names = "--dialect", paramLabel = "ios16|ios18", defaultValue = "ios18", description = "the MIL dialect (default ${DEFAULT-VALUE})") String dialect;
        @Option(names = "--three-stage", description = "three-stage attention (sdpaFwd stops at the scores; attnValues added)") boolean threeStage;
        @Option(names = "--out", paramLabel = "DIR", required = true, description = "the directory to write") String outDir;
        private final PrintStream out;

        Emit(PrintStream out) { this.out = out; }

        @Override
        public Integer call() {
            if (!weights.equals("dynamic") && !weights.equals("static"))
                throw new CliException("--weights " + weights + " is not dynamic or static");
            if (os != 15 && os != 26 && os != 27) throw new CliException("--os " + os + " is not 15, 26 or 27");
            ane4j.model.ModelConfig c;
            try {
                Path f = Path.of(model);
                c = java.nio.file.Files.isRegularFile(f) ? ane4j.model.ModelConfig.load(f) : ane4j.model.ModelConfig.parse(model);
            } catch (IllegalArgumentException e) {
                throw new CliException(e.getMessage());
            }
            Dialect d;
            try {
                d = Dialect.parse(dialect);
            } catch (MilException | IllegalArgumentException e) {
                throw new CliException(e.getMessage());
            }
            ane4j.model.ModelConfig cfg = c;
            ane4j.train.TrainingKernels k = new ane4j.train.TrainingKernels(cfg, ane4j.mil.DType.FP16,
                    weights.equals("static") ? seg -> new float[staticBlock(cfg, seg)] : null, threeStage);
            Path dir = Path.of(outDir);
            int total = 0, most = 0;
            for (ane4j.train.TrainingKernels.Spec spec : k.all()) {
                Program p = os >= 27 ? spec.program().packedWeights(ane4j.backend.ane.AneBackend.PACKED_WEIGHT_FILE) : spec.program();
                Path kd = dir.resolve(spec.name());
                try {
                    java.nio.file.Files.createDirectories(kd);
                    String text = MilWriter.write(p, d);
                    java.nio.file.Files.writeString(kd.resolve("model.mil"), text);
                    p.weights().writeTo(kd);
                    int files = p.weights().files().size();
                    total += files;
                    most = Math.max(most, files);
                    out.printf("%-11s model.mil %6.1f KB, %d weight file%s, input %s%n", spec.name(), text.length() / 1024.0, files, files == 1 ? "" : "s",
                            p.main().inputs().get(0).type());
                } catch (java.io.IOException e) {
                    throw new CliException("cannot write " + kd + ": " + e.getMessage());
                }
            }
            out.println(cfg.name() + ", " + weights + " weights, macOS " + os + " rules, " + d.name().toLowerCase(java.util.Locale.ROOT) + ": " + k.all().size()
                    + " kernels, " + total + " weight files in all, at most " + most + " per kernel → " + dir.toAbsolutePath());
            return 0;
        }

        /** The element count of a static weight segment (the block as staged: wqT = (D, Q), …); values are zeros. */
        static int staticBlock(ane4j.model.ModelConfig c, String seg) {
            return switch (seg) {
                case "qNorm", "kNorm" -> c.headDim();
                case "wqT", "wq" -> c.dim() * c.qDim();
                case "wkT", "wvT", "wk", "wv" -> c.dim() * c.kvDim();
                case "woT", "wo" -> c.qDim() * c.dim();
                case "w1T", "w3T", "w1", "w3", "w2" -> c.dim() * c.hiddenDim();
                default -> throw new CliException("no static weight segment " + seg);
            };
        }
    }

    @Command(name = "check", sortOptions = false, sortSynopsis = false, description = {"Parse a MIL program, check every op's shapes and its weight files and print a summary;",
            "with --chip also every chip-rule violation (line:col, limit, source); exit status 1 when one is an error."})
    static final class Check implements Callable<Integer> {
        @Mixin Cli.HelpOption help;
        @Parameters(paramLabel = "FILE.mil", description = "the program") String file;
        @Option(names = "--weights", paramLabel = "DIR", description = "read weights from DIR/weights/… (default: the directory of FILE.mil)") String weights;
        @Option(names = "--no-weights", description = "do not read weight files") boolean noWeights;
        @Option(names = "--chip", paramLabel = "m1|m2|m3|m4|m5", description = "also check the rules of Apple's compiler on this chip") String chip;
        private final PrintStream out, err;

        Check(PrintStream out, PrintStream err) {
            this.out = out;
            this.err = err;
        }

        @Override
        public Integer call() {
            Chip c = null;
            if (chip != null) {
                try {
                    c = Chip.parse(chip);
                } catch (IllegalArgumentException e) {
                    throw new CliException(e.getMessage().replace("[chip] ", ""));
                }
            }
            Path path = Path.of(file);
            String text = read(path);
            Path modelDir = noWeights ? null : weights != null ? Path.of(weights) : absoluteParent(path);
            MilParser.Parsed parsed = parse(file, text, modelDir, err);
            if (parsed == null) return Cli.FAILED;
            for (String w : parsed.warnings()) err.println(file + ": warning: " + w);
            summary(file, parsed, modelDir, out);
            return c == null ? 0 : chipRules(file, text, parsed.program(), c, out);
        }
    }

    @Command(name = "fmt", description = "Print the program in canonical form.")
    static final class Fmt implements Callable<Integer> {
        @Mixin Cli.HelpOption help;
        @Parameters(paramLabel = "FILE.mil", description = "the program") String file;
        @Option(names = "--dialect", paramLabel = "ios16|ios18", description = "the dialect to write (default: the file's)") String dialect;
        private final PrintStream out, err;

        Fmt(PrintStream out, PrintStream err) {
            this.out = out;
            this.err = err;
        }

        @Override
        public Integer call() {
            MilParser.Parsed parsed = parse(file, read(Path.of(file)), null, err);
            if (parsed == null) return Cli.FAILED;
            try {
                out.print(MilWriter.write(parsed.program(), dialect != null ? Dialect.parse(dialect) : parsed.dialect()));
            } catch (MilException e) {
                throw new CliException(e.getMessage());
            }
            return 0;
        }
    }

    /** A MIL file's text and parse, its weights read from {@code weights}/weights/… (null: the file's folder). */
    record Source(String text, MilParser.Parsed parsed) {
        Program program() { return parsed.program(); }
    }

    /** Reads and parses {@code mil} for a subcommand (grad, split): each failure is one line naming the file and, where known, line:col. */
    static Source readSource(Path mil, Path weights) {
        String text = read(mil);
        try {
            return new Source(text, MilParser.parseDetailed(text, weights != null ? weights : absoluteParent(mil)));
        } catch (MilParseException e) {
            throw new CliException(mil + (e.line() > 0 ? ":" : ": ") + e.getMessage());
        } catch (MilException e) {
            throw new CliException(mil + ": " + e.getMessage());
        }
    }

    private static String read(Path path) {
        try {
            return MilParser.readText(path);
        } catch (MilException e) {
            throw new CliException(e.getMessage());
        }
    }

    /** The parsed program, or null after printing {@code FILE:line:col: …} on {@code err}. */
    private static MilParser.Parsed parse(String file, String text, Path modelDir, PrintStream err) {
        try {
            return MilParser.parseDetailed(text, modelDir);
        } catch (MilParseException e) {
            err.println(e.line() > 0 ? file + ":" + e.getMessage() : file + ": " + e.getMessage());
            return null;
        }
    }

    /** Lists every violation of {@code chip}'s rules as {@code FILE:line:col: severity [rule] …}; 1 when one is an error. */
    static int chipRules(String file, String text, Program program, Chip chip, PrintStream out) {
        List<Violation> vs = ChipRules.check(text, program, chip);
        long errors = vs.stream().filter(Violation::isError).count();
        for (Violation v : vs) out.println(file + (v.line() > 0 ? ":" : ": ") + v.format());
        out.println("  chip       " + chip + ": " + errors + " error" + (errors == 1 ? "" : "s") + ", "
                + (vs.size() - errors) + " warning" + (vs.size() - errors == 1 ? "" : "s") + " and note" + (vs.size() - errors == 1 ? "" : "s")
                + (errors > 0 ? " — Apple's compiler would refuse this program (\"ANECCompile() FAILED\")" : ""));
        return errors > 0 ? 1 : 0;
    }

    private static Path absoluteParent(Path p) {
        Path parent = p.toAbsolutePath().getParent();
        return parent != null ? parent : Path.of(".");
    }

    static void summary(String file, MilParser.Parsed parsed, Path modelDir, PrintStream out) {
        Program p = parsed.program();
        out.println(file + ": ok");
        out.println("  dialect    program(" + parsed.programVersion() + "), " + (parsed.dialect() == Dialect.IOS16 ? "verbose scalars (M1/M2)" : "short scalars (M3 and later)")
                + ", needs opset " + p.requiredOpset().milName());
        for (Function f : p.functions().values()) {
            out.println("  func " + f.name() + "<" + parsed.opsets().get(f.name()).milName() + ">");
            for (Value v : f.inputs()) out.println("    input    " + v.name() + ": " + MilWriter.type(v.type(), Dialect.IOS18));
            for (Value v : f.outputs()) out.println("    output   " + v.name() + ": " + MilWriter.type(v.type(), Dialect.IOS18));
            Map<String, Integer> counts = new TreeMap<>();
            for (Operation o : f.operations()) counts.merge(o.op().milName(), 1, Integer::sum);
            StringBuilder sb = new StringBuilder();
            counts.forEach((k, v) -> sb.append(sb.isEmpty() ? "" : ", ").append(k).append(' ').append(v));
            out.println("    ops      " + f.operations().size() + (counts.isEmpty() ? "" : ": " + sb));
        }
        Set<String> paths = MilParser.blobPaths(p);
        if (paths.isEmpty()) out.println("  weights    none");
        for (String w : paths) {
            Weights.File f = p.weights().files().get(w);
            String state = f == null ? "not read (--no-weights)"
                    : f.blobs().size() + " blob" + (f.blobs().size() == 1 ? "" : "s") + ", " + f.blobs().stream().mapToLong(b -> b.data().length).sum() + " bytes, checked";
            out.println("  weights    " + w + (modelDir != null && f != null ? " → " + modelDir.resolve(f.relativePath()) : "") + ": " + state);
        }
    }
}
