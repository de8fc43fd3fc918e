package ane4j.programs;

import static ane4j.mil.Mil.fp16;
import static ane4j.mil.Mil.fp32;

import ane4j.mil.Arg;
import ane4j.mil.DType;
import ane4j.mil.Fp16;
import ane4j.mil.FunctionBuilder;
import ane4j.mil.Literal;
import ane4j.mil.Mil;
import ane4j.mil.MilBlob;
import ane4j.mil.Op;
import ane4j.mil.Program;
import ane4j.mil.ProgramBuilder;
import ane4j.mil.Value;
import ane4j.mil.Weights;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The acceptance programs A1–A10 of docs/ane-facts.md §9, built with the fluent API: the one library that {@code ane4j bench}
 * (A2 peak, A3 INT8 W8A8 and its fp16 twin, A4 in {@code bench sgemm}), {@code ane4j doctor}'s probe ladder and the golden
 * MIL tests ({@code src/test/resources/golden/mil}) use, so a golden text pins exactly what a benchmark runs. Every
 * factory takes the sizes, so the same graph is available at Stories110M, Qwen3-0.6B and small test sizes. Weights are
 * deterministic from fixed seeds (identity, or uniform ±1/sqrt(fan-in); A2/A3 scaled so that activations stay finite on
 * the reference backend, the ANE's timing does not depend on the values); RoPE tables and the causal mask are the real
 * ones (docs/ane-facts.md §4.4).
 *
 * <p>Weight files (docs/ane-audit.md F12): by default each weight is its own file {@code @model_path/weights/W<i>.bin} with one blob at
 * offset 64, as every hardware-proven training kernel does (maderix {@code mil_dynamic.h}, Orion), because maderix's
 * benchmark report ({@code benchmarks/ANE_BENCHMARK_REPORT.md}, M1/M1 Pro/M1 Max) lists "Single-blob weights FAIL" and
 * "BLOBFILE offset refs FAIL" on M1. {@link WeightFiles#PACKED} keeps maderix's {@code inmem_peak.m}/{@code ane_int8_bench.m}
 * form (all weights in one {@code weight.bin} at offsets 64 + i·(64 + size)), which ran on M4, for {@code doctor} to try.
 */
public final class AcceptancePrograms {
    private AcceptancePrograms() {}

    /** Model sizes used by the dynamic kernels. */
    public record Sizes(String name, int dim, int hiddenDim, int nHeads, int nKvHeads, int headDim, int seqLen, int nLayers, int vocabSize) {
        public int qDim() { return nHeads * headDim; }
        public int kvDim() { return nKvHeads * headDim; }
        public int scoreCh() { return nHeads * seqLen; }
        public float alpha() { return (float) (1 / Math.sqrt(2.0 * nLayers)); }
    }

    public static final Sizes STORIES110M = new Sizes("stories110m", 768, 2048, 12, 12, 64, 256, 12, 32000);
    public static final Sizes QWEN3_06B = new Sizes("qwen3-0.6b", 1024, 3072, 16, 8, 128, 256, 28, 151936);
    /** Tiny sizes with GQA (ratio 2) for interpreter tests. */
    public static final Sizes TINY = new Sizes("tiny", 16, 24, 4, 2, 8, 8, 2, 32);

    // ---------------------------------------------------------------------------------------------------------------
    // deterministic data

    /** Identity matrix [n,n] (row-major), as a conv weight [n,n,1,1]. */
    public static float[] identity(int n) {
        float[] w = new float[n * n];
        for (int i = 0; i < n; i++) w[i * n + i] = 1f;
        return w;
    }

    /** Uniform in ±scale from seed. */
    public static float[] uniform(long seed, int n, float scale) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] w = new float[n];
        for (int i = 0; i < n; i++) w[i] = (float) ((r.nextDouble() * 2 - 1) * scale);
        return w;
    }

    /** RoPE cos table [seq, hd]: entry (p, 2i) = entry (p, 2i+1) = cos(p / 10000^(2i/hd)). */
    public static float[] ropeCos(int seq, int hd) { return rope(seq, hd, true); }

    /** RoPE sin table [seq, hd], same layout as {@link #ropeCos}. */
    public static float[] ropeSin(int seq, int hd) { return rope(seq, hd, false); }

    private static float[] rope(int seq, int hd, boolean cos) {
        float[] t = new float[seq * hd];
        for (int p = 0; p < seq; p++)
            for (int i = 0; i < hd / 2; i++) {
                double theta = p / Math.pow(10000.0, 2.0 * i / hd);
                float v = (float) (cos ? Math.cos(theta) : Math.sin(theta));
                t[p * hd + 2 * i] = v;
                t[p * hd + 2 * i + 1] = v;
            }
        return t;
    }

    /** Causal mask [seq, seq]: 0 where key ≤ query, −65504 otherwise. */
    public static float[] causalMask(int seq) {
        float[] m = new float[seq * seq];
        for (int q = 0; q < seq; q++) for (int k = 0; k < seq; k++) m[q * seq + k] = k <= q ? 0f : -Fp16.MAX;
        return m;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // A1, A2, A3: conv chains

    /** A1: y = cast_fp32(conv(cast_fp16(x), W)) with W [c,c,1,1] in weight.bin at offset 64; x, y fp32 [1,c,1,seq]. */
    public static Program a1Conv(int c, int seq, float[] w) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp32(1, c, 1, seq));
            var x16 = f.named("x16", f.cast(x, DType.FP16));
            var wt = f.weight("W", fp16(c, c, 1, 1), w, "weight.bin");
            var y16 = f.named("y16", f.conv(x16, wt));
            f.output(f.named("y", f.cast(y16, DType.FP32)));
        }).build();
    }

    /** A1 with the identity weight (y = x). */
    public static Program a1Conv(int c, int seq) { return a1Conv(c, seq, identity(c)); }

    // ---------------------------------------------------------------------------------------------------------------
    // dynamic-weight kernels (weights staged in the spatial dimension)

    /** Slice of x [1,C,1,S] along axis 3: [1, C, 1, size] at spatial offset begin. */
    private static Value spatial(FunctionBuilder f, Value x, int begin, int size) {
        return f.sliceBySize(x, new int[] {0, 0, 0, begin}, new int[] {1, x.shape()[1], 1, size});
    }

    /** Slice of x [1,C,1,S] along axis 1: [1, size, 1, S] at channel offset begin. */
    private static Value channels(FunctionBuilder f, Value x, int begin, int size) {
        return f.sliceBySize(x, new int[] {0, begin, 0, 0}, new int[] {1, size, 1, x.shape()[3]});
    }

    /** out [1,OC,1,SEQ] = Wᵀ·act for act [1,IC,1,SEQ] and a staged weight [1,IC,1,OC]. */
    private static Value dynMatmul(FunctionBuilder f, Value act, Value w) {
        int ic = act.shape()[1], seq = act.shape()[3], oc = w.shape()[3];
        var a = f.reshape(act, 1, 1, ic, seq);        // [1,1,IC,SEQ]
        var at = f.transpose(a, 0, 1, 3, 2);           // [1,1,SEQ,IC]
        var wm = f.reshape(w, 1, 1, ic, oc);           // [1,1,IC,OC]
        var y = f.matmul(at, wm);                      // [1,1,SEQ,OC]
        var yt = f.transpose(y, 0, 1, 3, 2);           // [1,1,OC,SEQ]
        return f.reshape(yt, 1, oc, 1, seq);           // [1,OC,1,SEQ]
    }

    /** [1,H·HD,1,SEQ] → [1,H,SEQ,HD] */
    private static Value toHeads(FunctionBuilder f, Value x, int heads) {
        int c = x.shape()[1], seq = x.shape()[3];
        return f.transpose(f.reshape(x, 1, heads, c / heads, seq), 0, 1, 3, 2);
    }

    /** [1,H,SEQ,HD] → [1,H·HD,1,SEQ] */
    private static Value fromHeads(FunctionBuilder f, Value x) {
        int h = x.shape()[1], seq = x.shape()[2], hd = x.shape()[3];
        return f.reshape(f.transpose(x, 0, 1, 3, 2), 1, h * hd, 1, seq);
    }

    /** A4: one dynamic matmul; input [1,ic,1,seq+oc], output [1,oc,1,seq] = Wᵀ·act. */
    public static Program a4DynamicMatmul(int ic, int seq, int oc) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp16(1, ic, 1, seq + oc));
            var act = f.named("act", spatial(f, x, 0, seq));
            var w = f.named("W", spatial(f, x, seq, oc));
            f.output(f.named("y", dynMatmul(f, act, w)));
        }).build();
    }

    /** A5: dx [1,dim,1,seq] = W1ᵀ·dh1 + W3ᵀ·dh3 with input [1,ic,1,2·seq+2·dim] = (dh1, dh3, W1, W3). */
    public static Program a5TwoTermBackward(int ic, int seq, int dim) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp16(1, ic, 1, 2 * seq + 2 * dim));
            var dh1 = f.named("dh1", spatial(f, x, 0, seq));
            var dh3 = f.named("dh3", spatial(f, x, seq, seq));
            var w1 = f.named("W1", spatial(f, x, 2 * seq, dim));
            var w3 = f.named("W3", spatial(f, x, 2 * seq + dim, dim));
            // both terms as [1,1,SEQ,DIM], summed, then one transpose back
            var a1 = f.transpose(f.reshape(dh1, 1, 1, ic, seq), 0, 1, 3, 2);
            var a3 = f.transpose(f.reshape(dh3, 1, 1, ic, seq), 0, 1, 3, 2);
            var m1 = f.named("m1", f.matmul(a1, f.reshape(w1, 1, 1, ic, dim)));
            var m3 = f.named("m3", f.matmul(a3, f.reshape(w3, 1, 1, ic, dim)));
            var sum = f.named("msum", f.add(m1, m3));
            f.output(f.named("dx", f.reshape(f.transpose(sum, 0, 1, 3, 2), 1, dim, 1, seq)));
        }).build();
    }

    /** x [1,H,SEQ,HD] rotated by interleaved-pair RoPE: x·cos + rot(x)·sin with rot(x)[2i] = −x[2i+1], rot(x)[2i+1] = x[2i]. */
    private static Value rope(FunctionBuilder f, Value x, Value cos, Value sin) {
        int h = x.shape()[1], seq = x.shape()[2], hd = x.shape()[3], pairs = seq * hd / 2;
        var p = f.reshape(x, 1, h, pairs, 2);                                            // [1,H,SEQ·HD/2,2]
        var even = f.sliceBySize(p, new int[] {0, 0, 0, 0}, new int[] {1, h, pairs, 1}); // [1,H,N,1]
        var odd = f.sliceBySize(p, new int[] {0, 0, 0, 1}, new int[] {1, h, pairs, 1});  // [1,H,N,1]
        var rot = f.concat(3, f.mul(odd, -1f), even);                                   // [1,H,N,2]
        var r = f.reshape(rot, 1, h, seq, hd);                                           // [1,H,SEQ,HD]
        return f.add(f.mul(x, cos), f.mul(r, sin));
    }

    /** GQA: repeats x [1,KVH,SEQ,HD] ratio times along the heads axis. */
    private static Value tile(FunctionBuilder f, Value x, int ratio) {
        if (ratio == 1) return x;
        Value[] vs = new Value[ratio];
        java.util.Arrays.fill(vs, x);
        return f.concat(1, vs);
    }

    /**
     * A6: dynamic SDPA forward with RoPE and GQA (sdpaFwd). Input [1,DIM,1,SEQ+Q_DIM+2·KV_DIM] = (xnorm, Wqᵀ, Wkᵀ, Wvᵀ);
     * output concat(attn_out, Q_rope, K_rope, V, xnorm) [1,2·Q_DIM+2·KV_DIM+DIM,1,SEQ]. Weight files rope_cos.bin,
     * rope_sin.bin [1,1,SEQ,HD] and mask.bin [1,1,SEQ,SEQ].
     */
    public static Program a6SdpaForward(Sizes s) {
        int dim = s.dim(), seq = s.seqLen(), hd = s.headDim(), qd = s.qDim(), kvd = s.kvDim();
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp16(1, dim, 1, seq + qd + 2 * kvd));
            var xn = f.named("xnorm", spatial(f, x, 0, seq));
            var wq = f.named("Wq", spatial(f, x, seq, qd));
            var wk = f.named("Wk", spatial(f, x, seq + qd, kvd));
            var wv = f.named("Wv", spatial(f, x, seq + qd + kvd, kvd));
            var q = f.named("qf", dynMatmul(f, xn, wq));                   // [1,Q_DIM,1,SEQ]
            var k = f.named("kf", dynMatmul(f, xn, wk));                   // [1,KV_DIM,1,SEQ]
            var v = f.named("vf", dynMatmul(f, xn, wv));                   // [1,KV_DIM,1,SEQ]
            var qh = toHeads(f, q, s.nHeads());                            // [1,H,SEQ,HD]
            var kh = toHeads(f, k, s.nKvHeads());                          // [1,KVH,SEQ,HD]
            var vh = toHeads(f, v, s.nKvHeads());
            var cos = f.weight("rope_cos", fp16(1, 1, seq, hd), ropeCos(seq, hd));
            var sin = f.weight("rope_sin", fp16(1, 1, seq, hd), ropeSin(seq, hd));
            var qr = f.named("q_rope", rope(f, qh, cos, sin));
            var kr = f.named("k_rope", rope(f, kh, cos, sin));
            int ratio = s.nHeads() / s.nKvHeads();
            var kt = tile(f, kr, ratio);                                   // [1,H,SEQ,HD]
            var vt = tile(f, vh, ratio);
            var sc = f.named("scores", f.matmul(qr, kt, false, true));     // [1,H,SEQ,SEQ]
            var scaled = f.mul(sc, (float) (1 / Math.sqrt(hd)));
            var mask = f.weight("mask", fp16(1, 1, seq, seq), causalMask(seq));
            var probs = f.named("probs", f.softmax(f.add(scaled, mask), -1));
            var att = f.named("att", f.matmul(probs, vt));                 // [1,H,SEQ,HD]
            var out = f.concat(1, fromHeads(f, att), fromHeads(f, qr), fromHeads(f, kr), v, xn);
            f.output(f.named("out", out));
        }).build();
    }

    /**
     * A7: fused FFN (ffnFused). Input [1,DIM,1,2·SEQ+3·HIDDEN] = (x2norm, x2, W1ᵀ, W3ᵀ, W2); output
     * concat(x2 + α·W2·(silu(W1 x2n) ⊙ W3 x2n), h1, h3, gate) [1,DIM+3·HIDDEN,1,SEQ].
     */
    public static Program a7FfnFused(Sizes s) {
        int dim = s.dim(), hidden = s.hiddenDim(), seq = s.seqLen();
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp16(1, dim, 1, 2 * seq + 3 * hidden));
            var x2n = f.named("x2norm", spatial(f, x, 0, seq));
            var x2 = f.named("x2", spatial(f, x, seq, seq));
            var w1 = f.named("W1t", spatial(f, x, 2 * seq, hidden));
            var w3 = f.named("W3t", spatial(f, x, 2 * seq + hidden, hidden));
            var w2 = f.named("W2", spatial(f, x, 2 * seq + 2 * hidden, hidden));       // [1,DIM,1,HIDDEN]
            var h1 = f.named("h1", dynMatmul(f, x2n, w1));                              // [1,HIDDEN,1,SEQ]
            var h3 = f.named("h3", dynMatmul(f, x2n, w3));
            var sig = f.named("sig", f.sigmoid(h1));
            var silu = f.named("silu", f.mul(h1, sig));
            var gate = f.named("gate", f.mul(silu, h3));
            var gt = f.transpose(f.reshape(gate, 1, 1, hidden, seq), 0, 1, 3, 2);     // [1,1,SEQ,HIDDEN]
            var w2t = f.transpose(f.reshape(w2, 1, 1, dim, hidden), 0, 1, 3, 2);      // [1,1,HIDDEN,DIM]
            var ffn = f.matmul(gt, w2t);                                               // [1,1,SEQ,DIM]
            var ffnc = f.reshape(f.transpose(ffn, 0, 1, 3, 2), 1, dim, 1, seq);        // [1,DIM,1,SEQ]
            var xnext = f.named("x_next", f.add(x2, f.mul(ffnc, s.alpha())));
            f.output(f.named("out", f.concat(1, xnext, h1, h3, gate)));
        }).build();
    }

    /**
     * A8a: attention backward part 1 (sdpaBwd1). Input [1,4·Q_DIM,1,SEQ] = (Q_rope, K_tiled, V_tiled, da) on channels;
     * output concat(dV, probs, dp) [1,Q_DIM+2·SCORE_CH,1,SEQ]; mask.bin [1,1,SEQ,SEQ].
     */
    public static Program a8SdpaBackward1(Sizes s) {
        int qd = s.qDim(), seq = s.seqLen(), h = s.nHeads();
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp16(1, 4 * qd, 1, seq));
            var q = toHeads(f, f.named("q", channels(f, x, 0, qd)), h);        // [1,H,SEQ,HD]
            var k = toHeads(f, f.named("k", channels(f, x, qd, qd)), h);
            var v = toHeads(f, f.named("v", channels(f, x, 2 * qd, qd)), h);
            var da = toHeads(f, f.named("da", channels(f, x, 3 * qd, qd)), h);
            var sc = f.mul(f.matmul(q, k, false, true), (float) (1 / Math.sqrt(s.headDim())));
            var mask = f.weight("mask", fp16(1, 1, seq, seq), causalMask(seq));
            var probs = f.named("probs", f.softmax(f.add(sc, mask), -1));         // [1,H,SEQ,SEQ]
            var dv = f.named("dv", f.matmul(probs, da, true, false));             // [1,H,SEQ,HD]
            var dp = f.named("dp", f.matmul(da, v, false, true));                 // [1,H,SEQ,SEQ]
            var pf = f.reshape(probs, 1, s.scoreCh(), 1, seq);
            var dpf = f.reshape(dp, 1, s.scoreCh(), 1, seq);
            f.output(f.named("out", f.concat(1, fromHeads(f, dv), pf, dpf)));
        }).build();
    }

    /**
     * A8b: attention backward part 2 (sdpaBwd2). Input [1,2·SCORE_CH+2·Q_DIM,1,SEQ] = (probs, dp, Q_rope, K_tiled);
     * ds = probs·(dp − Σ probs·dp)·scale; output concat(dQ = ds·K, dK = dsᵀ·Q) [1,2·Q_DIM,1,SEQ].
     */
    public static Program a8SdpaBackward2(Sizes s) {
        int qd = s.qDim(), seq = s.seqLen(), h = s.nHeads(), sc = s.scoreCh();
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp16(1, 2 * sc + 2 * qd, 1, seq));
            var probs = f.reshape(channels(f, x, 0, sc), 1, h, seq, seq);      // [1,H,SEQ,SEQ]
            var dp = f.reshape(channels(f, x, sc, sc), 1, h, seq, seq);
            var q = toHeads(f, channels(f, x, 2 * sc, qd), h);                 // [1,H,SEQ,HD]
            var k = toHeads(f, channels(f, x, 2 * sc + qd, qd), h);
            var pdp = f.named("pdp", f.mul(probs, dp));
            var sum = f.named("pdp_sum", f.reduceSum(pdp, true, -1));          // [1,H,SEQ,1]
            var ds = f.named("ds", f.mul(f.mul(f.sub(dp, sum), probs), (float) (1 / Math.sqrt(s.headDim()))));
            var dq = f.named("dq", f.matmul(ds, k));                           // [1,H,SEQ,HD]
            var dk = f.named("dk", f.matmul(ds, q, true, false));
            f.output(f.named("out", f.concat(1, fromHeads(f, dq), fromHeads(f, dk))));
        }).build();
    }

    /** RMSNorm over channels of x [1,C,1,S]: x · (Σx²/C + 1e-5)^−½ (the pow form maderix uses). */
    private static Value rmsNorm(FunctionBuilder f, Value x) {
        int c = x.shape()[1];
        var ss = f.reduceSum(f.mul(x, x), true, 1);                    // [1,1,1,S]
        var rrms = f.named("rrms", f.pow(f.add(f.mul(ss, 1f / c), 1e-5f), -0.5f));
        return f.mul(x, rrms);
    }

    /**
     * A9: static fused attention with taps (train_large sdpaFwd): x [1,DIM,1,SEQ]; RMSNorm with rms_att.bin [1,DIM,1,1];
     * Q/K/V/O as 1×1 convs with wq/wk/wv/wo.bin; masked softmax attention; output concat(o, q, k, v, attn, xnorm).
     */
    public static Program a9StaticAttentionTaps(int dim, int nHeads, int seq) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp16(1, dim, 1, seq));
            var rmsAtt = f.weight("rms_att", fp16(1, dim, 1, 1), uniform(900, dim, 1f));
            var xn = f.named("xnorm", f.mul(rmsNorm(f, x), rmsAtt));
            float sc = (float) (1 / Math.sqrt(dim));
            var wq = f.weight("wq", fp16(dim, dim, 1, 1), uniform(901, dim * dim, sc));
            var wk = f.weight("wk", fp16(dim, dim, 1, 1), uniform(902, dim * dim, sc));
            var wv = f.weight("wv", fp16(dim, dim, 1, 1), uniform(903, dim * dim, sc));
            var wo = f.weight("wo", fp16(dim, dim, 1, 1), uniform(904, dim * dim, sc));
            var q = f.named("qf", f.conv(xn, wq));
            var k = f.named("kf", f.conv(xn, wk));
            var v = f.named("vf", f.conv(xn, wv));
            var scores = f.matmul(toHeads(f, q, nHeads), toHeads(f, k, nHeads), false, true);
            var mask = f.weight("mask", fp16(1, 1, seq, seq), causalMask(seq));
            var probs = f.softmax(f.add(f.mul(scores, (float) (1 / Math.sqrt(dim / nHeads))), mask), -1);
            var attn = f.named("attn", fromHeads(f, f.matmul(probs, toHeads(f, v, nHeads))));
            var o = f.named("of", f.conv(attn, wo));
            f.output(f.named("out", f.concat(1, o, q, k, v, attn, xn)));
        }).build();
    }

    /** A10a: RMSNorm backward: input (dy, x) [1,2·DIM,1,SEQ], weight rms.bin [1,DIM,1,1]; dx = r·w·dy − x·r³·mean(w·dy·x). */
    public static Program a10RmsNormBackward(int dim, int seq) {
        return Mil.program().function("main", f -> {
            var in = f.input("x", fp16(1, 2 * dim, 1, seq));
            var dy = f.named("dy", channels(f, in, 0, dim));
            var x = f.named("xin", channels(f, in, dim, dim));
            var w = f.weight("rms", fp16(1, dim, 1, 1), uniform(1000, dim, 1f));
            var ss = f.reduceSum(f.mul(x, x), true, 1);                                      // [1,1,1,SEQ]
            var r = f.named("rrms", f.pow(f.add(f.mul(ss, 1f / dim), 1e-5f), -0.5f));
            var dyw = f.named("dyw", f.mul(dy, w));                                         // [1,DIM,1,SEQ]
            var dot = f.mul(f.reduceSum(f.mul(dyw, x), true, 1), 1f / dim);                 // [1,1,1,SEQ]
            var r3 = f.mul(r, f.mul(r, r));
            f.output(f.named("dx", f.sub(f.mul(dyw, r), f.mul(x, f.mul(dot, r3)))));
        }).build();
    }

    /** A10b: softmax over the vocabulary (channel axis) of [1,vocab,1,seq]. */
    public static Program a10SoftmaxVocab(int vocab, int seq) {
        return Mil.program().function("main", f -> {
            var x = f.input("logits", fp16(1, vocab, 1, seq));
            f.output(f.named("probs", f.softmax(x, 1)));
        }).build();
    }

    /** A10c: classifier backward with a rank-3 matmul: dx [1,DIM,1,SEQ] = E[1,DIM,VOCAB] · dlogits [1,VOCAB,SEQ]. */
    public static Program a10ClassifierBackward(int dim, int vocab, int seq) {
        return Mil.program().function("main", f -> {
            var dl = f.input("dl", fp16(1, vocab, 1, seq));
            var e = f.weight("embed", fp16(1, dim, vocab), uniform(1100, dim * vocab, 0.02f));
            var d3 = f.reshape(dl, 1, vocab, seq);                               // [1,VOCAB,SEQ]
            var dx = f.matmul(e, d3);                                            // [1,DIM,SEQ]
            f.output(f.named("dx", f.reshape(dx, 1, dim, 1, seq)));
        }).build();
    }

    /** A10d: two inputs q, k [1,H,SEQ,HD]; scores = matmul(x = q, y = k, transpose_y = true) with an inline bool. */
    public static Program a10QkT(int nHeads, int seq, int headDim) {
        return Mil.program().function("main", f -> {
            var q = f.input("q", fp16(1, nHeads, seq, headDim));
            var k = f.input("k", fp16(1, nHeads, seq, headDim));
            var args = new java.util.LinkedHashMap<String, Arg>();
            args.put("x", Arg.of(q));
            args.put("y", Arg.of(k));
            args.put("transpose_y", new Arg.Inline(Literal.bool(true)));
            f.output(f.named("scores", f.apply(Op.MATMUL, args, Map.of()).get(0)));
        }).build();
    }

    /** A10e: fused QKV with three outputs: q, k, v = cast_fp32(conv(cast_fp16(x), Wq|Wk|Wv)), weights packed in weight.bin. */
    public static Program a10FusedQkv(int dim, int seq) {
        return Mil.program().packWeightsInto("weight.bin").function("main", f -> {
            var x = f.input("x", fp32(1, dim, 1, seq));
            var x16 = f.named("x16", f.cast(x, DType.FP16));
            List<Value> outs = new ArrayList<>();
            float sc = (float) (1 / Math.sqrt(dim));
            String[] names = {"q", "k", "v"};
            for (int i = 0; i < 3; i++) {
                var w = f.weight("W" + names[i], fp16(dim, dim, 1, 1), uniform(1200 + i, dim * dim, sc));
                var c = f.named(names[i] + "16", f.conv(x16, w));
                outs.add(f.named(names[i], f.cast(c, DType.FP32)));
            }
            f.output(outs.toArray(Value[]::new));
        }).build();
    }

    // ---------------------------------------------------------------------------------------------------------------
    // A2, A3: the benchmark chains

    /** The quantization scale of A3: weights, activations and dequantization all use 2^-3. */
    public static final float INT8_SCALE = 0x1p-3f;

    /** Where the weights go. */
    public enum WeightFiles {
        /** One file per weight, {@code W<i>.bin}, its blob at offset 64 (the default). */
        PER_WEIGHT,
        /** One {@code weight.bin} holding every blob (maderix's benchmarks; fails on M1 per maderix's benchmark report). */
        PACKED
    }

    /** A2's input and output type. */
    public enum Io {
        /** fp16 in and out, no {@code cast}: runs on M1/M2 (maderix PR #6: "M1/M2 ANE can't do the cast op"). */
        FP16,
        /** fp32 in and out with a {@code cast} at each end: acceptance text A2/A1 and maderix's {@code inmem_peak.m}. */
        FP32_CAST
    }

    /**
     * The {@code mil_dtype} an int8 blob's metadata carries. {@link #CODE_4} (the default) is coremltools' {@code
     * BlobDataType::Int8} ({@code mlmodel/src/MILBlob/Blob/StorageFormat.hpp}), which coremltools writes and its reader
     * checks against the tensor type. {@link #CODE_1} (fp16's code) is what maderix's {@code ane_int8_bench.m}
     * ({@code buildWeightBlobInt8}: {@code chunk[4]=0x01}) wrote on int8 data, and that ran on M4 — with a wrong size
     * field and data offset 0 as well, so the ANE compiler evidently takes type and size from the MIL text there. Which
     * codes a given Mac accepts is what {@code ane4j doctor}'s {@code int8-blob-code4}/{@code int8-blob-code1} rungs answer.
     */
    public enum Int8BlobCode { CODE_4, CODE_1 }

    /** Uniform in ±sqrt(3/c) (unit gain per 1×1 conv of c channels) from a seed. */
    static float[] convWeights(long seed, int c) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] w = new float[c * c];
        double a = Math.sqrt(3.0 / c);
        for (int i = 0; i < w.length; i++) w[i] = (float) ((r.nextDouble() * 2 - 1) * a);
        return w;
    }

    /** The int8 weights of A3's layer i: [c, c] in −8..8 (times 2^-3: −1..1). */
    public static byte[] int8Weights(int c, int layer) {
        SplittableRandom r = new SplittableRandom(300 + layer);
        byte[] q = new byte[c * c];
        for (int k = 0; k < q.length; k++) q[k] = (byte) (r.nextInt(17) - 8);
        return q;
    }

    private static ProgramBuilder program(WeightFiles files) {
        return files == WeightFiles.PACKED ? Mil.program().packWeightsInto("weight.bin") : Mil.program();
    }

    /** A2 in the form that runs on every chip: fp16 I/O, one weight file per conv. */
    public static Program a2PeakConvChain(int c, int s, int n) { return a2PeakConvChain(c, s, n, Io.FP16, WeightFiles.PER_WEIGHT); }

    /**
     * A2: x [1,c,1,s] (fp16, or fp32 → cast fp16) → n chained 1×1 convs with fp16 weights W0..W(n−1) → y (fp16, or cast
     * fp32). FLOPs per evaluation: 2·c²·s·n.
     */
    public static Program a2PeakConvChain(int c, int s, int n, Io io, WeightFiles files) {
        return program(files).function("main", f -> {
            Value h = io == Io.FP16 ? f.input("x", fp16(1, c, 1, s)) : f.named("x16", f.cast(f.input("x", fp32(1, c, 1, s)), DType.FP16));
            for (int i = 0; i < n; i++) {
                String name = io == Io.FP16 && i == n - 1 ? "y" : "c" + i;   // fp16: the last conv is the output
                h = f.named(name, f.conv(h, f.weight("W" + i, fp16(c, c, 1, 1), convWeights(100 + i, c))));
            }
            f.output(io == Io.FP16 ? h : f.named("y", f.cast(h, DType.FP32)));
        }).build();
    }

    /** A3 with one int8 weight file per layer, mil_dtype 4. */
    public static Program a3Int8Chain(int c, int h, int w, int n) { return a3Int8Chain(c, h, w, n, WeightFiles.PER_WEIGHT, Int8BlobCode.CODE_4); }

    /**
     * A3: x fp16 [1,c,h,w]; per layer Wi = constexpr_affine_dequantize(int8 [c,c,1,1], scale 2^-3, zero point 0, axis 0)
     * → conv → (except the last) quantize to int8 (scale 2^-3) → dequantize (scale 2^-3). FLOPs: 2·c²·h·w·n.
     * With {@link Int8BlobCode#CODE_1} the blobs say fp16 over int8 bytes: only the ANE reads such files (the reference
     * backend refuses the mismatch), so compare them with the {@link Int8BlobCode#CODE_4} program.
     */
    public static Program a3Int8Chain(int c, int h, int w, int n, WeightFiles files, Int8BlobCode code) {
        Program p = program(files).function("main", f -> {
            Value cur = f.input("x", fp16(1, c, h, w));
            for (int i = 0; i < n; i++) {
                var wi = f.constexprAffineDequantize("W" + i, Mil.int8(c, c, 1, 1), int8Weights(c, i), Literal.fp16(INT8_SCALE), Literal.int8(0), 0, null);
                cur = f.named("c" + i, f.conv(cur, wi));
                if (i < n - 1) cur = f.named("dq" + i, f.dequantize(f.named("q" + i, f.quantize(cur, INT8_SCALE, DType.INT8)), INT8_SCALE));
            }
            f.output(cur);
        }).build();
        return code == Int8BlobCode.CODE_4 ? p : p.withWeights(int8AsCode1(p.weights()));
    }

    /** The same blobs with every int8 one re-labelled fp16 (mil_dtype 1), as maderix's int8 benchmark wrote them. */
    static Weights int8AsCode1(Weights w) {
        Map<String, Weights.File> files = new LinkedHashMap<>();
        w.files().forEach((path, file) -> files.put(path, new Weights.File(path, file.blobs().stream()
                .map(b -> b.dtype() == DType.INT8 ? new MilBlob.Entry(DType.FP16, b.data(), b.metadataOffset()) : b).toList())));
        return new Weights(files);
    }

    /** A3's fp16 twin, one weight file per layer. */
    public static Program a3Fp16Chain(int c, int h, int w, int n) { return a3Fp16Chain(c, h, w, n, WeightFiles.PER_WEIGHT); }

    /** A3's fp16 twin: the same chain with fp16 weights (the int8 values times 2^-3) and no quantization. */
    public static Program a3Fp16Chain(int c, int h, int w, int n, WeightFiles files) {
        return program(files).function("main", f -> {
            Value cur = f.input("x", fp16(1, c, h, w));
            for (int i = 0; i < n; i++) {
                byte[] q = int8Weights(c, i);
                float[] wf = new float[q.length];
                for (int k = 0; k < q.length; k++) wf[k] = q[k] * INT8_SCALE;
                cur = f.named("c" + i, f.conv(cur, f.weight("W" + i, fp16(c, c, 1, 1), wf)));
            }
            f.output(cur);
        }).build();
    }
}
