package ane4j.cli;

import ane4j.bench.Bench;
import ane4j.bench.BenchOptions;
import ane4j.bench.BenchResult;
import java.io.PrintStream;
import java.util.Arrays;

/** {@code ane4j bench peak|int8|step|compile|sgemm [options]}: runs a benchmark, prints its table, writes JSON and PNG. */
final class BenchCommand {
    private BenchCommand() {}

    static final String USAGE = """
            usage: ane4j bench <name> [options]

              peak     chained 1×1 convs (A2) at the ane-facts §7 configurations: ms, GFLOPS, TOPS
                       [--configs 512x128,256x64] [--spatial 64] [--wide 512x128] [--warmup N] [--reps N] [--max-seconds S]
                       [--io fp16|fp32] (fp32: maderix's casts at both ends; M1/M2 cannot cast)
              int8     W8A8 chain (A3) against its FP16 twin, and the ratio   [--configs CxN,...] [--spatial 64x64]
                       [--blob-code 4|1] (int8 blobs' mil_dtype: 4 as coremltools, 1 as maderix's ane_int8_bench; ANE only)
              step     median ms/step of training steps, phases, compile time, utilisation, memory
                       [--model stories15m|stories110m|qwen3-0.6b|tiny] [--steps N] [--warmup N] [--weights dynamic|static]
                       [--storage fp16|fp32] [--compare-torch [--python PATH] [--torch-threads N]]
              compile  compile time per training kernel and the compile-budget refusal   [--model NAME] [--budget N]
              sgemm    sgemm GFLOPS against numpy (256–4096) and A4's interpreter overhead   [--sizes 256,1024] [--java-max N]

            every bench: [--backend ane|ref] [--quick] [--json FILE] (default runs/bench/<name>-<timestamp>.json, PNG next
            to it) [--no-save]
            """;

    static int run(String[] args, PrintStream out) {
        if (args.length == 0 || args[0].equals("--help") || args[0].equals("-h") || args[0].equals("help")) {
            out.print(USAGE);
            return args.length == 0 ? 2 : 0;
        }
        if (!Bench.NAMES.contains(args[0])) throw new CliException("unknown benchmark '" + args[0] + "'; use one of " + String.join(", ", Bench.NAMES) + " (ane4j bench --help)");
        BenchOptions o;
        try {
            o = BenchOptions.parse(Arrays.copyOfRange(args, 1, args.length));
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage());
        }
        out.println("ane4j bench " + args[0] + " …");
        BenchResult r = Bench.run(args[0], o);
        out.print(r.text());
        Object json = r.meta().get("json"), png = r.meta().get("png");
        if (json != null) out.println("  wrote " + json + (png != null ? " and " + png : ""));
        return 0;
    }
}
