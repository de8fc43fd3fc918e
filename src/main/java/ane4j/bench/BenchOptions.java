package ane4j.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import picocli.CommandLine;

/**
 * Options of a benchmark, from a command line ({@code --quick --model tiny --steps 3}) or a notebook's {@code %bench}
 * line, read by picocli from {@link #OPTIONS}, the one table of every benchmark's options (which also makes
 * {@code ane4j bench NAME --help}). Flags take no value; every other option takes one. Unknown options are refused with
 * the list of the benchmark's options.
 */
public final class BenchOptions {
    /** One option: its name without {@code --}, its value's label (null: a flag), what it does, and the benchmarks that read it (empty: all). */
    record Spec(String name, String label, String description, Set<String> benches) {}

    /** Every benchmark's options; {@code Bench}'s checks refuse those a benchmark does not read. */
    static final List<Spec> OPTIONS = java.util.stream.Stream.concat(java.util.stream.Stream.of(
            new Spec("configs", "CxN,…", "channels×layers (peak: docs/ane-facts.md §7's 512x128,256x64,…; int8: CxN pairs)", Set.of("peak", "int8")),
            new Spec("spatial", "N|HxW", "the spatial size (peak: 64; int8: 64x64)", Set.of("peak", "int8")),
            new Spec("wide", "CxN", "peak's wide variant (A3's fp16 twin), default 512x128", Set.of("peak")),
            new Spec("io", "fp16|fp32", "fp32: maderix's casts at both ends (M1/M2 cannot cast)", Set.of("peak")),
            new Spec("blob-code", "4|1", "int8 blobs' mil_dtype: 4 as coremltools, 1 as maderix's ane_int8_bench (ANE only)", Set.of("int8")),
            new Spec("model", "NAME", "stories15m|stories110m|qwen3-0.6b|tiny", Set.of("step", "compile")),
            new Spec("steps", "N", "measured training steps (soak: the run's steps, default 100000)", Set.of("step", "soak")),
            new Spec("launcher-heap", "SIZE", "soak: the launcher JVM's -Xmx (default: the JVM's)", Set.of("soak")),
            new Spec("warmup", "N", "unmeasured runs first", Set.of("peak", "int8", "step")),
            new Spec("reps", "N", "measured runs", Set.of("peak", "int8", "sgemm", "generate")),
            new Spec("max-seconds", "S", "stop measuring after S seconds", Set.of("peak", "int8")),
            new Spec("kernels", "hand|generated", "hand: the hand-written training kernels; generated: the model built with the fluent API, differentiated by Mil.grad, run as GraphStep", Set.of("step")),
            new Spec("loss-head", "cpu|mil", "with --kernels generated: the loss and d_logits on the CPU (the default, as the hand-written step), or the graph's own cross-entropy in MIL", Set.of("step")),
            new Spec("weights", "dynamic|static", "weights in the kernel inputs, or baked in and recompiled", Set.of("step")),
            new Spec("storage", "fp16|fp32", "the reference backend's storage type", Set.of("step")),
            new Spec("compare-torch", null, "also time PyTorch's CPU step on the same config (with --lora: PyTorch LoRA, tools/torch_lora_step.py)", Set.of("step")),
            new Spec("lora", "RANK", "time a LoRA step: the base frozen, rank-RANK adapters trained", Set.of("step")),
            new Spec("lora-targets", "q,k,…", "the adapted projections of --lora (default all seven: q,k,v,o,w1,w2,w3)", Set.of("step")),
            new Spec("lora-alpha", "A", "the adapters' alpha of --lora (scale alpha/rank, default 16)", Set.of("step")),
            new Spec("compare-full", null, "with --lora: also time the full step, each side in its own JVM (peak RSS per process), and print the ratios", Set.of("step")),
            new Spec("rounds", "N", "with --compare-full: LoRA and full sides alternated N times (default 3; --quick 1), ratios taken pair by pair", Set.of("step")),
            new Spec("python", "PATH", "the python3 with torch/numpy", Set.of("step", "sgemm")),
            new Spec("torch-script", "FILE", "the PyTorch step script (default tools/torch_train_step.py, with --lora tools/torch_lora_step.py)", Set.of("step")),
            new Spec("torch-threads", "N", "PyTorch's threads", Set.of("step")),
            new Spec("seed", "N", "initial weights and data", Set.of("step", "generate")),
            new Spec("budget", "N", "the compile budget to exhaust", Set.of("compile")),
            new Spec("evals", "N", "timed evaluations per kernel", Set.of("compile")),
            new Spec("sizes", "N,…", "square sgemm sizes (256–4096)", Set.of("sgemm")),
            new Spec("java-max", "N", "the largest size the pure-Java sgemm runs", Set.of("sgemm")),
            new Spec("a4", "SxC,…", "A4's interpreter-overhead shapes", Set.of("sgemm")),
            new Spec("models", "NAME,…", "the presets (default stories15m,stories110m,qwen3-0.6b at full size; --quick tiny,stories15m)", Set.of("generate")),
            new Spec("prompt-tokens", "N", "prompt length (default 64; --quick 16)", Set.of("generate")),
            new Spec("tokens", "N", "tokens generated after the prompt (default 32; --quick 8)", Set.of("generate")),
            new Spec("decode", "both|cpu|backend", "the backend rows: decode on the CPU from the prefill's cache, with the decode kernels, or both", Set.of("generate")),
            new Spec("layers", "N", "every model with N layers (a quicker look at the same widths)", Set.of("generate")),
            new Spec("backend", "ane|ref", "the backend (default: the ANE where it runs, else ref)", Set.of()),
            new Spec("quick", null, "small sizes, few repetitions (seconds, for tests)", Set.of()),
            new Spec("json", "FILE", "the result (default runs/bench/<name>-<timestamp>.json, PNG next to it)", Set.of()),
            new Spec("no-save", null, "write no JSON or PNG", Set.of())),
            // the model settings over --model's preset, spelled and checked as ane4j train reads them (--dim 128 derives hiddenDim)
            ane4j.run.TrainOptions.MODEL_KEYS.stream().map(ane4j.run.RunSpec.KEYS::key)
                    .map(k -> new Spec(k.flag().substring(2), "N", k.help() + " (over --model's preset)", Set.of("step")))).toList();

    /** Options without a value. */
    static final Set<String> FLAGS = OPTIONS.stream().filter(o -> o.label() == null).map(Spec::name).collect(Collectors.toUnmodifiableSet());

    private final Map<String, String> values;
    private final List<String> args;

    private BenchOptions(Map<String, String> values, List<String> args) {
        this.values = values;
        this.args = args;
    }

    public static BenchOptions defaults() { return new BenchOptions(new LinkedHashMap<>(), List.of()); }

    /** From whitespace-separated words, e.g. {@code "--quick --steps 3"}. */
    public static BenchOptions of(String line) {
        String s = line == null ? "" : line.strip();
        return parse(s.isEmpty() ? new String[0] : s.split("\\s+"));
    }

    /** The options of any benchmark. */
    public static BenchOptions parse(String... args) { return parse(null, args); }

    /** The options of benchmark {@code bench} (null: of any); a bad one is an {@link IllegalArgumentException} {@code [bench] …}. */
    public static BenchOptions parse(String bench, String... args) {
        CommandLine cl = new CommandLine(spec(bench));
        cl.setOverwrittenOptionsAllowed(true).setExpandAtFiles(false);
        CommandLine.ParseResult parsed;
        try {
            parsed = cl.parseArgs(args);
        } catch (CommandLine.UnmatchedArgumentException e) {
            String a = e.getUnmatched().getFirst();
            if (!a.startsWith("--")) throw new IllegalArgumentException("[bench] unexpected argument '" + a + "'; options look like --steps 10 or --quick");
            throw new IllegalArgumentException("[bench] unknown option " + a.replaceFirst("=.*", "") + (bench != null ? " for bench " + bench : "")
                    + "; options: " + String.join(", ", names(bench)));
        } catch (CommandLine.MissingParameterException e) {
            throw new IllegalArgumentException("[bench] option " + ((CommandLine.Model.OptionSpec) e.getMissing().getFirst()).longestName() + " needs a value");
        } catch (CommandLine.ParameterException e) {
            throw new IllegalArgumentException("[bench] " + e.getMessage());
        }
        Map<String, String> v = new LinkedHashMap<>();
        for (CommandLine.Model.OptionSpec o : parsed.matchedOptions()) {
            Object value = o.getValue();
            v.put(o.longestName().substring(2), value.toString());
        }
        return new BenchOptions(v, List.of(args));
    }

    /**
     * The options of a benchmark's own {@code main} (an annotated picocli class): {@code --help} prints the usage and
     * exits 0; a bad option prints one line {@code [bench] …} and exits 2.
     */
    static <T> T parseMain(T options, String[] args) {
        CommandLine cl = new CommandLine(options).setExpandAtFiles(false);
        try {
            cl.parseArgs(args);
        } catch (CommandLine.ParameterException e) {
            System.err.println("[bench] " + e.getMessage() + " (--help lists the options)");
            System.exit(2);
        }
        if (cl.isUsageHelpRequested()) {
            cl.usage(System.out, CommandLine.Help.Ansi.OFF);
            System.exit(0);
        }
        return options;
    }

    /** {@code ane4j bench NAME --help}: the benchmark's options, generated from {@link #OPTIONS}. */
    public static String usage(String bench, String description) {
        CommandLine.Model.CommandSpec spec = spec(bench);
        spec.usageMessage().description(description);
        return new CommandLine(spec).getUsageMessage(CommandLine.Help.Ansi.OFF);
    }

    private static CommandLine.Model.CommandSpec spec(String bench) {
        CommandLine.Model.CommandSpec spec = CommandLine.Model.CommandSpec.create().name("ane4j bench" + (bench != null ? " " + bench : ""));
        for (Spec o : OPTIONS) {
            if (bench != null && !o.benches().isEmpty() && !o.benches().contains(bench)) continue;
            var b = CommandLine.Model.OptionSpec.builder("--" + o.name()).description(o.description());
            if (o.label() == null) b.arity("0..1").type(boolean.class);   // --quick, or --quick=false
            else b.arity("1").type(String.class).paramLabel(o.label());
            spec.addOption(b.build());
        }
        return spec;
    }

    private static List<String> names(String bench) {
        return spec(bench).options().stream().map(o -> o.longestName() + (o.type() == boolean.class ? "" : " " + o.paramLabel())).toList();
    }

    /** A copy with one more option (a flag: value "true"). */
    public BenchOptions with(String key, String value) {
        Map<String, String> v = new LinkedHashMap<>(values);
        v.put(key, value);
        List<String> a = new ArrayList<>(args);
        a.add("--" + key);
        if (!FLAGS.contains(key)) a.add(value);
        return new BenchOptions(v, a);
    }

    /** Refuses options that {@code bench} does not know. */
    void check(String bench, Set<String> known) {
        for (String k : values.keySet())
            if (!known.contains(k) && !FLAGS.contains(k) && !k.equals("json") && !k.equals("backend"))
                throw new IllegalArgumentException("[bench] unknown option --" + k + " for bench " + bench + "; options: "
                        + String.join(", ", new TreeSet<>(known).stream().map(x -> "--" + x).toList()) + ", --json FILE, --backend ane|ref, --quick, --no-save");
    }

    public boolean quick() { return flag("quick"); }

    public boolean flag(String key) {
        String v = values.get(key);
        return v != null && !v.equalsIgnoreCase("false");
    }

    public String get(String key, String dflt) { return values.getOrDefault(key, dflt); }

    public boolean has(String key) { return values.containsKey(key); }

    public int getInt(String key, int dflt) {
        String v = values.get(key);
        if (v == null) return dflt;
        try {
            return Integer.parseInt(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("[bench] --" + key + " " + v + " is not an integer");
        }
    }

    public double getDouble(String key, double dflt) {
        String v = values.get(key);
        if (v == null) return dflt;
        try {
            return Double.parseDouble(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("[bench] --" + key + " " + v + " is not a number");
        }
    }

    /** A comma-separated list of integers, e.g. {@code --sizes 256,512}. */
    public int[] getInts(String key, int[] dflt) {
        String v = values.get(key);
        if (v == null) return dflt;
        try {
            return Arrays.stream(v.split(",")).map(String::strip).mapToInt(Integer::parseInt).toArray();
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("[bench] --" + key + " " + v + " is not a comma-separated list of integers");
        }
    }

    /** Pairs {@code AxB,CxD} (e.g. channels×layers), or the default. */
    public int[][] getPairs(String key, int[][] dflt) {
        String v = values.get(key);
        if (v == null) return dflt;
        String[] parts = v.split(",");
        int[][] out = new int[parts.length][];
        for (int i = 0; i < parts.length; i++) {
            String[] ab = parts[i].strip().toLowerCase(java.util.Locale.ROOT).split("x");
            try {
                if (ab.length != 2) throw new NumberFormatException();
                out[i] = new int[] {Integer.parseInt(ab[0]), Integer.parseInt(ab[1])};
                if (out[i][0] <= 0 || out[i][1] <= 0) throw new NumberFormatException();
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("[bench] --" + key + " '" + parts[i] + "' is not AxB with positive integers (e.g. 512x128)");
            }
        }
        return out;
    }

    /** The options as given (for the JSON record). */
    public Map<String, String> values() { return values; }

    public List<String> args() { return args; }
}
