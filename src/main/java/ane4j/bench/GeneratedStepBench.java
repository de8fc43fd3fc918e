package ane4j.bench;

import ane4j.backend.Backend;
import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.TensorType;
import ane4j.model.LlamaGraph;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.Rng;
import ane4j.train.AdamW;
import ane4j.train.CpuLossHead;
import ane4j.train.GraphStep;
import ane4j.train.LossScaler;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ane4j bench step --kernels generated}: the same training step as {@link StepBench} (batch 1, the config's
 * seqLen, loss scaling, clipping, AdamW), but with the model written once with the fluent MIL API ({@link LlamaGraph}),
 * differentiated by {@code Mil.grad} and run as a {@link GraphStep} (forward and backward programs on the backend,
 * weight gradients of the projections and the classifier by sgemm on the CPU, the embedding lookup on the CPU, and by
 * default the loss with d_logits on the CPU, {@link CpuLossHead}; {@code --loss-head mil} keeps the graph's own
 * cross-entropy in MIL).
 */
final class GeneratedStepBench {
    private GeneratedStepBench() {}

    static BenchResult run(BenchOptions o, Backend backend, ModelConfig cfg, int steps, int warmup, String storage) {
        int s = cfg.seqLen();
        Parameters params = Parameters.init(cfg, o.getInt("seed", 1));
        float[] p = params.data(), grads = new float[p.length], m = new float[p.length], v = new float[p.length];
        AdamW adamw = new AdamW(0.9f, 0.95f, 1e-8f, 0.1f);
        boolean fp16 = storage.equals("fp16");
        float lossScale = fp16 ? LossScaler.DEFAULT_SCALE : 1f;
        Rng rng = new Rng(o.getInt("seed", 1) * 7919L);
        List<String> names = params.layout().views().stream().map(w -> LlamaGraph.inputName(w.name())).toList();

        String lossHead = o.get("loss-head", "cpu");
        if (!lossHead.equals("cpu") && !lossHead.equals("mil")) throw new IllegalArgumentException("[bench] --loss-head " + lossHead + " must be cpu or mil");
        boolean cpuLoss = lossHead.equals("cpu");

        long c0 = System.nanoTime();
        DType dt = fp16 ? DType.FP16 : DType.FP32;
        // cpu: the graph ends at the logits and the loss with d_logits (scaled) is formed on the CPU, as the hand-written
        // step does; mil: the graph's own cross-entropy, scaled in the graph
        GraphStep step = cpuLoss ? new GraphStep(LlamaGraph.buildLogits(cfg, dt), new CpuLossHead("logits", "targets"), names, backend, GraphStep.Options.defaults())
                : new GraphStep(LlamaGraph.build(cfg, dt, lossScale), "loss", names, backend, GraphStep.Options.defaults());
        double compileMs = (System.nanoTime() - c0) / 1e6;
        double[] fb = new double[steps], opt = new double[steps], total = new double[steps];
        float firstLoss = Float.NaN, lastLoss = Float.NaN;
        TensorBuffer tokens = TensorBuffer.allocate(TensorType.of(DType.INT32, s)), targets = TensorBuffer.allocate(TensorType.of(DType.INT32, s));
        Map<String, TensorBuffer> data = Map.of("tokens", tokens, "targets", targets);
        try (step) {
            for (int i = 0; i < warmup + steps; i++) {
                for (int t = 0; t < s; t++) { tokens.set(t, rng.nextInt(cfg.vocabSize())); targets.set(t, rng.nextInt(cfg.vocabSize())); }
                long t0 = System.nanoTime();
                float loss = cpuLoss ? step.forwardBackward(p, grads, data, lossScale) : step.forwardBackward(p, grads, data) / lossScale;
                long t1 = System.nanoTime();
                float k = 1f / lossScale;
                float norm = (float) Math.sqrt(AdamW.sumOfSquares(grads, k));
                adamw.step(step.views(), p, grads, m, v, i + 1, 1e-4f, k * AdamW.clipFactor(norm, 1f), true);
                long t2 = System.nanoTime();
                if (i == 0) firstLoss = loss;
                lastLoss = loss;
                if (i < warmup) continue;
                int j = i - warmup;
                fb[j] = (t1 - t0) / 1e6;
                opt[j] = (t2 - t1) / 1e6;
                total[j] = (t2 - t0) / 1e6;
            }
        }
        double msPerStep = Timing.medianOf(total);
        BenchResult r = new BenchResult("step", "Training step: " + cfg.name() + " (batch 1, seq " + s + "), " + backend.name() + " backend, generated kernels (Mil.grad), "
                + storage + " storage, loss on the " + (cpuLoss ? "CPU" : "backend (MIL)"), List.of("phase", "ms", "% of step"));
        r.meta("backend", backend.name());
        r.meta("model", cfg.name());
        r.meta("kernels", "generated");
        r.meta("lossHead", lossHead);
        r.meta("parameters", (long) p.length);
        r.row("forward + backward (backend programs, CPU dW and lookups)", Timing.medianOf(fb), 100 * Timing.medianOf(fb) / msPerStep);
        r.row("AdamW + clip", Timing.medianOf(opt), 100 * Timing.medianOf(opt) / msPerStep);
        r.row("total (median step)", msPerStep, 100.0);
        r.put("kernels", "generated");
        r.put("median", String.format(Locale.ROOT, "%.1f ms/step", msPerStep));
        r.put("msPerStep", msPerStep);
        r.put("msPerStepMin", Arrays.stream(total).min().orElse(Double.NaN));
        r.put("steps", steps);
        r.put("tokensPerSecond", s / (msPerStep / 1e3));
        r.put("compileMs", compileMs);
        r.put("forwardOps", step.forwardProgram().main().operations().size());
        r.put("backwardOps", step.backwardProgram().main().operations().size());
        r.put("cpuWeightGradients", step.split().cpuGrads().size());
        r.put("firstLoss", firstLoss);
        r.put("lastLoss", lastLoss);
        r.note(String.format(Locale.ROOT, "generated: forward %d ops, backward %d ops, %d weight gradients by sgemm on the CPU, the loss %s; compare with --kernels hand (the default)",
                step.forwardProgram().main().operations().size(), step.backwardProgram().main().operations().size(), step.split().cpuGrads().size(),
                cpuLoss ? "and d_logits on the CPU (--loss-head mil: in MIL)" : "in MIL (--loss-head cpu: on the CPU)"));
        r.chart(new BenchResult.ChartSpec(true, "phase", List.of("ms"), "ms per step"));
        return r;
    }
}
