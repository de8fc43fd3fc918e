package ane4j.cli;

import ane4j.bench.Bench;
import ane4j.bench.BenchOptions;
import ane4j.bench.BenchResult;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/**
 * {@code ane4j bench peak|int8|step|compile|sgemm|generate [options]}: runs a benchmark, prints its table, writes JSON and PNG.
 * The options after the name are the benchmark's ({@link BenchOptions}, which the notebook's {@code %bench} reads too).
 */
@Command(name = "bench", description = "Benchmarks: peak, int8, step, compile, sgemm, soak, generate; ane4j bench NAME --help lists a benchmark's options.")
final class BenchCommand implements Callable<Integer> {
    /** What each benchmark measures (its --help and the list of ane4j bench --help). */
    static final Map<String, String> BENCHES = new LinkedHashMap<>();
    static {
        BENCHES.put("peak", "chained 1×1 convs (A2) at the docs/ane-facts.md §7 configurations: ms, GFLOPS, TOPS");
        BENCHES.put("int8", "W8A8 chain (A3) against its FP16 twin, and the ratio");
        BENCHES.put("step", "median ms/step of training steps, phases, compile time, utilisation, memory");
        BENCHES.put("compile", "compile time per training kernel and the compile-budget refusal");
        BENCHES.put("sgemm", "sgemm GFLOPS against numpy (256–4096) and A4's interpreter overhead");
        BENCHES.put("soak", "100,000 tiny steps: launcher and worker RSS, threads and fds at the start and the end (Linux)");
        BENCHES.put("generate", "prefill and decode tokens/s on the backend against the CPU path (stories15m, stories110m, qwen3-0.6b)");
    }

    @Mixin Cli.HelpOption help;
    @Parameters(paramLabel = "NAME [OPTIONS]", arity = "0..*", description = "the benchmark and its options") List<String> words = new ArrayList<>();
    private final PrintStream out;

    BenchCommand(PrintStream out) { this.out = out; }

    /** The command line of {@code bench}: everything after the benchmark's name is the benchmark's. */
    static CommandLine commandLine(PrintStream out) {
        CommandLine cl = new CommandLine(new BenchCommand(out)).setStopAtPositional(true);
        List<String> footer = new ArrayList<>(List.of("", "Benchmarks:"));
        BENCHES.forEach((name, what) -> footer.add(String.format("  %-8s %s", name, what)));
        footer.add("every bench: [--backend ane|ref] [--quick] [--json FILE] [--no-save]");
        cl.getCommandSpec().usageMessage().footer(footer.toArray(String[]::new));
        return cl;
    }

    @Override
    public Integer call() {
        if (words.isEmpty()) {
            out.print(commandLine(out).getUsageMessage(CommandLine.Help.Ansi.OFF));
            return Cli.USAGE;
        }
        String name = words.getFirst();
        if (!Bench.NAMES.contains(name)) throw new CliException("unknown benchmark '" + name + "'; use one of " + String.join(", ", Bench.NAMES) + " (ane4j bench --help)");
        List<String> rest = words.subList(1, words.size());
        if (rest.contains("--help") || rest.contains("-h")) {
            out.print(BenchOptions.usage(name, BENCHES.get(name)));
            return Cli.OK;
        }
        BenchOptions o;
        try {
            o = BenchOptions.parse(name, rest.toArray(String[]::new));
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage());
        }
        out.println("ane4j bench " + name + " …");
        BenchResult r = Bench.run(name, o);
        out.print(r.text());
        Object json = r.meta().get("json"), png = r.meta().get("png");
        if (json != null) out.println("  wrote " + json + (png != null ? " and " + png : ""));
        return Cli.OK;
    }
}
