package ane4j.cli;

import ane4j.mil.MilException;
import ane4j.mil.MilParser;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.mil.Value;
import ane4j.mil.grad.Grad;
import ane4j.mil.grad.GradException;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ane4j mil grad PROGRAM.mil --loss NAME --wrt A,B --out DIR}: writes the gradient program (the forward replayed,
 * then the backward, see {@link Grad}) to {@code DIR/grad.mil}, with the forward's weight files beside it, so that
 * {@code ane4j mil run DIR/grad.mil --input A=a.npy … [--input d_<loss>=g.npy] --output O} writes {@code O/d_A.npy}.
 */
@Command(name = "grad", sortOptions = false, sortSynopsis = false, description = {"Differentiate a MIL function: write DIR/grad.mil whose outputs are the loss and d_<w> for each --wrt input;",
        "its inputs are the program's, plus d_<loss> (the upstream gradient) when the loss has more than one element."})
final class MilGradCommand implements Callable<Integer> {
    @Mixin Cli.HelpOption help;
    @Parameters(paramLabel = "PROGRAM.mil", description = "the forward program") Path mil;
    @Option(names = "--loss", paramLabel = "NAME", required = true, description = "the output to differentiate") String loss;
    @Option(names = "--wrt", paramLabel = "A,B", required = true, split = ",", description = "the inputs to differentiate with respect to") List<String> wrt;
    @Option(names = "--out", paramLabel = "DIR", required = true, description = "where grad.mil (and its weights) are written") Path out;
    @Option(names = "--function", paramLabel = "NAME", description = "the function to differentiate (default: main)") String function;
    @Option(names = "--weights", paramLabel = "DIR", description = "read weights from DIR/weights/… (default: the directory of PROGRAM.mil)") Path weights;
    private final PrintStream stdout;

    MilGradCommand(PrintStream out) { this.stdout = out; }

    @Override
    public Integer call() {
        MilCommand.Source source = MilCommand.readSource(mil, weights);
        String text = source.text();
        MilParser.Parsed parsed = source.parsed();
        Program grad;
        try {
            grad = Grad.program(parsed.program(), function, loss, wrt, text);
        } catch (GradException e) {
            throw new CliException(mil + (e.line() > 0 ? ":" + e.line() + ":" + e.column() + ": " : ": ") + e.getMessage());
        } catch (MilException e) {
            throw new CliException(mil + ": " + e.getMessage());
        }
        Path file = out.resolve("grad.mil");
        try {
            Files.createDirectories(out);
            Files.writeString(file, MilWriter.write(grad, parsed.dialect().opset().compareTo(grad.requiredOpset()) >= 0 ? parsed.dialect() : ane4j.mil.Dialect.IOS18));
            grad.weights().writeTo(out);
        } catch (IOException e) {
            throw new CliException("cannot write to " + out + ": " + e.getMessage());
        }
        var f = grad.main();
        stdout.println(file + ": " + f.operations().size() + " ops");
        for (Value v : f.inputs()) stdout.println("  input    " + v.name() + ": " + v.type());
        for (Value v : f.outputs()) stdout.println("  output   " + v.name() + ": " + v.type());
        return 0;
    }

}
