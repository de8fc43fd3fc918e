package ane4j.bench;

import ane4j.model.Json;
import ane4j.backend.Backend;
import ane4j.backend.Backends;
import ane4j.backend.ref.RefBackend;
import ane4j.blas.Blas;
import ane4j.blas.Layout;
import ane4j.blas.Sgemm;
import ane4j.blas.Transpose;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.Rng;
import ane4j.run.RunSpec;
import ane4j.run.TrainOptions;
import ane4j.train.AdamW;
import ane4j.train.LoraAdapters;
import ane4j.train.LossScaler;
import ane4j.train.TrainingStep;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * {@code ane4j bench step}: the median wall time of full training steps (forward + backward through the backend's
 * kernels, loss-scale unscaling, global-norm clipping, AdamW, staging the new weights) at batch 1 and the config's
 * seqLen, with the per-phase breakdown, compile time, FLOPs per step and utilisation against this machine's sgemm peak,
 * peak memory against the bytes of weights + gradients + moments, and optionally a PyTorch CPU step measured in the same
 * run ({@code tools/torch_train_step.py}). With {@code --lora R} the step is a LoRA step (base frozen, adapters trained;
 * PyTorch's side {@code tools/torch_lora_step.py}); {@code --compare-full} adds the full step, see {@link LoraComparison}.
 */
public final class StepBench {
    private StepBench() {}

    /** Issue 5's targets: speed-up over the PyTorch CPU step, and peak memory over weights+grads+moments. */
    static final Map<String, Double> SPEEDUP_TARGET = Map.of("stories15m", 2.0, "stories110m", 3.0);
    static final double MEMORY_TARGET = 1.5;

    /** The backend a training run with this storage gets ({@link RunSpec#newBackend}): the reference backend keeps fp32 when --storage fp32. */
    static Backend backend(Backend chosen, BenchOptions o) {
        String storage = RunSpec.KEYS.key("storage").check(o.get("storage", "fp16"), "bench");
        if (!chosen.name().equals("ref")) return chosen;
        return Backends.create(new Backends.Settings("ref", storage.equals("fp32"), null)).backend();
    }

    public static BenchResult run(BenchOptions o, Backend backend) {
        Set<String> keys = new java.util.HashSet<>(Set.of("model", "steps", "warmup", "weights", "storage", "python", "torch-script", "torch-threads", "seed",
                "lora", "lora-targets", "lora-alpha", "rounds", "kernels", "loss-head"));
        for (String k : TrainOptions.MODEL_KEYS) keys.add(RunSpec.KEYS.key(k).flag().substring(2));
        o.check("step", keys);
        if (o.flag("compare-full")) return LoraComparison.run(o);
        if (o.has("rounds")) throw new IllegalArgumentException("[bench] --rounds alternates the two sides of --compare-full: give --lora RANK --compare-full too");
        ModelConfig cfg = config(o);
        int steps = steps(o), warmup = o.getInt("warmup", o.quick() ? 1 : 2);
        if (steps < 1 || warmup < 0) throw new IllegalArgumentException("[bench] --steps must be ≥ 1 and --warmup ≥ 0");
        // weights and storage are run keys: the run layer's table checks them as ane4j train and %%train do
        String weights = RunSpec.KEYS.key("weights").check(o.get("weights", "dynamic"), "bench");
        String storage = RunSpec.KEYS.key("storage").check(o.get("storage", "fp16"), "bench");
        String kernels = o.get("kernels", "hand");
        if (!kernels.equals("hand") && !kernels.equals("generated")) throw new IllegalArgumentException("[bench] --kernels " + kernels + " must be hand or generated");
        if (o.has("loss-head") && !kernels.equals("generated")) throw new IllegalArgumentException("[bench] --loss-head chooses where the generated step's loss runs: give --kernels generated too");
        if (kernels.equals("generated")) {
            if (o.has("lora") || weights.equals("static")) throw new IllegalArgumentException("[bench] --kernels generated times the full step with dynamic weights: drop --lora and --weights static");
            return GeneratedStepBench.run(o, backend, cfg, steps, warmup, storage);
        }

        // this machine's fp32 peak, measured first (before the model takes the memory bandwidth and the heap)
        double loadBefore = java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
        double peakGflops = sgemmPeakGflops(o.quick() ? 512 : 2048);
        Machine.resetPeakHeap();

        int s = cfg.seqLen();
        Parameters params = Parameters.init(cfg, o.getInt("seed", 1));
        // LoRA: gradients and moments of the adapters only (PEFT's init: B = 0, so the first step is the base model's)
        LoraAdapters lora = lora(o, cfg);
        int trained = lora == null ? params.data().length : lora.size();
        float[] p = params.data(), grads = new float[trained], m = new float[trained], v = new float[trained];
        AdamW adamw = new AdamW(0.9f, 0.95f, 1e-8f, 0.1f);
        float lossScale = storage.equals("fp16") ? LossScaler.DEFAULT_SCALE : 1f;   // the Trainer's initial scale
        Rng rng = new Rng(o.getInt("seed", 1) * 7919L);
        int[] tokens = new int[s], targets = new int[s];

        long c0 = System.nanoTime();
        TrainingStep step = new TrainingStep(cfg, backend, TrainingStep.Options.of(storage.equals("fp16") ? DType.FP16 : DType.FP32)
                .withStaticWeights(weights.equals("static")).withLora(lora));
        step.stageWeights(p);
        double compileMs = (System.nanoTime() - c0) / 1e6;

        String[] phases = {"forward (backend)", "backward (backend)", "I/O (staging, reads)", "CPU ops", "dW wait", "classifier", "AdamW + clip", "stage weights", "other"};
        double[][] phaseMs = new double[phases.length][steps];
        double[] total = new double[steps];
        float firstLoss = Float.NaN, lastLoss = Float.NaN;
        try (step) {
            for (int i = 0; i < warmup + steps; i++) {
                for (int t = 0; t < s; t++) { tokens[t] = rng.nextInt(cfg.vocabSize()); targets[t] = rng.nextInt(cfg.vocabSize()); }
                long t0 = System.nanoTime();
                float loss = step.forwardBackward(p, grads, tokens, targets, lossScale);
                long t1 = System.nanoTime();
                Map<TrainingStep.Phase, Long> ph = new EnumMap<>(step.phaseNanos());
                // as the Trainer: norm (unscaled), then unscale + clip + AdamW + zero in one pass
                float k = 1f / lossScale;
                float norm = (float) Math.sqrt(AdamW.sumOfSquares(grads, k));
                if (lora != null) adamw.step(lora.views(), lora.data(), grads, m, v, i + 1, 1e-4f, k * AdamW.clipFactor(norm, 1f), true);
                else adamw.step(params.layout().views(), p, grads, m, v, i + 1, 1e-4f, k * AdamW.clipFactor(norm, 1f), true);
                long t2 = System.nanoTime();
                step.stageWeights(p);
                long t3 = System.nanoTime();
                if (i == 0) firstLoss = loss;
                lastLoss = loss;
                if (i < warmup) continue;
                int j = i - warmup;
                total[j] = (t3 - t0) / 1e6;
                TrainingStep.Phase[] order = {TrainingStep.Phase.FORWARD_BACKEND, TrainingStep.Phase.BACKWARD_BACKEND, TrainingStep.Phase.IO,
                        TrainingStep.Phase.CPU, TrainingStep.Phase.DW_WAIT, TrainingStep.Phase.CLASSIFIER};
                double known = 0;
                for (int q = 0; q < order.length; q++) { phaseMs[q][j] = ph.getOrDefault(order[q], 0L) / 1e6; known += phaseMs[q][j]; }
                phaseMs[6][j] = (t2 - t1) / 1e6;
                phaseMs[7][j] = (t3 - t2) / 1e6;
                phaseMs[8][j] = (t1 - t0) / 1e6 - known;
            }
        }
        long rss = Machine.peakRssBytes(), heap = Machine.peakHeapBytes();
        // and again after the steps: a busy moment of another process can only slow the peak down, so the faster of the
        // two is the machine's (one low measurement before the steps once read 100 GFLOPS and a utilisation of 101%)
        double peakBefore = peakGflops, peakAfter = sgemmPeakGflops(o.quick() ? 512 : 2048);
        peakGflops = Math.max(peakBefore, peakAfter);
        double loadAfter = java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
        double msPerStep = Timing.medianOf(total);
        double flops = flopsPerStep(cfg);
        long stateBytes = 4L * p.length + 4L * 3 * trained;   // weights + gradients + 2 moments of what trains, fp32

        BenchResult r = new BenchResult("step", "Training step: " + cfg.name() + " (batch 1, seq " + s + "), " + backend.name() + " backend, "
                + weights + " weights, " + storage + " storage" + (lora == null ? "" : ", LoRA rank " + lora.rank() + " on " + String.join(",", lora.targets())),
                List.of("phase", "ms", "% of step"));
        r.meta("backend", backend.name());
        if (backend instanceof RefBackend ref) r.meta("refStorage", ref.options().fp32Storage() ? "fp32" : "fp16");
        r.meta("model", cfg.name());
        r.meta("parameters", (long) p.length);
        r.put("trainedParameters", (long) trained);
        if (lora != null) {
            r.put("lora", lora.rank());
            r.put("loraTargets", String.join(",", lora.targets()));
            r.put("loraAlpha", lora.alpha());
        }
        for (int q = 0; q < phases.length; q++) {
            double med = Timing.medianOf(phaseMs[q]);
            r.row(phases[q], med, 100 * med / msPerStep);
        }
        r.row("total (median step)", msPerStep, 100.0);
        r.put("median", String.format(Locale.ROOT, "%.1f ms/step", msPerStep));
        r.put("msPerStep", msPerStep);
        r.put("msPerStepMin", Arrays.stream(total).min().orElse(Double.NaN));
        r.put("steps", steps);
        r.put("tokensPerSecond", s / (msPerStep / 1e3));
        r.put("compileMs", compileMs);
        r.put("compiles", step.compiles());
        r.put("gflopPerStep", flops / 1e9);
        r.put("achievedGflops", flops / (msPerStep / 1e3) / 1e9);
        r.put("sgemmPeakGflops", peakGflops);
        r.put("sgemmPeakGflopsBefore", peakBefore);
        r.put("sgemmPeakGflopsAfter", peakAfter);
        r.put("blas", Blas.get().description());
        r.put("utilisation", flops / (msPerStep / 1e3) / 1e9 / peakGflops);
        // the floor: every FLOP of the step at the peak sgemm rate, nothing else
        double floorMs = flops / 1e9 / peakGflops * 1e3;
        r.put("sgemmFloorMs", floorMs);
        r.put("peakRssMB", rss / 1e6);
        r.put("peakHeapMB", heap / 1e6);
        r.put("weightsGradsMomentsMB", stateBytes / 1e6);
        r.put("memoryRatio", rss > 0 ? (double) rss / stateBytes : Double.NaN);
        r.put("memoryTarget", MEMORY_TARGET);
        r.put("loadAverageBefore", Math.round(loadBefore * 100) / 100.0);
        r.put("loadAverageAfter", Math.round(loadAfter * 100) / 100.0);
        r.put("firstLoss", firstLoss);
        r.put("lastLoss", lastLoss);
        if (o.flag("compare-torch")) {
            // PyTorch starts once this model is released: the two never hold a large model (qwen3-0.6b: 9.5 GB each) at once
            params = null;
            p = grads = m = v = null;
            System.gc();
            Map<String, Object> torch = torchStep(o, cfg, steps, torchMode(o, lora));
            double tms = ((Number) torch.get("ms_per_step_median")).doubleValue();
            r.put("torchMsPerStep", tms);
            r.put("torchThreads", torch.get("threads"));
            r.put("torchVersion", torch.get("torch"));
            r.put("torchLoadAverage", torch.get("loadavg"));
            r.put("torchBlas", torch.get("blas"));
            if (torch.get("peak_rss_mb") instanceof Number trss) {
                r.put("torchPeakRssMB", trss.doubleValue());
                r.put("torchMemoryRatio", trss.doubleValue() * 1e6 / stateBytes);
            }
            r.put("speedupVsTorch", tms / msPerStep);
            r.put("speedupAtSgemmFloor", tms / floorMs);
            if (lora == null && SPEEDUP_TARGET.containsKey(cfg.name())) r.put("speedupTarget", SPEEDUP_TARGET.get(cfg.name()));
            r.meta("torch", torch);
            r.note(String.format(Locale.ROOT, "PyTorch CPU %s step (same config, %s threads): %.1f ms/step; ane4j is %.2f× %s", lora == null ? "training" : "LoRA", torch.get("threads"), tms,
                    tms >= msPerStep ? tms / msPerStep : msPerStep / tms, tms >= msPerStep ? "faster" : "slower"));
        }
        r.note("BLAS: ane4j " + Blas.get().description() + (o.flag("compare-torch") ? "; PyTorch " + blasSummary(r.summary().get("torchBlas")) : ""));
        r.note(String.format(Locale.ROOT, "floor: %.1f GFLOP at the peak sgemm rate alone take %.0f ms; no CPU step of this model can be faster on this machine", flops / 1e9, floorMs));
        r.note("FLOPs/step = 3·(projections + classifier) + attention (4·S²·Q fwd + 10·S²·Q bwd per layer); utilisation against sgemm "
                + (o.quick() ? 512 : 2048) + "³ on " + Blas.get().description() + String.format(Locale.ROOT,
                ": %.0f GFLOPS, the faster of %.0f before and %.0f after the steps", peakGflops, peakBefore, peakAfter));
        r.note(String.format(Locale.ROOT, "memory: peak RSS (VmHWM) of the whole JVM %.0f MB against %.0f MB of weights, gradients, AdamW m and v%s in fp32 (%.2f×)%s",
                rss / 1e6, stateBytes / 1e6, lora == null ? "" : " (of the adapters)", (double) rss / stateBytes, r.summary().get("torchPeakRssMB") instanceof Double t
                        ? String.format(Locale.ROOT, "; PyTorch's process %.0f MB (%.2f×)", t, t * 1e6 / stateBytes) : ""));
        r.chart(new BenchResult.ChartSpec(true, "phase", List.of("ms"), "ms per step"));
        return r;
    }

    /** The model of a step benchmark: --model (tiny with --quick, else stories110m) with model settings over the preset, as ane4j train and %%train read them (--dim 128 derives hiddenDim and headDim). */
    static ModelConfig config(BenchOptions o) {
        Map<String, Integer> settings = new LinkedHashMap<>();
        for (String k : o.values().keySet()) {
            String c = RunSpec.KEYS.canonical(k);
            if (c != null && TrainOptions.MODEL_KEYS.contains(c)) settings.put(c, Integer.parseInt(RunSpec.KEYS.key(c).check(o.get(k, ""), "bench")));
        }
        return ModelConfig.override(ModelConfig.parse(o.get("model", o.quick() ? "tiny" : "stories110m")), settings);
    }

    static int steps(BenchOptions o) { return o.getInt("steps", o.quick() ? 2 : 10); }

    /** The bench's default LoRA targets: all seven projections (the README's figures; a run's default is PEFT's q,v). */
    static final String LORA_TARGETS = String.join(",", TrainOptions.LORA_TARGETS);

    /** The adapters of {@code --lora R [--lora-targets … --lora-alpha A]}, or null without --lora. */
    static LoraAdapters lora(BenchOptions o, ModelConfig cfg) {
        int rank = o.getInt("lora", 0);
        if (rank < 0) throw new IllegalArgumentException("[bench] --lora " + rank + ": give a rank ≥ 1 (or 0 for the full step)");
        if (rank == 0) {
            for (String k : List.of("lora-targets", "lora-alpha"))
                if (o.has(k)) throw new IllegalArgumentException("[bench] --" + k + " needs --lora RANK");
            return null;
        }
        // --lora-alpha checked as train checks loraAlpha (one rule for both: a number ≥ 0)
        float alpha = Float.parseFloat(RunSpec.KEYS.key("loraAlpha").check(o.get("lora-alpha", "16"), "bench"));
        return LoraAdapters.init(cfg, rank, alpha, List.of(o.get("lora-targets", LORA_TARGETS).split(",")), o.getInt("seed", 1));
    }

    /** tools/torch_lora_step.py's arguments for the same LoRA step, or none for tools/torch_train_step.py's full step. */
    static List<String> torchMode(BenchOptions o, LoraAdapters lora) {
        if (lora == null) return List.of();
        return List.of("--mode", "lora" + lora.rank(), "--targets", String.join(",", lora.targets()), "--alpha", String.valueOf(lora.alpha()));
    }

    /** Matmul FLOPs of one training step (forward, dx and dW for every projection and the classifier; attention fwd+bwd). */
    public static double flopsPerStep(ModelConfig c) {
        double s = c.seqLen(), d = c.dim(), h = c.hiddenDim(), q = c.qDim(), kv = c.kvDim(), v = c.vocabSize(), l = c.nLayers();
        double linear = 2 * s * (d * q + 2 * d * kv + q * d + 3 * d * h) * l;
        double cls = 2 * s * d * v;
        double attn = (4 + 10) * s * s * q * l;
        return 3 * linear + 3 * cls + attn;
    }

    /**
     * GFLOPS of {@link Blas#get()} on n×n×n: the fastest of 3–5 timed calls after one warm-up. The peak is what the
     * machine can do, and a shared machine only ever slows a call down: a median let one busy second of another
     * process halve the peak (and double the utilisation) of a run.
     */
    static double sgemmPeakGflops(int n) {
        Sgemm g = Blas.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(4L * n * n, 64), b = arena.allocate(4L * n * n, 64), c = arena.allocate(4L * n * n, 64);
            for (long i = 0; i < (long) n * n; i++) { a.setAtIndex(ValueLayout.JAVA_FLOAT, i, (i % 7) * 0.1f); b.setAtIndex(ValueLayout.JAVA_FLOAT, i, (i % 5) * 0.1f); }
            double[] t = Timing.measure(() -> g.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, n, n, n, 1f, a, 0, n, b, 0, n, 0f, c, 0, n), 1, 5, 3, 3);
            return 2.0 * n * n * n / java.util.Arrays.stream(t).min().orElseThrow() / 1e9;
        }
    }

    /** "OpenBLAS 0.3.21 … core Cooperlake (OPENBLAS_CORETYPE unset)" from tools/blas_info.py's JSON object. */
    public static String blasSummary(Object blas) {
        if (!(blas instanceof Map<?, ?> m)) return "BLAS unknown (no blas field: an older tools/ script?)";
        StringBuilder b = new StringBuilder();
        if (m.get("libraries") instanceof List<?> libs) {
            for (Object l : libs) {
                if (!(l instanceof Map<?, ?> lib)) continue;
                b.append(b.isEmpty() ? "" : "; ").append(lib.get("path"));
                if (lib.get("config") != null) b.append(", ").append(lib.get("config"));
                if (lib.get("core") != null) b.append(", core ").append(lib.get("core"));
            }
        }
        if (b.isEmpty()) b.append(m.get("config") != null ? m.get("config") : "no OpenBLAS loaded");
        Object env = m.get("coretype_env");
        return b + " (OPENBLAS_CORETYPE" + (env == null ? " unset" : "=" + env) + ")";
    }

    /**
     * Runs tools/torch_train_step.py for the same config, or with {@code mode} arguments (--mode …) tools/torch_lora_step.py;
     * returns its JSON line as a map.
     */
    static Map<String, Object> torchStep(BenchOptions o, ModelConfig c, int steps, List<String> mode) {
        Path script = torchScript(o, mode.isEmpty() ? "torch_train_step.py" : "torch_lora_step.py");
        String python = o.get("python", Machine.python());
        String torchModel = List.of("stories15m", "stories42m", "stories110m", "tiny", "qwen3-0.6b").contains(c.name()) ? c.name() : "stories15m";
        List<String> cmd = new ArrayList<>(List.of(python, script.toString(), "--model", torchModel, "--steps", String.valueOf(steps), "--json"));
        cmd.addAll(mode);
        if (o.has("torch-threads")) cmd.addAll(List.of("--threads", o.get("torch-threads", "")));
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("dim", c.dim()); fields.put("hiddenDim", c.hiddenDim()); fields.put("nLayers", c.nLayers()); fields.put("nHeads", c.nHeads());
        fields.put("nKvHeads", c.nKvHeads()); fields.put("headDim", c.headDim()); fields.put("vocabSize", c.vocabSize()); fields.put("seqLen", c.seqLen());
        fields.forEach((k, v) -> { cmd.add("--set"); cmd.add(k + "=" + v); });
        try {
            Process proc = new ProcessBuilder(cmd).redirectErrorStream(false).start();
            byte[] err = new byte[0];
            String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            err = proc.getErrorStream().readAllBytes();
            if (proc.waitFor() != 0 || out.isEmpty()) {
                String e = new String(err, StandardCharsets.UTF_8).strip();
                String last = e.isEmpty() ? out : e.substring(e.lastIndexOf('\n') + 1);
                throw new IllegalStateException("[bench] " + String.join(" ", cmd.subList(0, 2)) + " failed: " + last + " (is PyTorch installed for " + python + "?)");
            }
            String line = out.substring(out.lastIndexOf('\n') + 1);
            Object parsed = Json.parse(line);
            if (!(parsed instanceof Map<?, ?> map)) throw new IllegalStateException("[bench] " + script.getFileName() + " printed no JSON object: " + line);
            Map<String, Object> result = new LinkedHashMap<>();
            map.forEach((k, v) -> result.put(String.valueOf(k), v));
            result.put("command", String.join(" ", cmd));
            return result;
        } catch (IOException e) {
            throw new IllegalStateException("[bench] cannot run " + python + ": " + e.getMessage() + "; pass --python PATH", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("[bench] interrupted while running PyTorch", e);
        }
    }

    static Path torchScript(BenchOptions o, String name) {
        if (o.has("torch-script")) return Path.of(o.get("torch-script", ""));
        List<Path> candidates = new ArrayList<>();
        String home = System.getProperty("ane4j.home");
        if (home != null) candidates.add(Path.of(home, "tools", name));
        candidates.add(Path.of("tools", name));
        for (Path p : candidates) if (Files.isRegularFile(p)) return p;
        throw new IllegalArgumentException("[bench] cannot find tools/" + name + " (looked in " + candidates + "); pass --torch-script PATH");
    }
}
