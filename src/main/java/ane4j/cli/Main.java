package ane4j.cli;

import java.io.PrintStream;
import java.util.Arrays;

/** The {@code ane4j} command. */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        // one-line log records ("INFO: [blas] sgemm: OpenBLAS …") unless the user configured logging
        if (System.getProperty("java.util.logging.SimpleFormatter.format") == null)
            System.setProperty("java.util.logging.SimpleFormatter.format", "%4$s: %5$s%6$s%n");
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
                case "mil" -> MilCommand.run(rest, out, err);
                case "train" -> TrainCommand.run(rest, out);
                case "doctor" -> DoctorCommand.run(rest, out, err);
                case "bench" -> BenchCommand.run(rest, out);
                case "export" -> ExportCommand.run(rest, out);
                case "generate" -> GenerateCommand.run(rest, out, err);
                default -> {
                    err.println("ane4j: unknown command '" + args[0] + "' (try: ane4j help)");
                    yield 2;
                }
            };
        } catch (CliException e) {
            err.println("ane4j " + args[0] + ": " + e.getMessage());
            return 1;
        } catch (RuntimeException e) {
            // domain errors carry a one-line "[op] …" message; anything else is reported by type, without a stack trace
            String msg = e.getMessage() != null && e.getMessage().startsWith("[") ? e.getMessage() : e.getClass().getSimpleName() + ": " + e.getMessage();
            err.println("ane4j " + args[0] + ": " + msg);
            if (Boolean.getBoolean("ane4j.debug")) e.printStackTrace(err);
            return 1;
        }
    }

    static final String USAGE = """
            usage: ane4j <command> [options]

            commands:
              train [options]              train a model (default: tiny on the embedded corpus); see ane4j train --help
              mil check FILE.mil           parse a MIL program, check shapes and weight files, print a summary
                                           (--chip m1|…|m5: also every chip-rule violation, line:col, limit, source)
              mil fmt FILE.mil             print the canonical text (--dialect ios16|ios18)
              mil run FILE.mil ...         run a MIL program on .npy inputs (--input x=x.npy --output DIR)
              doctor [--model M]           check the ANE and the backends: probe ladder vs ref, timings, --json FILE report
              bench NAME [options]         benchmarks: peak, int8, step, compile, sgemm; see ane4j bench --help
              export --run DIR --format F  a trained model for other tools: safetensors (Hugging Face) or llama2c (.bin)
              generate --model M --prompt  text from a model, streamed (--tokens N --temperature 0 is greedy)
              help                         this text

            errors are one line; -Dane4j.debug=true (ANE4J_JAVA_OPTS) adds the stack trace
            """;
}
