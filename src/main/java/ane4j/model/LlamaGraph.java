package ane4j.model;

import ane4j.mil.DType;
import ane4j.mil.FunctionBuilder;
import ane4j.mil.Literal;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;

/**
 * The whole llama-style model (as {@link CpuModel} and the training kernels compute it) written once with the fluent
 * MIL API, loss included, so that {@code Mil.grad} can differentiate it generically: the forward of a training step
 * as one function.
 *
 * <pre>
 *   inputs : tokens, targets int32 (S); then every parameter of {@link ParameterLayout}, in order, named with '_' for
 *            '.' (layers.0.wq → layers_0_wq), shaped as the layout's view; no weight files
 *   output : loss (1) = lossScale · mean_t cross-entropy(logits[t], targets[t])
 * </pre>
 * {@link #buildLogits} is the same graph ending at the logits (S, V) with no targets input: the loss and d_logits are then
 * computed on the CPU ({@code GraphStep} with a {@code CpuLossHead}), as the hand-written step and the ANE's split do.
 * Legend: S = seqLen, D = dim, NH = nHeads, NKV = nKvHeads, HD = headDim, H = hiddenDim, V = vocabSize.
 */
public final class LlamaGraph {
    private LlamaGraph() {}

    /** The MIL input name of parameter {@code viewName}. */
    public static String inputName(String viewName) { return viewName.replace('.', '_'); }

    public static Program build(ModelConfig c, DType dtype, float lossScale) { return build(c, dtype, lossScale, false); }

    /**
     * The graph ending at the classifier: inputs tokens int32 (S) and the parameters (as {@link #build}); output
     * logits (S, V). Its loss is left to the CPU (mean cross-entropy against the targets, {@code CpuLossHead}).
     */
    public static Program buildLogits(ModelConfig c, DType dtype) { return build(c, dtype, 1f, true); }

    private static Program build(ModelConfig c, DType dtype, float lossScale, boolean logitsOnly) {
        if (c.residualScale() != 1f) throw new IllegalArgumentException("[graph] " + c.name() + ": residualScale " + c.residualScale() + " is not supported by the graph model; use 1");
        ParameterLayout layout = new ParameterLayout(c);
        return Mil.program().function("main", f -> {
            int s = c.seqLen(), d = c.dim(), nh = c.nHeads(), nkv = c.nKvHeads(), hd = c.headDim(), v = c.vocabSize();
            Value tokens = f.input("tokens", Mil.int32(s)), targets = logitsOnly ? null : f.input("targets", Mil.int32(s));
            java.util.Map<String, Value> p = new java.util.HashMap<>();
            for (ParameterView view : layout.views()) p.put(view.name(), f.input(inputName(view.name()), TensorType.of(dtype, view.shape())));
            Value[] rope = ropeTables(f, c, dtype);
            Value mask = causalMask(f, s, dtype);

            Value h = f.gather(p.get("tokenEmbedding"), tokens, 0);                                  // (S, D)
            for (int l = 0; l < c.nLayers(); l++) {
                String n = "layers." + l + ".";
                // attention: xn = rmsnorm(h); q, k, v projections; heads split
                Value xn = rmsnorm(f, h, p.get(n + "rmsAtt"), c.normEps());
                Value q = heads(f, f.matmul(xn, p.get(n + "wq"), false, true), s, nh, hd);           // (NH, S, HD)
                Value k = heads(f, f.matmul(xn, p.get(n + "wk"), false, true), s, nkv, hd);          // (NKV, S, HD)
                Value vv = heads(f, f.matmul(xn, p.get(n + "wv"), false, true), s, nkv, hd);
                if (c.qkNorm()) {
                    q = rmsnorm(f, q, p.get(n + "qNorm"), c.normEps());
                    k = rmsnorm(f, k, p.get(n + "kNorm"), c.normEps());
                }
                q = rope(f, q, rope, c.ropeStyle());
                k = rope(f, k, rope, c.ropeStyle());
                if (nkv != nh) {
                    // GQA: query head j uses kv head j / (NH/NKV) (repeat_interleave)
                    k = repeatHeads(f, k, nh / nkv);
                    vv = repeatHeads(f, vv, nh / nkv);
                }
                // att = softmax(q·kᵀ/√HD + mask) (NH, S, S); out = att·v → (S, NH·HD) → ·woᵀ
                Value scores = f.add(f.mul(f.matmul(q, k, false, true), (float) (1 / Math.sqrt(hd))), mask);
                Value att = f.matmul(f.softmax(scores, -1), vv);
                Value merged = f.reshape(f.transpose(att, 1, 0, 2), s, nh * hd);
                h = f.add(h, f.matmul(merged, p.get(n + "wo"), false, true));
                // SwiGLU ffn: h += (silu(xn·w1ᵀ) ⊙ (xn·w3ᵀ))·w2ᵀ
                Value xn2 = rmsnorm(f, h, p.get(n + "rmsFfn"), c.normEps());
                Value gate = f.silu(f.matmul(xn2, p.get(n + "w1"), false, true));
                Value up = f.matmul(xn2, p.get(n + "w3"), false, true);
                h = f.add(h, f.matmul(f.mul(gate, up), p.get(n + "w2"), false, true));
            }
            Value hn = rmsnorm(f, h, p.get("rmsFinal"), c.normEps());
            Value logits = f.matmul(hn, c.tiedEmbedding() ? p.get("tokenEmbedding") : p.get("wcls"), false, true);   // (S, V)
            if (logitsOnly) f.output(f.named("logits", logits));   // the matmul's own output: no copy of (S, V)
            else {
                Value loss = f.crossEntropyLabels(logits, targets);
                f.output(f.named("loss", lossScale == 1f ? f.identity(loss) : f.mul(loss, lossScale)));
            }
            assert logits.shape()[1] == v && d > 0;
        }).build();
    }

    /** x · (mean(x²) + eps)^(−½) · w over the last axis (the RMSNorm pattern: mul, reduce_mean, add, rsqrt, mul). */
    static Value rmsnorm(FunctionBuilder f, Value x, Value w, float eps) {
        Value ms = f.reduceMean(f.mul(x, x), true, -1);
        return f.mul(f.mul(x, f.rsqrt(f.add(ms, eps))), w);
    }

    /** (S, N·HD) → (N, S, HD) */
    static Value heads(FunctionBuilder f, Value x, int s, int n, int hd) {
        return f.transpose(f.reshape(x, s, n, hd), 1, 0, 2);
    }

    /** (NKV, S, HD) → (NKV·g, S, HD), each kv head repeated g times in place. */
    static Value repeatHeads(FunctionBuilder f, Value x, int g) {
        int[] sh = x.shape();
        return f.reshape(f.tile(f.reshape(x, sh[0], 1, sh[1], sh[2]), 1, g, 1, 1), sh[0] * g, sh[1], sh[2]);
    }

    /** cos and sin of p·freq_i (ModelConfig.ropeFrequencies), shaped (1, S, HD/2, 1) (interleaved pairs) or (1, S, 1, HD/2) (half). */
    static Value[] ropeTables(FunctionBuilder f, ModelConfig c, DType dtype) {
        int s = c.seqLen(), half = c.headDim() / 2;
        float[] cos = new float[s * half], sin = new float[s * half];
        double[] freq = c.ropeFrequencies();
        for (int t = 0; t < s; t++)
            for (int i = 0; i < half; i++) {
                double a = t * freq[i];
                cos[t * half + i] = (float) Math.cos(a);
                sin[t * half + i] = (float) Math.sin(a);
            }
        TensorType t = c.ropeStyle() == RopeStyle.HALF ? TensorType.of(dtype, 1, s, 1, half) : TensorType.of(dtype, 1, s, half, 1);
        return new Value[] {f.constant(Literal.ofFloats(t, cos)), f.constant(Literal.ofFloats(t, sin))};
    }

    /** RoPE on (N, S, HD): each pair (a, b) → (a·cos − b·sin, a·sin + b·cos); pairs (2i, 2i+1) or (i, i + HD/2). */
    static Value rope(FunctionBuilder f, Value x, Value[] cs, RopeStyle style) {
        int[] sh = x.shape();
        int n = sh[0], s = sh[1], hd = sh[2];
        boolean half = style == RopeStyle.HALF;
        Value pairs = half ? f.reshape(x, n, s, 2, hd / 2) : f.reshape(x, n, s, hd / 2, 2);
        var ab = f.split(pairs, half ? 2 : 3, 2);
        Value a = ab.get(0), b = ab.get(1), cos = cs[0], sin = cs[1];
        Value ra = f.sub(f.mul(a, cos), f.mul(b, sin)), rb = f.add(f.mul(a, sin), f.mul(b, cos));
        return f.reshape(f.concat(half ? 2 : 3, ra, rb), n, s, hd);
    }

    /** 0 on and below the diagonal, −1e4 above it (exp underflows to 0 after softmax's max; no −inf − −inf). */
    static Value causalMask(FunctionBuilder f, int s, DType dtype) {
        float[] m = new float[s * s];
        for (int i = 0; i < s; i++) for (int j = i + 1; j < s; j++) m[i * s + j] = -1e4f;
        return f.constant(Literal.ofFloats(TensorType.of(dtype, 1, s, s), m));
    }
}
