package ane4j.cli;

import ane4j.backend.Backend;
import ane4j.backend.Backends;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.mil.MilException;
import ane4j.mil.MilParser;
import ane4j.mil.Program;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/** {@code ane4j mil run FILE.mil --input x=x.npy … [--weights DIR] [--function NAME] --output DIR}: runs a program on the selected backend. */
final class MilRunCommand {
    private MilRunCommand() {}

    static final String USAGE = "ane4j mil run FILE.mil --input NAME=FILE.npy ... [--weights DIR] [--function NAME] --output DIR";

    static int run(String[] args, PrintStream out) {
        if (args.length == 0) throw new CliException("missing FILE.mil; usage: " + USAGE);
        Path mil = Path.of(args[0]);
        Map<String, Path> inputs = new LinkedHashMap<>();
        Path weights = null, output = null;
        String function = null;
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) throw new CliException("option " + a + " needs a value; usage: " + USAGE);
            String v = args[++i];
            switch (a) {
                case "--input" -> {
                    int eq = v.indexOf('=');
                    if (eq <= 0) throw new CliException("--input wants NAME=FILE.npy, got '" + v + "'");
                    inputs.put(v.substring(0, eq), Path.of(v.substring(eq + 1)));
                }
                case "--weights" -> weights = Path.of(v);
                case "--output" -> output = Path.of(v);
                case "--function" -> function = v;
                default -> throw new CliException("unknown option " + a + "; usage: " + USAGE);
            }
        }
        if (output == null) throw new CliException("missing --output DIR; usage: " + USAGE);
        String text;
        try {
            text = MilParser.readText(mil);
        } catch (MilException e) {
            throw new CliException(e.getMessage());
        }
        Path dir = weights != null ? weights : mil.toAbsolutePath().getParent();
        try {
            Program p = MilParser.parse(text, dir);
            return run(p, function, inputs, output, Backends.select(), out);
        } catch (MilException e) {
            throw new CliException(e.getMessage());
        }
    }

    /** Runs {@code p} with inputs from .npy files and writes one {@code <output>.npy} per output into {@code outDir}. */
    static int run(Program p, String function, Map<String, Path> inputs, Path outDir, Backend backend, PrintStream out) {
        try (Kernel k = function == null ? backend.compile(p) : backend.compile(p, function)) {
            Map<String, TensorBuffer> in = new LinkedHashMap<>();
            for (TensorSpec s : k.inputs()) {
                Path f = inputs.get(s.name());
                if (f == null) throw new CliException("missing --input " + s.name() + "=FILE.npy (" + s.type() + ")");
                in.put(s.name(), Npy.read(f, s.type(), s.name()));
            }
            for (String n : inputs.keySet())
                if (in.get(n) == null) throw new CliException("the function has no input '" + n + "' (inputs: " + k.inputs().stream().map(TensorSpec::name).toList() + ")");
            Map<String, TensorBuffer> res = k.evaluate(in);
            Files.createDirectories(outDir);
            for (var e : res.entrySet()) {
                Path f = outDir.resolve(e.getKey() + ".npy");
                Npy.write(f, e.getValue());
                out.println(e.getKey() + " " + e.getValue().type() + " -> " + f);
            }
            return 0;
        } catch (IOException e) {
            throw new CliException("cannot write to " + outDir + ": " + e.getMessage());
        } catch (ane4j.backend.BackendException | IllegalArgumentException e) {
            throw new CliException(e.getMessage());
        }
    }
}
