package ane4j.model;

import ane4j.blas.MatVec;
import ane4j.blas.Parallel;
import java.util.Arrays;
import java.util.function.IntConsumer;

/**
 * Plain-Java forward pass for one token at a time with a KV cache, with the semantics of llama2.c's
 * {@code run.c forward()} extended to Qwen3: GQA (query head h reads KV head h / (nHeads/nKvHeads)), QK-norm
 * (RMSNorm over each head of q and k, before RoPE), both RoPE pairings, headDim ≠ dim/nHeads, an untied
 * classifier, and the residual scale α. Used for generation and as the CPU reference of the model.
 * Not thread-safe: one instance per generating thread.
 *
 * <p>Legend: D = dim, H = hiddenDim, L = nLayers, NH = nHeads, NKV = nKvHeads, HD = headDim,
 * Q = NH·HD, KV = NKV·HD, V = vocabSize, S = seqLen.
 */
public final class CpuModel {
    private final ModelConfig c;
    private final float[] w; // the weights, in ParameterLayout order
    private final ParameterLayout layout;

    // activations for the current position
    private final float[] x;      // (D) residual stream
    private final float[] xb;     // (D) normed input / branch output
    private final float[] q;      // (Q)
    private final float[] k;      // (KV)
    private final float[] v;      // (KV)
    private final float[] att;    // (NH, S) attention weights
    private final float[] attOut; // (Q) attention output before wo
    private final float[] hb;     // (H) silu(w1 x) ⊙ w3 x
    private final float[] hb2;    // (H) w3 x
    private final float[] logits; // (V)
    // KV cache
    private final float[] keyCache;   // (L, S, KV)
    private final float[] valueCache; // (L, S, KV)
    // RoPE tables
    private final float[] cos, sin;   // (S, HD/2): angle pos·freq_i (theta^(-2i/HD), scaled: ModelConfig.ropeFrequencies)

    public CpuModel(Parameters params) {
        this.c = params.config();
        this.w = params.data();
        this.layout = params.layout();
        int d = c.dim(), s = c.seqLen();
        x = new float[d];
        xb = new float[d];
        q = new float[c.qDim()];
        k = new float[c.kvDim()];
        v = new float[c.kvDim()];
        att = new float[c.nHeads() * s];
        attOut = new float[c.qDim()];
        hb = new float[c.hiddenDim()];
        hb2 = new float[c.hiddenDim()];
        logits = new float[c.vocabSize()];
        long cache = (long) c.nLayers() * s * c.kvDim();
        if (cache > Integer.MAX_VALUE - 16)
            throw new IllegalArgumentException("[cpu] KV cache of " + cache + " floats is too large; use a shorter seqLen (withSeqLen)");
        keyCache = new float[(int) cache];
        valueCache = new float[(int) cache];
        int half = c.headDim() / 2;
        cos = new float[s * half];
        sin = new float[s * half];
        double[] freq = c.ropeFrequencies();
        for (int pos = 0; pos < s; pos++) {
            for (int i = 0; i < half; i++) {
                cos[pos * half + i] = (float) Math.cos(pos * freq[i]);
                sin[pos * half + i] = (float) Math.sin(pos * freq[i]);
            }
        }
    }

    public ModelConfig config() { return c; }

    /**
     * Runs token {@code token} at position {@code pos} (positions 0..pos-1 must have been run before, in order)
     * and returns the logits (V), a buffer reused by the next call.
     */
    public float[] forward(int token, int pos) {
        if (token < 0 || token >= c.vocabSize()) throw new IllegalArgumentException("[cpu] token " + token + " is outside the vocabulary of " + c.vocabSize());
        if (pos < 0 || pos >= c.seqLen()) throw new IllegalArgumentException("[cpu] position " + pos + " is outside 0.." + (c.seqLen() - 1) + " (seqLen)");
        int d = c.dim(), hd = c.headDim(), kvDim = c.kvDim(), hidden = c.hiddenDim(), s = c.seqLen();
        float alpha = c.residualScale();
        // token embedding row into the residual stream
        System.arraycopy(w, layout.tokenEmbedding().offset() + token * d, x, 0, d);

        for (int l = 0; l < c.nLayers(); l++) {
            ParameterLayout.Layer ly = layout.layer(l);
            // attention rmsnorm
            rmsnorm(xb, 0, x, 0, w, ly.rmsAtt().offset(), d, c.normEps());
            // qkv matmuls for this position: q = wq·xb (Q), k = wk·xb (KV), v = wv·xb (KV)
            matmul(q, xb, w, ly.wq().offset(), c.qDim(), d);
            matmul(k, xb, w, ly.wk().offset(), kvDim, d);
            matmul(v, xb, w, ly.wv().offset(), kvDim, d);
            // QK-norm (Qwen3): RMSNorm over each head of q and k, one weight vector (HD) shared by the heads
            if (c.qkNorm()) {
                for (int h = 0; h < c.nHeads(); h++) rmsnorm(q, h * hd, q, h * hd, w, ly.qNorm().offset(), hd, c.normEps());
                for (int h = 0; h < c.nKvHeads(); h++) rmsnorm(k, h * hd, k, h * hd, w, ly.kNorm().offset(), hd, c.normEps());
            }
            // RoPE: rotate each pair of every q and k head by pos·freq_i
            for (int h = 0; h < c.nHeads(); h++) rope(q, h * hd, pos);
            for (int h = 0; h < c.nKvHeads(); h++) rope(k, h * hd, pos);
            // store k, v at this position of the cache
            int layerCache = l * s * kvDim;
            System.arraycopy(k, 0, keyCache, layerCache + pos * kvDim, kvDim);
            System.arraycopy(v, 0, valueCache, layerCache + pos * kvDim, kvDim);
            // causal multi-head attention over positions 0..pos
            attention(layerCache, pos);
            // output projection xb = wo·attOut (D), then the residual connection
            matmul(xb, attOut, w, ly.wo().offset(), d, c.qDim());
            for (int i = 0; i < d; i++) x[i] += alpha * xb[i];

            // ffn rmsnorm
            rmsnorm(xb, 0, x, 0, w, ly.rmsFfn().offset(), d, c.normEps());
            // SwiGLU: hb = silu(w1·xb) ⊙ (w3·xb) (H)
            matmul(hb, xb, w, ly.w1().offset(), hidden, d);
            matmul(hb2, xb, w, ly.w3().offset(), hidden, d);
            for (int i = 0; i < hidden; i++) {
                float a = hb[i];
                hb[i] = a / (1f + (float) Math.exp(-a)) * hb2[i]; // silu(a) = a·σ(a)
            }
            // xb = w2·hb (D), residual connection
            matmul(xb, hb, w, ly.w2().offset(), d, hidden);
            for (int i = 0; i < d; i++) x[i] += alpha * xb[i];
        }
        // final rmsnorm and classifier: logits = wcls·x (V)
        rmsnorm(x, 0, x, 0, w, layout.rmsFinal().offset(), d, c.normEps());
        matmul(logits, x, w, layout.classifier().offset(), c.vocabSize(), d);
        return logits;
    }

    /**
     * Puts k and v (KV each, after RoPE: what {@link #forward} stores) at position {@code pos} of layer {@code layer}'s
     * cache: a prefill that ran elsewhere (a backend's kernels) hands its cache to this model, which then decodes from
     * {@code forward(token, n)} on.
     */
    public void setCache(int layer, int pos, float[] k, float[] v) {
        if (layer < 0 || layer >= c.nLayers() || pos < 0 || pos >= c.seqLen())
            throw new IllegalArgumentException("[cpu] cache slot layer " + layer + ", position " + pos + " is outside " + c.nLayers() + " layers × seqLen " + c.seqLen());
        int at = (layer * c.seqLen() + pos) * c.kvDim();
        System.arraycopy(k, 0, keyCache, at, c.kvDim());
        System.arraycopy(v, 0, valueCache, at, c.kvDim());
    }

    private int attLayerCache, attPos;                          // the layer and position attendHead works on
    private final IntConsumer attendHead = this::attendHead;    // made once: no allocation per token

    private void attention(int layerCache, int pos) {
        attLayerCache = layerCache;
        attPos = pos;
        if ((long) c.nHeads() * (pos + 1) * c.headDim() > 32_768) Parallel.forEach(c.nHeads(), attendHead);
        else for (int h = 0; h < c.nHeads(); h++) attendHead(h);
    }

    // head h of causal attention over positions 0..pos of the cache: att (S) row h, attOut (HD) of head h
    private void attendHead(int h) {
        int layerCache = attLayerCache, pos = attPos;
        int hd = c.headDim(), kvDim = c.kvDim(), s = c.seqLen(), group = c.groupSize();
        float scale = (float) (1.0 / Math.sqrt(hd));
        int qo = h * hd;
        int kvo = (h / group) * hd; // GQA: query head h reads KV head h / (NH/NKV)
        int ao = h * s;
        // scores = q·k / sqrt(HD) for t = 0..pos
        for (int t = 0; t <= pos; t++) {
            int ko = layerCache + t * kvDim + kvo;
            float dot = 0f;
            for (int i = 0; i < hd; i++) dot += q[qo + i] * keyCache[ko + i];
            att[ao + t] = dot * scale;
        }
        softmax(att, ao, pos + 1);
        // weighted sum of the values
        Arrays.fill(attOut, qo, qo + hd, 0f);
        for (int t = 0; t <= pos; t++) {
            float a = att[ao + t];
            int vo = layerCache + t * kvDim + kvo;
            for (int i = 0; i < hd; i++) attOut[qo + i] += a * valueCache[vo + i];
        }
    }

    // rotates the HD elements of one head at `off`, pairs chosen by the config's RopeStyle
    private void rope(float[] vec, int off, int pos) {
        int half = c.headDim() / 2, t = pos * half;
        boolean interleaved = c.ropeStyle() == RopeStyle.INTERLEAVED;
        for (int i = 0; i < half; i++) {
            int a = interleaved ? off + 2 * i : off + i;         // first element of pair i
            int b = interleaved ? off + 2 * i + 1 : off + i + half; // second element
            float v0 = vec[a], v1 = vec[b], fc = cos[t + i], fs = sin[t + i];
            vec[a] = v0 * fc - v1 * fs;
            vec[b] = v0 * fs + v1 * fc;
        }
    }

    /** out = x / sqrt(mean(x²) + eps) ⊙ weight, over n elements. out may alias x. */
    static void rmsnorm(float[] out, int oo, float[] x, int xo, float[] weight, int wo, int n, float eps) {
        float ss = 0f;
        for (int i = 0; i < n; i++) ss += x[xo + i] * x[xo + i];
        ss = (float) (1.0 / Math.sqrt(ss / n + eps));
        for (int i = 0; i < n; i++) out[oo + i] = weight[wo + i] * (ss * x[xo + i]);
    }

    /** In-place softmax of a[off .. off+n). */
    static void softmax(float[] a, int off, int n) {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = off; i < off + n; i++) max = Math.max(max, a[i]);
        float sum = 0f;
        for (int i = off; i < off + n; i++) {
            a[i] = (float) Math.exp(a[i] - max); // subtract the max for numerical stability
            sum += a[i];
        }
        for (int i = off; i < off + n; i++) a[i] /= sum;
    }

    /** out (rows) = W (rows, cols) at w[wo…] · x (cols): blas's matvec, rows split across the cores (each row summed in one fixed order). */
    static void matmul(float[] out, float[] x, float[] w, int wo, int rows, int cols) {
        MatVec.multiply(out, x, w, wo, rows, cols);
    }
}
