package ane4j.infer;

import ane4j.backend.ref.RefBackend;
import ane4j.mil.DType;
import ane4j.model.CpuModel;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterView;
import ane4j.model.Parameters;
import ane4j.model.Sampler;

import java.util.Arrays;

/** Models and CPU references for the generation tests. */
final class GenModels {
    private GenModels() {}

    /**
     * A preset's architecture (widths, heads, head dim, GQA, QK-norm, RoPE style and theta, seqLen) with 2 layers and a
     * 512-token vocabulary, so the reference backend runs it in a second; tiny as it is.
     */
    static ModelConfig reduced(String preset) {
        ModelConfig c = ModelConfig.parse(preset);
        if (preset.equals("tiny")) return c;
        return new ModelConfig(c.name() + "-2l", c.dim(), c.hiddenDim(), 2, c.nHeads(), c.nKvHeads(), c.headDim(), 512, c.seqLen(),
                c.ropeTheta(), c.ropeStyle(), c.qkNorm(), c.tiedEmbedding(), c.normEps(), c.residualScale());
    }

    /**
     * Parameters.init scaled so the model is not flat: every matrix ×{@code gain} (an untrained init gives near-uniform
     * logits whose greedy continuation repeats one token, which would compare nothing), norm weights as initialised.
     */
    static Parameters model(ModelConfig c, long seed, float gain) {
        Parameters p = Parameters.init(c, seed);
        for (ParameterView v : p.layout().views())
            if (v.isMatrix()) for (int i = v.offset(); i < v.end(); i++) p.data()[i] *= gain;
        return p;
    }

    /** The CPU path's tokens: {@link ane4j.model.Generator#generateTokens}'s loop on a {@link CpuModel}. */
    static int[] cpuTokens(Parameters p, int[] prompt, int maxTokens, float temperature, float topP, long seed) {
        CpuModel m = new CpuModel(p);
        Sampler s = new Sampler(temperature, topP, seed);
        int seqLen = p.config().seqLen();
        int[] out = Arrays.copyOf(prompt, Math.min(seqLen + 1, prompt.length + maxTokens));
        int n = prompt.length;
        for (int pos = 0; pos + 1 < out.length; pos++) {
            float[] logits = m.forward(out[pos], pos);
            if (pos + 1 < prompt.length) continue;
            out[n++] = s.sample(logits);
        }
        return Arrays.copyOf(out, n);
    }

    /** The CPU's logits at positions n−1 … tokens.length−1 (what {@link BackendGenerator#forcedLogits} returns). */
    static float[][] cpuLogits(Parameters p, int[] tokens, int n) {
        CpuModel m = new CpuModel(p);
        float[][] out = new float[tokens.length - n + 1][];
        for (int pos = 0; pos < tokens.length; pos++) {
            float[] l = m.forward(tokens[pos], pos);
            if (pos >= n - 1) out[pos - n + 1] = l.clone();
        }
        return out;
    }

    /** On the reference backend: fp32 kernels on fp32 storage (exact up to summation order), or the ANE's fp16 numerics. */
    static BackendGenerator ref(Parameters p, BackendGenerator.Decode decode, boolean fp32) {
        RefBackend b = new RefBackend(fp32 ? RefBackend.Options.FP32_STORAGE : RefBackend.Options.ANE_LIKE);
        return new BackendGenerator(p, null, b::compile, "ref", decode, null, fp32 ? DType.FP32 : DType.FP16);
    }

    static int[] backendTokens(BackendGenerator g, int[] prompt, int maxTokens, float temperature, float topP, long seed) {
        return g.generateTokens(prompt, maxTokens, temperature, topP, seed, -1, -1, t -> {});
    }

    /** max |a − b| over every position, relative to max(1, max |b|). */
    static double relDiff(float[][] a, float[][] b) {
        double worst = 0;
        for (int i = 0; i < b.length; i++) {
            double m = 1, diff = 0;
            for (int j = 0; j < b[i].length; j++) {
                m = Math.max(m, Math.abs(b[i][j]));
                diff = Math.max(diff, Math.abs(a[i][j] - b[i][j]));
            }
            worst = Math.max(worst, diff / m);
        }
        return worst;
    }

    static int[] prompt(int n, int vocab, long seed) {
        java.util.SplittableRandom r = new java.util.SplittableRandom(seed);
        int[] t = new int[n];
        for (int i = 0; i < n; i++) t[i] = r.nextInt(vocab);
        return t;
    }
}
