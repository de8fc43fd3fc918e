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

/** {@code ane4j mil check FILE.mil [--weights DIR | --no-weights] [--chip m1…m5]} and {@code ane4j mil fmt FILE.mil [--dialect ios16|ios18]}. */
final class MilCommand {
    private MilCommand() {}

    static final String USAGE = """
              mil check FILE.mil [--weights DIR | --no-weights] [--chip m1|m2|m3|m4|m5]
                                        parse a MIL program, check every op's shapes and its weight files
                                        (read from DIR/weights/…, default: the directory of FILE.mil); print a summary;
                                        with --chip also every chip-rule violation (line:col, limit, source);
                                        exit status 1 when one is an error
              mil fmt FILE.mil [--dialect ios16|ios18]
                                        print the program in canonical form""";

    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0) throw new CliException("expected 'check', 'fmt' or 'run' (usage: ane4j mil check FILE.mil)");
        String sub = args[0];
        if (sub.equals("run")) return MilRunCommand.run(java.util.Arrays.copyOfRange(args, 1, args.length), out);
        if (!sub.equals("check") && !sub.equals("fmt")) throw new CliException("unknown subcommand '" + sub + "' (check, fmt or run)");
        String file = null, weights = null, dialect = null, chipName = null;
        boolean noWeights = false;
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--weights" -> weights = value(args, ++i, a);
                case "--no-weights" -> noWeights = true;
                case "--dialect" -> dialect = value(args, ++i, a);
                case "--chip" -> chipName = value(args, ++i, a);
                default -> {
                    if (a.startsWith("--")) throw new CliException("unknown option '" + a + "'");
                    if (file != null) throw new CliException("one file at a time (got '" + file + "' and '" + a + "')");
                    file = a;
                }
            }
        }
        if (file == null) throw new CliException("no file given (usage: ane4j mil " + sub + " FILE.mil)");
        Chip chip = null;
        if (chipName != null) {
            if (!sub.equals("check")) throw new CliException("--chip goes with 'mil check'");
            try {
                chip = Chip.parse(chipName);
            } catch (IllegalArgumentException e) {
                throw new CliException(e.getMessage().replace("[chip] ", ""));
            }
        }
        Path path = Path.of(file);
        String text;
        try {
            text = MilParser.readText(path);
        } catch (MilException e) {
            throw new CliException(e.getMessage());
        }
        Path modelDir = noWeights || sub.equals("fmt") ? null : weights != null ? Path.of(weights) : absoluteParent(path);
        MilParser.Parsed parsed;
        try {
            parsed = MilParser.parseDetailed(text, modelDir);
        } catch (MilParseException e) {
            err.println(e.line() > 0 ? file + ":" + e.getMessage() : file + ": " + e.getMessage());
            return 1;
        }
        if (sub.equals("fmt")) {
            Dialect d = parsed.dialect();
            if (dialect != null) {
                try {
                    d = Dialect.parse(dialect);
                } catch (MilException e) {
                    throw new CliException(e.getMessage());
                }
            }
            try {
                out.print(MilWriter.write(parsed.program(), d));
            } catch (MilException e) {
                throw new CliException(e.getMessage());
            }
            return 0;
        }
        for (String w : parsed.warnings()) err.println(file + ": warning: " + w);
        summary(file, parsed, modelDir, out);
        return chip == null ? 0 : chipRules(file, text, parsed.program(), chip, out);
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

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) throw new CliException(option + " needs a value");
        return args[i];
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
