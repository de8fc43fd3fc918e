package ane4j.cli;

import ane4j.backend.Backend;
import ane4j.backend.Backends;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.mil.MilException;
import ane4j.mil.Program;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code ane4j mil run FILE.mil --input x=x.npy … [--weights DIR] [--function NAME] --output DIR}: runs a program on the selected backend. */
@Command(name = "run", sortOptions = false, sortSynopsis = false, description = "Run a MIL program on .npy inputs with the selected backend; one NAME.npy per output.")
final class MilRunCommand implements Callable<Integer> {
    @Mixin Cli.HelpOption help;
    @Parameters(paramLabel = "FILE.mil", description = "the program") Path mil;
    @Option(names = "--input", paramLabel = "NAME=FILE.npy", description = "an input of the function (once per input)") Map<String, Path> inputs = new LinkedHashMap<>();
    @Option(names = "--output", paramLabel = "DIR", required = true, description = "where the outputs are written") Path output;
    @Option(names = "--weights", paramLabel = "DIR", description = "read weights from DIR/weights/… (default: the directory of FILE.mil)") Path weights;
    @Option(names = "--function", paramLabel = "NAME", description = "the function to run (default: main)") String function;
    private final PrintStream out;

    MilRunCommand(PrintStream out) { this.out = out; }

    @Override
    public Integer call() {
        Program p = MilCommand.readSource(mil, weights).program();   // one-line errors naming FILE:line:col
        try {
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
