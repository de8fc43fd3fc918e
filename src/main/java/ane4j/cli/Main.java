package ane4j.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** The {@code ane4j} command: picocli dispatches to the subcommands; {@link Cli} makes every error one line. */
@Command(name = "ane4j", synopsisSubcommandLabel = "<command>", description = "Train transformers on the Apple Neural Engine (and the reference backend everywhere).",
        footer = {"", "ane4j <command> --help lists a command's options; errors are one line, -Dane4j.debug=true (ANE4J_JAVA_OPTS) adds the stack trace"})
public final class Main implements Callable<Integer> {
    @Mixin Cli.HelpOption help;
    private final PrintStream out;

    private Main(PrintStream out) { this.out = out; }

    public static void main(String[] args) {
        // one-line log records ("INFO: [blas] sgemm: OpenBLAS …") unless the user configured logging
        if (System.getProperty("java.util.logging.SimpleFormatter.format") == null)
            System.setProperty("java.util.logging.SimpleFormatter.format", "%4$s: %5$s%6$s%n");
        System.setProperty(ane4j.run.RunJson.COMMAND_PROPERTY, quoted(args));   // run.json's "command"
        System.exit(run(args, System.out, System.err));
    }

    /** {@code ane4j train --run-dir 'my runs/a'}: the arguments quoted as a POSIX shell would need them. */
    static String quoted(String[] args) {
        StringBuilder sb = new StringBuilder("ane4j");
        for (String a : args)
            sb.append(' ').append(a.matches("[A-Za-z0-9_@%+=:,./-]+") ? a : "'" + a.replace("'", "'\\''") + "'");
        return sb.toString();
    }

    /** Runs one command and returns its exit code ({@link Cli#OK}, {@link Cli#FAILED}, {@link Cli#USAGE}); errors are one line on {@code err}. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return commandLine(out, err).execute(args);
    }

    /** No command: the usage. */
    @Override
    public Integer call() {
        out.print(commandLine(out, System.err).getUsageMessage(CommandLine.Help.Ansi.OFF));
        return Cli.OK;
    }

    static CommandLine commandLine(PrintStream out, PrintStream err) {
        CommandLine cl = new CommandLine(new Main(out))
                .addSubcommand(new TrainEntry(out))
                .addSubcommand(new GenerateCommand(out, err))
                .addSubcommand(new ExportCommand(out))
                .addSubcommand(new EvalCommand(out))
                .addSubcommand(MilCommand.commandLine(out, err))
                .addSubcommand(new DoctorCommand(out, err))
                .addSubcommand(BenchCommand.commandLine(out))
                .addSubcommand("help", new CommandLine.HelpCommand());
        Cli.configure(cl, out, err);
        CommandLine.IParameterExceptionHandler options = cl.getParameterExceptionHandler();
        cl.setParameterExceptionHandler((e, a) -> {
            if (e.getCommandLine() == cl && e instanceof CommandLine.UnmatchedArgumentException u && !u.getUnmatched().getFirst().startsWith("-")) {
                err.println("ane4j: unknown command '" + u.getUnmatched().getFirst() + "' (try: ane4j help)");
                return Cli.USAGE;
            }
            return options.handleParseException(e, a);
        });
        return cl;
    }

    /** {@code ane4j train}: its options are the run layer's key table, read by {@link TrainCommand}. */
    @Command(name = "train", description = "Train a model (default: tiny on the embedded corpus) or a MIL graph (--graph FILE.mil); see ane4j train --help.")
    static final class TrainEntry implements Callable<Integer> {
        @CommandLine.Unmatched List<String> args = new ArrayList<>();
        private final PrintStream out;

        TrainEntry(PrintStream out) { this.out = out; }

        @Override public Integer call() {
            // a preset model or, with --graph FILE.mil, a user's graph (issue 31): both through the run layer
            return TrainCommand.run(args.toArray(String[]::new), out);
        }
    }
}
