package ane4j.cli;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.util.Locale;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;

/**
 * What every {@code ane4j} command shares on picocli: the exit codes, one line per error ({@code ane4j generate: [cli]
 * unknown option --top-k; options: … (ane4j generate --help)}), and {@code --help} generated from the options themselves.
 * A command is a {@code @Command} class; {@link #commandLine} wires it, {@link #parse} parses for a command run directly.
 */
public final class Cli {
    private Cli() {}

    /** The command did what was asked. */
    public static final int OK = 0;
    /** Bad input (an option, a file, a model) or a failed run: one line on stderr says what and how to fix it. */
    public static final int FAILED = 1;
    /** No command, or one that does not exist: the usage is printed. */
    public static final int USAGE = 2;

    /** {@code -h}/{@code --help} for every command (no {@code --version}: the jar's manifest has it). */
    public static final class HelpOption {
        @CommandLine.Option(names = {"-h", "--help"}, usageHelp = true, description = "print this help and exit")
        boolean help;
    }

    /**
     * A command line for {@code command} whose option errors and failures are one line on {@code err}, prefixed with the
     * top-level command ({@code ane4j mil: …}); a stack trace only with {@code -Dane4j.debug=true}.
     */
    public static CommandLine commandLine(Object command, PrintStream out, PrintStream err) {
        CommandLine cl = new CommandLine(command);
        configure(cl, out, err);
        return cl;
    }

    /** Sets the shared behaviour on {@code cl} and every subcommand it has now. */
    public static CommandLine configure(CommandLine cl, PrintStream out, PrintStream err) {
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        cl.setOverwrittenOptionsAllowed(true);        // the last of a repeated option wins, as before picocli
        cl.setExpandAtFiles(false);                   // "@notes.txt" is a value, not a file of arguments
        cl.setUsageHelpWidth(110);
        cl.setParameterExceptionHandler((e, args) -> {
            err.println(prefix(e.getCommandLine()) + message(e));
            return FAILED;
        });
        cl.setExecutionExceptionHandler((e, line, parsed) -> {
            err.println(prefix(line) + failure(e));
            if (Boolean.getBoolean("ane4j.debug")) e.printStackTrace(err);
            return FAILED;
        });
        return cl;
    }

    /** Parses {@code args} into {@code command}'s fields; a bad option is a {@link CliException} with the one-line message. */
    public static <T> T parse(T command, String... args) {
        CommandLine cl = new CommandLine(command);
        cl.setOverwrittenOptionsAllowed(true).setExpandAtFiles(false);
        try {
            cl.parseArgs(args);
        } catch (ParameterException e) {
            throw new CliException(message(e));
        }
        return command;
    }

    /** The generated help of {@code command}. */
    public static String usage(Object command) { return new CommandLine(command).getUsageMessage(CommandLine.Help.Ansi.OFF); }

    /** {@code [cli] …}: what was wrong with the command line and what to type instead. */
    public static String message(ParameterException e) {
        CommandLine cl = e.getCommandLine();
        String help = "(" + name(cl) + " --help)";
        if (e instanceof CommandLine.UnmatchedArgumentException u && !u.getUnmatched().isEmpty()) {
            String arg = u.getUnmatched().getFirst();
            if (!arg.startsWith("-") && !cl.getSubcommands().isEmpty())
                return "[cli] unknown command '" + arg + "' for " + name(cl) + "; use one of "
                        + String.join(", ", cl.getSubcommands().keySet()) + " " + help;
            if (arg.startsWith("-"))
                return "[cli] unknown option " + arg.replaceFirst("=.*", "") + "; options: " + optionNames(cl.getCommandSpec()) + " " + help;
            return "[cli] unexpected argument '" + arg + "'; usage: " + synopsis(cl) + " " + help;
        }
        if (e instanceof CommandLine.MissingParameterException m && !m.getMissing().isEmpty()) {
            ArgSpec a = m.getMissing().getFirst();
            if (a instanceof OptionSpec o) {
                String name = o.longestName(), label = o.paramLabel();
                if (e.getMessage().startsWith("Missing required option"))
                    return "[cli] no " + name + "; give " + name + " " + label + " " + help;
                return "[cli] " + name + " has no value; give " + name + " " + label + " (or " + name + "=" + label + ")";
            }
            return "[cli] missing " + a.paramLabel() + "; usage: " + synopsis(cl);
        }
        if (e.getCause() instanceof CommandLine.TypeConversionException && e.getArgSpec() instanceof OptionSpec o)
            return "[cli] " + o.longestName() + " " + e.getValue() + " is not " + kind(o.type());
        return "[cli] " + e.getMessage();
    }

    /** {@code [op] …} messages of the domain as they are; anything else by its type, never a stack trace. */
    static String failure(Exception e) {
        String m = e.getMessage();
        if (e instanceof CliException) return m;
        return m != null && m.startsWith("[") ? m : e.getClass().getSimpleName() + ": " + m;
    }

    /** {@code ane4j mil: } for {@code ane4j mil check}: errors name the top-level command, as they always have. */
    static String prefix(CommandLine cl) {
        CommandLine top = cl;
        while (top.getParent() != null && top.getParent().getParent() != null) top = top.getParent();
        return name(top) + ": ";
    }

    /** {@code ane4j mil check}, also for a command parsed on its own. */
    private static String name(CommandLine cl) {
        String n = cl.getCommandSpec().qualifiedName();
        return n.startsWith("ane4j") ? n : "ane4j " + n;
    }

    /** A range check after parsing: {@code --top-p 2 is not a number in [0, 1]}. */
    public static double inRange(String option, double v, double min, double max) {
        if (!(v >= min && v <= max)) throw new CliException(option + " " + number(v) + " is not a number in [" + number(min) + ", " + number(max) + "]");
        return v;
    }

    private static String number(double d) { return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d); }

    private static String kind(Class<?> type) {
        if (type == int.class || type == Integer.class || type == long.class || type == Long.class) return "a whole number";
        if (type == double.class || type == Double.class || type == float.class || type == Float.class) return "a number";
        if (type.isEnum()) return "one of " + java.util.Arrays.stream(type.getEnumConstants()).map(c -> c.toString().toLowerCase(Locale.ROOT)).collect(Collectors.joining(", "));
        return "a " + type.getSimpleName();
    }

    private static String optionNames(CommandSpec spec) {
        return spec.options().stream().filter(o -> !o.usageHelp()).map(OptionSpec::longestName).collect(Collectors.joining(", "));
    }

    private static String synopsis(CommandLine cl) {
        return new CommandLine.Help(cl.getCommandSpec(), CommandLine.Help.defaultColorScheme(CommandLine.Help.Ansi.OFF)).synopsis(0).strip().replaceAll("\\s*\\n\\s*", " ");
    }
}
