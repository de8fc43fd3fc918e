package ane4j.bench;

import ane4j.backend.Backend;
import ane4j.backend.ref.RefBackend;
import ane4j.infer.BackendGenerator;
import ane4j.mil.DType;
import ane4j.model.CpuModel;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.Sampler;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * {@code ane4j bench generate}: prefill and decode tokens/s of generation on a backend against the CPU path, side by
 * side in one run, for each model (default stories15m, stories110m, qwen3-0.6b at their full size, random weights from
 * {@code Parameters.init}: speed does not depend on the values). Rows per model: the CPU path (the prompt fed one token
 * at a time, as run.c), then the backend's prefill kernels with decoding on the CPU from their cache and with the
 * decode kernels. Greedy; each path's tokens are compared with the CPU's. The first call compiles and warms up (its wall
 * time is the "first call" column); the figures are medians of {@code --reps} calls after it.
 */
final class GenerateBench {
    private GenerateBench() {}

    static final List<String> MODELS = List.of("stories15m", "stories110m", "qwen3-0.6b");

    static BenchResult run(BenchOptions o, Backend b) {
        o.check("generate", Set.of("models", "prompt-tokens", "tokens", "reps", "decode", "layers", "seed"));
        boolean quick = o.quick();
        List<String> models = o.has("models") ? List.of(o.get("models", "").split(",")) : quick ? List.of("tiny", "stories15m") : MODELS;
        int promptTokens = o.getInt("prompt-tokens", quick ? 16 : 64), tokens = o.getInt("tokens", quick ? 8 : 32), reps = o.getInt("reps", quick ? 1 : 3);
        int layers = o.getInt("layers", 0);
        long seed = o.getInt("seed", 1);
        String decodes = o.get("decode", "both");
        List<BackendGenerator.Decode> paths = switch (decodes) {
            case "both" -> List.of(BackendGenerator.Decode.CPU, BackendGenerator.Decode.BACKEND);
            case "cpu" -> List.of(BackendGenerator.Decode.CPU);
            case "backend" -> List.of(BackendGenerator.Decode.BACKEND);
            default -> throw new IllegalArgumentException("[bench] --decode " + decodes + ": use both, cpu or backend");
        };
        if (promptTokens < 1 || tokens < 2 || reps < 1) throw new IllegalArgumentException("[bench] --prompt-tokens and --reps must be at least 1, --tokens at least 2 (the first comes from the prefill)");
        BenchResult r = new BenchResult("generate", "Generation: prefill and decode tokens/s, " + b.name() + " backend against the CPU path",
                List.of("model", "path", "prompt", "bucket", "prefill ms", "prefill tok/s", "decode tok/s", "first call s", "kernels", "tokens as CPU"));
        r.meta("backend", b.name());
        if (b instanceof RefBackend ref) r.meta("refStorage", ref.options().fp32Storage() ? "fp32" : "fp16");
        for (String name : models) {
            ModelConfig c = ModelConfig.parse(name.strip());
            if (layers > 0) c = new ModelConfig(c.name() + "-" + layers + "l", c.dim(), c.hiddenDim(), layers, c.nHeads(), c.nKvHeads(), c.headDim(), c.vocabSize(), c.seqLen(),
                    c.ropeTheta(), c.ropeStyle(), c.qkNorm(), c.tiedEmbedding(), c.normEps(), c.residualScale());
            int n = Math.min(promptTokens, c.seqLen() - tokens);
            if (n < 1) throw new IllegalArgumentException("[bench] " + c.name() + "'s context of " + c.seqLen() + " holds no prompt before " + tokens + " new tokens; use fewer --tokens");
            Parameters p = Parameters.init(c, seed);
            int[] prompt = new int[n];
            java.util.SplittableRandom rnd = new java.util.SplittableRandom(seed);
            for (int i = 0; i < n; i++) prompt[i] = rnd.nextInt(c.vocabSize());

            // the CPU path: the prompt one token at a time, then one token at a time
            long w0 = System.nanoTime();
            int[] cpuTokens = cpu(p, prompt, tokens, null);
            double first = (System.nanoTime() - w0) / 1e9;
            double[] pre = new double[reps], dec = new double[reps];
            for (int i = 0; i < reps; i++) {
                long[] ns = new long[2];
                cpu(p, prompt, tokens, ns);
                pre[i] = ns[0] / 1e9;
                dec[i] = ns[1] / 1e9;
            }
            double cpuPrefill = Timing.medianOf(pre), cpuDecode = Timing.medianOf(dec);
            r.row(c.name(), "cpu", n, "-", cpuPrefill * 1e3, n / cpuPrefill, tokens / cpuDecode, first, 0, "-");
            r.put(c.name() + " cpu prefill tok/s", n / cpuPrefill);
            r.put(c.name() + " cpu decode tok/s", tokens / cpuDecode);

            try (BackendGenerator.KernelCache cache = new BackendGenerator.KernelCache(b::compile)) {
                for (BackendGenerator.Decode d : paths) {
                    try (BackendGenerator g = new BackendGenerator(p, null, cache, b.name(), d, null, DType.FP16)) {
                        w0 = System.nanoTime();
                        int[] got = g.generateTokens(prompt, tokens, 0f, 1f, 1, -1, -1, t -> {});
                        first = (System.nanoTime() - w0) / 1e9;
                        for (int i = 0; i < reps; i++) {
                            g.generateTokens(prompt, tokens, 0f, 1f, 1, -1, -1, t -> {});
                            BackendGenerator.Stats s = g.lastStats();
                            pre[i] = s.prefillNanos() / 1e9;
                            dec[i] = s.decodeNanos() / 1e9 / s.decodedTokens() * tokens;   // per `tokens` tokens, as the CPU row
                        }
                        double bp = Timing.medianOf(pre), bd = Timing.medianOf(dec);
                        String path = b.name() + ", decode " + d.name().toLowerCase(Locale.ROOT);
                        r.row(c.name(), path, n, g.lastStats().bucket(), bp * 1e3, n / bp, tokens / bd, first, g.compiles(), same(cpuTokens, got, n));
                        r.put(c.name() + " " + path + " prefill tok/s", n / bp);
                        r.put(c.name() + " " + path + " decode tok/s", tokens / bd);
                    }
                }
            }
        }
        r.note("random weights (Parameters.init, seed " + seed + "); greedy; prompt of random tokens; the first new token comes from the prefill's logits, "
                + "decode tok/s counts the tokens after it");
        r.note("cpu: CpuModel one token at a time (blas matvec, " + ane4j.blas.Parallel.threads() + " threads); backend: GenerationKernels (attention + FFN per layer and bucket, "
                + "no weight file), embedding/final norm/classifier on the CPU");
        if (b.name().equals("ref")) r.note("ref is the reference interpreter (the ANE's fp16 numerics on this CPU): its figures say what the path costs here, not what an ANE does");
        r.chart(new BenchResult.ChartSpec(true, "path", List.of("prefill tok/s", "decode tok/s"), "tokens/s"));
        return r;
    }

    /** The CPU path's greedy tokens; {@code ns}, when given, gets the prefill (prompt to first logits) and decode nanoseconds. */
    static int[] cpu(Parameters p, int[] prompt, int tokens, long[] ns) {
        CpuModel m = new CpuModel(p);
        Sampler s = new Sampler(0f, 1f, 1);
        int[] out = Arrays.copyOf(prompt, prompt.length + tokens);
        long t0 = System.nanoTime();
        float[] logits = null;
        for (int pos = 0; pos < prompt.length; pos++) logits = m.forward(prompt[pos], pos);
        long t1 = System.nanoTime();
        out[prompt.length] = s.sample(logits);
        for (int i = 1; i < tokens; i++) {
            int pos = prompt.length + i - 1;
            out[pos + 1] = s.sample(m.forward(out[pos], pos));
        }
        long t2 = System.nanoTime();
        if (ns != null) {
            ns[0] = t1 - t0;
            ns[1] = (t2 - t1) * tokens / (tokens - 1);   // tokens − 1 forwards, per `tokens` tokens as the backend rows
        }
        return out;
    }

    /** "yes", or where the backend's greedy tokens part from the CPU's (fp16 rounding deciding a near-tie). */
    static String same(int[] cpu, int[] got, int n) {
        for (int i = n; i < Math.min(cpu.length, got.length); i++) if (cpu[i] != got[i]) return "from new token " + (i - n + 1);
        return cpu.length == got.length ? "yes" : "length " + got.length;
    }
}
