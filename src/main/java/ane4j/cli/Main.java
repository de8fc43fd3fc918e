package ane4j.cli;

import java.io.PrintStream;
import java.util.Arrays;

/** The {@code ane4j} command. */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs one command and returns its exit code; errors are printed as one line on {@code err}. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0 || args[0].equals("help") || args[0].equals("--help") || args[0].equals("-h")) {
            out.println(USAGE);
            return 0;
        }
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        try {
            return switch (args[0]) {
                case "doctor" -> DoctorCommand.run(rest, out, err);
                default -> {
                    err.println("ane4j: unknown command '" + args[0] + "' (try: ane4j help)");
                    yield 2;
                }
            };
        } catch (CliException e) {
            err.println("ane4j " + args[0] + ": " + e.getMessage());
            return 1;
        }
    }

    static final String USAGE = """
            usage: ane4j <command> [options]

            commands:
              help                      this text
              doctor                    check the ANE and the backends: probes, timings, a JSON report (--json FILE)
            """;
}
