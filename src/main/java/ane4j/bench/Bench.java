package ane4j.bench;

import ane4j.programs.AcceptancePrograms;
import ane4j.backend.Backend;
import ane4j.backend.Backends;
import ane4j.backend.CompileBudgetExceededException;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.mil.Dialect;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.model.ModelConfig;
import ane4j.train.TrainingKernels;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The benchmarks of ane4j: {@code peak}, {@code int8}, {@code step}, {@code compile}, {@code sgemm}, {@code soak}, {@code generate}. {@link #run} runs one
 * and, unless {@code --no-save}, writes its JSON ({@code --json FILE}, default {@code runs/bench/<name>-<timestamp>.json})
 * and a PNG plot next to it. The CLI ({@code ane4j bench}) and the notebook ({@code %bench}) both go through here.
 */
public final class Bench {
    private Bench() {}

    public static final List<String> NAMES = List.of("peak", "int8", "step", "compile", "sgemm", "soak", "generate");

    /** Runs benchmark {@code name} with {@code options}; the result's meta holds the files written. */
    public static BenchResult run(String name, BenchOptions options) {
        BenchResult r = switch (name) {
            case "peak" -> peak(options);
            case "int8" -> int8(options);
            case "step" -> StepBench.run(options, StepBench.backend(backend(options), options));
            case "compile" -> compile(options);
            case "sgemm" -> SgemmBench.run(options);
            case "soak" -> {
                try {
                    yield SoakBench.run(options);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException("[bench] soak: " + e.getMessage(), e);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("[bench] soak interrupted", e);
                }
            }
            case "generate" -> GenerateBench.run(options, backend(options));
            default -> throw new IllegalArgumentException("[bench] unknown benchmark '" + name + "'; use one of " + String.join(", ", NAMES));
        };
        r.meta("command", "ane4j bench " + name + (options.args().isEmpty() ? "" : " " + String.join(" ", options.args())));
        r.meta("options", options.values());
        if (!options.flag("no-save")) {
            Path json = options.has("json") ? Path.of(options.get("json", ""))
                    : Path.of("runs", "bench", name + "-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".json");
            r.meta("json", json.toString());
            Path png = r.save(json);
            if (png != null) {
                r.meta("png", png.toString());
                r.save(json);   // again, now with the PNG's name in it
            }
        }
        return r;
    }

    /** {@code --backend ane|ref}, else {@link Backends#select()}. */
    static Backend backend(BenchOptions o) {
        if (!o.has("backend")) return Backends.select();
        String name = o.get("backend", "");
        try {
            return Backends.choose(name, null, System.getProperty("os.name", ""), System.getProperty("os.arch", "")).backend();
        } catch (RuntimeException e) {
            String why = String.valueOf(e.getMessage()).replace("[backend] -D" + Backends.PROPERTY + "=" + name + " but ", "").replace("[backend] unknown -D" + Backends.PROPERTY + "=" + name + "; ", "");
            throw new IllegalArgumentException("[bench] --backend " + name + ": " + why);
        }
    }

    /** The result's standard metadata for a backend. */
    private static void describe(BenchResult r, Backend b) {
        r.meta("backend", b.name());
        if (b instanceof RefBackend ref) r.meta("refStorage", ref.options().fp32Storage() ? "fp32" : "fp16");
    }

    // ---------------------------------------------------------------------------------------------------------------
    // peak: A2 conv chains, ms and TOPS per configuration

    /** (C, N) at spatial 64 from docs/ane-facts.md §7 (inmem_peak.m). */
    static final int[][] PEAK_CONFIGS = {{512, 32}, {512, 48}, {512, 64}, {512, 96}, {512, 128}, {256, 64}, {256, 128}, {256, 256}, {384, 64}, {384, 128}};
    static final int[][] PEAK_QUICK = {{64, 8}, {128, 8}};

    static BenchResult peak(BenchOptions o) {
        o.check("peak", Set.of("configs", "spatial", "wide", "warmup", "reps", "max-seconds", "io"));
        Backend b = backend(o);
        boolean quick = o.quick();
        int[][] configs = o.getPairs("configs", quick ? PEAK_QUICK : PEAK_CONFIGS);
        int spatial = o.getInt("spatial", 64);
        int[][] wide = o.getPairs("wide", quick ? new int[][] {{64, 4}} : new int[][] {{512, 128}});   // the 64×64 variant (A3's fp16 twin)
        int warmup = o.getInt("warmup", quick ? 1 : 10), reps = o.getInt("reps", quick ? 3 : 50);
        double maxSeconds = o.getDouble("max-seconds", quick ? 2 : 15);
        AcceptancePrograms.Io io = switch (o.get("io", "fp16")) {
            case "fp16" -> AcceptancePrograms.Io.FP16;
            case "fp32" -> AcceptancePrograms.Io.FP32_CAST;
            default -> throw new IllegalArgumentException("[bench] --io " + o.get("io", "") + ": use fp16 (no cast, every chip) or fp32 (cast at both ends, as maderix's inmem_peak)");
        };
        BenchResult r = new BenchResult("peak", "Peak: chained 1×1 convs (A2), " + b.name() + " backend",
                List.of("config", "channels", "layers", "spatial", "ms", "GFLOPS", "TOPS", "evals"));
        describe(r, b);
        r.meta("io", io == AcceptancePrograms.Io.FP16 ? "fp16" : "fp32 with cast");
        double best = 0;
        for (int[] cfg : configs) {
            int c = cfg[0], n = cfg[1];
            double[] t = timeProgram(b, AcceptancePrograms.a2PeakConvChain(c, spatial, n, io, AcceptancePrograms.WeightFiles.PER_WEIGHT), warmup, reps, maxSeconds);
            double flops = 2.0 * c * c * spatial * n, sec = Timing.median(t);
            r.row(n + "×conv " + c + "ch sp" + spatial, c, n, String.valueOf(spatial), sec * 1e3, flops / sec / 1e9, flops / sec / 1e12, t.length);
            best = Math.max(best, flops / sec / 1e12);
        }
        for (int[] cfg : wide) {
            int c = cfg[0], n = cfg[1];
            double[] t = timeProgram(b, AcceptancePrograms.a3Fp16Chain(c, 64, 64, n), Math.min(warmup, 2), reps, maxSeconds);
            double flops = 2.0 * c * c * 4096 * n, sec = Timing.median(t);
            r.row(n + "×conv " + c + "ch 64×64", c, n, "64x64", sec * 1e3, flops / sec / 1e9, flops / sec / 1e12, t.length);
            best = Math.max(best, flops / sec / 1e12);
        }
        r.put("bestTOPS", best);
        r.note("one weight file per conv (offset 64); --io fp32 adds maderix's casts (M1/M2 cannot cast, maderix PR #6)");
        r.note("FLOPs = 2·C²·S·N per evaluation; median of timed evaluations after warm-up (up to " + reps + " or " + maxSeconds + " s per configuration)");
        r.note("maderix/ANE on M4: 128×conv 512ch sp64 ≈ 11–12.6 TOPS; 64×64 spatial 18.6 TOPS (docs/ane-facts.md §7)");
        r.chart(new BenchResult.ChartSpec(true, "config", List.of("GFLOPS"), "GFLOPS"));
        return r;
    }

    /** Compiles a program, fills its input with a fixed pattern, times evaluations (sorted seconds). */
    static double[] timeProgram(Backend b, Program p, int warmup, int reps, double maxSeconds) {
        try (Kernel k = b.compile(p)) {
            Map<String, TensorBuffer> in = inputs(k), out = outputs(k);
            return Timing.measure(() -> k.evaluate(in, out), warmup, reps, 3, maxSeconds);
        }
    }

    static Map<String, TensorBuffer> inputs(Kernel k) {
        Map<String, TensorBuffer> in = new java.util.LinkedHashMap<>();
        for (var s : k.inputs()) {
            TensorBuffer x = TensorBuffer.allocate(s.type());
            for (long i = 0; i < x.count(); i++) x.set(i, (float) Math.sin(i * 0.37) * 0.5f);
            in.put(s.name(), x);
        }
        return in;
    }

    static Map<String, TensorBuffer> outputs(Kernel k) {
        Map<String, TensorBuffer> out = new java.util.LinkedHashMap<>();
        for (var s : k.outputs()) out.put(s.name(), TensorBuffer.allocate(s.type()));
        return out;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // int8: A3 W8A8 chain against its fp16 twin

    /** (C, N) at 64×64 from docs/ane-facts.md §7 (ane_int8_bench.m). */
    static final int[][] INT8_CONFIGS = {{512, 128}, {512, 64}, {256, 256}, {256, 128}, {384, 128}};

    static BenchResult int8(BenchOptions o) {
        o.check("int8", Set.of("configs", "spatial", "warmup", "reps", "max-seconds", "blob-code"));
        Backend b = backend(o);
        boolean quick = o.quick();
        int[][] configs = o.getPairs("configs", quick ? new int[][] {{64, 4}, {128, 4}} : INT8_CONFIGS);
        int[] hw = o.getPairs("spatial", new int[][] {quick ? new int[] {16, 16} : new int[] {64, 64}})[0];
        int warmup = o.getInt("warmup", quick ? 1 : 2), reps = o.getInt("reps", quick ? 3 : 10);
        double maxSeconds = o.getDouble("max-seconds", quick ? 2 : 20);
        AcceptancePrograms.Int8BlobCode code = switch (o.getInt("blob-code", 4)) {
            case 4 -> AcceptancePrograms.Int8BlobCode.CODE_4;
            case 1 -> AcceptancePrograms.Int8BlobCode.CODE_1;
            default -> throw new IllegalArgumentException("[bench] --blob-code " + o.get("blob-code", "") + ": use 4 (coremltools' int8 code) or 1 (what maderix's ane_int8_bench wrote)");
        };
        if (code == AcceptancePrograms.Int8BlobCode.CODE_1 && b instanceof RefBackend)
            throw new IllegalArgumentException("[bench] --blob-code 1 is for the ANE only (the reference backend refuses fp16-labelled int8 blobs); drop it or use --backend ane");
        BenchResult r = new BenchResult("int8", "INT8 W8A8 (A3) against FP16, " + b.name() + " backend",
                List.of("config", "channels", "layers", "spatial", "fp16 ms", "fp16 TOPS", "int8 ms", "int8 TOPS", "int8/fp16 speed"));
        describe(r, b);
        r.meta("int8BlobCode", code == AcceptancePrograms.Int8BlobCode.CODE_4 ? 4 : 1);
        for (int[] cfg : configs) {
            int c = cfg[0], n = cfg[1];
            double flops = 2.0 * c * c * hw[0] * hw[1] * n;
            double f16 = Timing.median(timeProgram(b, AcceptancePrograms.a3Fp16Chain(c, hw[0], hw[1], n), warmup, reps, maxSeconds));
            double i8 = Timing.median(timeProgram(b, AcceptancePrograms.a3Int8Chain(c, hw[0], hw[1], n, AcceptancePrograms.WeightFiles.PER_WEIGHT, code), warmup, reps, maxSeconds));
            r.row(n + "×conv " + c + "ch " + hw[0] + "×" + hw[1], c, n, hw[0] + "x" + hw[1], f16 * 1e3, flops / f16 / 1e12, i8 * 1e3, flops / i8 / 1e12, f16 / i8);
        }
        r.put("ratio (first config)", r.value(0, "int8/fp16 speed"));
        r.note("GOP = 2·C²·H·W·N; W8A8 = constexpr_affine_dequantize weights (scale 2^-3) and quantize→dequantize (int8, 2^-3) between layers");
        r.note("maderix/ANE on M4: 128×conv 512ch 64×64 FP16 18.6 TOPS vs INT8 35.1 TOPS (1.88×)");
        if (b instanceof RefBackend) r.note("the reference backend dequantizes weights at compile time and computes in fp32: INT8 adds quantize/dequantize work, it is not faster on the CPU");
        r.chart(new BenchResult.ChartSpec(true, "config", List.of("fp16 TOPS", "int8 TOPS"), "TOPS"));
        return r;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // compile: per training kernel, and the compile budget

    static BenchResult compile(BenchOptions o) {
        o.check("compile", Set.of("model", "budget", "evals"));
        int evals = o.getInt("evals", o.quick() ? 1 : 3);
        Backend b = backend(o);
        ModelConfig cfg = ModelConfig.parse(o.get("model", o.quick() ? "tiny" : "stories110m"));
        int budget = o.getInt("budget", 5);
        BenchResult r = new BenchResult("compile", "Compile time per training kernel (" + cfg.name() + "), " + b.name() + " backend",
                List.of("kernel", "build ms", "MIL KB", "compile ms", "first eval ms", "eval ms"));
        describe(r, b);
        r.meta("model", cfg.name());
        double total = 0;
        for (TrainingKernels.Name kernel : TrainingKernels.Name.ten()) {
            String name = kernel.id();
            long t0 = System.nanoTime();
            TrainingKernels.Spec spec = new TrainingKernels(cfg).build(kernel);
            long t1 = System.nanoTime();
            int milBytes = MilWriter.write(spec.program(), Dialect.IOS18).length();
            long t2 = System.nanoTime();
            try (Kernel k = b.compile(spec.program())) {
                long t3 = System.nanoTime();
                Map<String, TensorBuffer> in = outputsOrInputs(k, true), out = outputsOrInputs(k, false);
                spec.writeConstants(in.get(TrainingKernels.INPUT));
                long t4 = System.nanoTime();
                k.evaluate(in, out);
                long t5 = System.nanoTime();
                double eval = Timing.median(Timing.measure(() -> k.evaluate(in, out), 0, evals, Math.min(evals, 1), 10));
                r.row(name, (t1 - t0) / 1e6, milBytes / 1024.0, (t3 - t2) / 1e6, (t5 - t4) / 1e6, eval * 1e3);
                total += (t3 - t2) / 1e6;
            }
        }
        r.put("total compile ms", total);
        // the budget: a fresh backend of the same kind with a small budget, compiling until it refuses
        Backend limited = withBudget(b, budget);
        Program small = AcceptancePrograms.a2PeakConvChain(64, 64, 1);
        int done = 0;
        String refusal = "none";
        long tb = System.nanoTime();
        try {
            for (int i = 0; i <= budget; i++) {
                try (Kernel k = limited.compile(small)) { done++; }
            }
        } catch (CompileBudgetExceededException e) {
            refusal = e.getMessage();
        }
        r.put("budget", budget);
        r.put("compiles before refusal", done);
        r.put("refused", !refusal.equals("none"));
        r.put("budget ms", (System.nanoTime() - tb) / 1e6);
        r.note("refusal: " + refusal);
        r.note("compile = backend compile (ref: planning; ANE: MIL → in-memory model, compile and load); first eval includes any lazy loading; eval = median of " + evals + " more");
        r.chart(new BenchResult.ChartSpec(true, "kernel", List.of("compile ms", "first eval ms"), "ms"));
        return r;
    }

    private static Map<String, TensorBuffer> outputsOrInputs(Kernel k, boolean inputs) { return inputs ? Bench.inputs(k) : outputs(k); }

    /** A fresh backend of {@code b}'s kind with the given compile budget (no system property written). */
    static Backend withBudget(Backend b, long budget) {
        if (b instanceof RefBackend ref) return new RefBackend(ref.options().withCompileBudget(budget));
        return Backends.create(new Backends.Settings(b.name(), false, budget)).backend();
    }
}
