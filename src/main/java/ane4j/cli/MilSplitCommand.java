package ane4j.cli;

import ane4j.chip.Chip;
import ane4j.chip.ProgramSplit;
import ane4j.mil.Dialect;
import ane4j.mil.MilParser;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ane4j mil split PROGRAM.mil --chip m1 --out DIR [--max-ops N]}: cuts the program at op boundaries
 * ({@link ProgramSplit}) into DIR/part&lt;i&gt;.mil, each ANE part clean for {@code mil check --chip}, and lists every
 * part's place (ane or cpu) and interface in DIR/parts.txt.
 */
@Command(name = "split", sortOptions = false, sortSynopsis = false, description = {"Cut a MIL function the chip would refuse at op boundaries into consecutive programs DIR/part<i>.mil:",
        "every 'ane' part passes mil check --chip; ops no cut makes legal (past the axis cap …) form 'cpu' parts; DIR/parts.txt lists their interfaces."})
final class MilSplitCommand implements Callable<Integer> {
    @Mixin Cli.HelpOption help;
    @Parameters(paramLabel = "PROGRAM.mil", description = "the program (its main function)") Path mil;
    @Option(names = "--chip", paramLabel = "m1|m2|m3|m4|m5", required = true, description = "the chip whose rules decide the cuts") String chip;
    @Option(names = "--out", paramLabel = "DIR", required = true, description = "where part<i>.mil and parts.txt are written") Path out;
    @Option(names = "--max-ops", paramLabel = "N", description = "also cut an ANE part after N ops (constants not counted)") Integer maxOps;
    @Option(names = "--weights", paramLabel = "DIR", description = "read weights from DIR/weights/… (default: the directory of PROGRAM.mil)") Path weights;
    private final PrintStream stdout;

    MilSplitCommand(PrintStream out) { this.stdout = out; }

    @Override
    public Integer call() {
        Chip c;
        try {
            c = Chip.parse(chip);
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage().replace("[chip] ", ""));
        }
        if (maxOps != null && maxOps < 1) throw new CliException("[split] --max-ops " + maxOps + " must be at least 1");
        MilParser.Parsed parsed = MilCommand.readSource(mil, weights).parsed();
        Program p = parsed.program();
        List<ProgramSplit.Part> parts = ProgramSplit.split(p, c, maxOps == null ? Integer.MAX_VALUE : maxOps);
        StringBuilder list = new StringBuilder();
        try {
            Files.createDirectories(out);
            for (int i = 0; i < parts.size(); i++) {
                ProgramSplit.Part part = parts.get(i);
                Program prog = part.program();
                Dialect d = parsed.dialect().opset().compareTo(prog.requiredOpset()) >= 0 ? parsed.dialect() : Dialect.IOS18;
                Files.writeString(out.resolve("part" + i + ".mil"), MilWriter.write(prog, d));
                long ops = prog.main().operations().stream().filter(o -> o.op() != ane4j.mil.Op.CONST).count();
                String line = String.format(Locale.ROOT, "part%d.mil %s %d ops  inputs: %s  outputs: %s", i, part.where().name().toLowerCase(Locale.ROOT), ops,
                        String.join(", ", part.inputs()), String.join(", ", part.outputs()));
                list.append(line).append('\n');
                stdout.println(out.resolve("part" + i + ".mil") + ": " + line.substring(line.indexOf(' ') + 1));
            }
            if (!p.weights().isEmpty()) p.weights().writeTo(out);
            Files.writeString(out.resolve("parts.txt"), list.toString());
        } catch (IOException e) {
            throw new CliException("cannot write to " + out + ": " + e.getMessage());
        }
        return 0;
    }
}
