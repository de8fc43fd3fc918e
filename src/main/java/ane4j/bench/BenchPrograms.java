package ane4j.bench;

import static ane4j.mil.Mil.fp16;
import static ane4j.mil.Mil.fp32;

import ane4j.mil.DType;
import ane4j.mil.FunctionBuilder;
import ane4j.mil.Literal;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.Value;
import java.util.SplittableRandom;

/**
 * The benchmark programs of ane-facts.md §9, built with the fluent API: A2 (peak conv chain), A3 (INT8 W8A8 chain and its
 * fp16 twin) and A4 (one dynamic matmul). Weights are deterministic from fixed seeds and scaled so that activations stay
 * finite on the reference backend (the ANE's timing does not depend on the values).
 */
public final class BenchPrograms {
    private BenchPrograms() {}

    /** The quantization scale of A3: weights, activations and dequantization all use 2^-3. */
    public static final float INT8_SCALE = 0x1p-3f;

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

    /**
     * A2: x fp32 [1,c,1,s] → cast fp16 → n chained 1×1 convs with fp16 weights packed into weight.bin → cast fp32.
     * FLOPs per evaluation: 2·c²·s·n.
     */
    public static Program a2PeakConvChain(int c, int s, int n) {
        return Mil.program().packWeightsInto("weight.bin").function("main", f -> {
            var x = f.input("x", fp32(1, c, 1, s));
            var h = f.named("x16", f.cast(x, DType.FP16));
            for (int i = 0; i < n; i++) h = f.named("c" + i, f.conv(h, f.weight("W" + i, fp16(c, c, 1, 1), convWeights(100 + i, c))));
            f.output(f.named("y", f.cast(h, DType.FP32)));
        }).build();
    }

    /**
     * A3: x fp16 [1,c,h,w]; per layer Wi = constexpr_affine_dequantize(int8 [c,c,1,1], scale 2^-3, zero point 0, axis 0)
     * → conv → (except the last) quantize to int8 (scale 2^-3) → dequantize (scale 2^-3). FLOPs: 2·c²·h·w·n.
     */
    public static Program a3Int8Chain(int c, int h, int w, int n) {
        return Mil.program().packWeightsInto("weight.bin").function("main", f -> {
            Value cur = f.input("x", fp16(1, c, h, w));
            for (int i = 0; i < n; i++) {
                var wi = f.constexprAffineDequantize("W" + i, Mil.int8(c, c, 1, 1), int8Weights(c, i), Literal.fp16(INT8_SCALE), Literal.int8(0), 0, null);
                cur = f.named("c" + i, f.conv(cur, wi));
                if (i < n - 1) cur = f.named("dq" + i, f.dequantize(f.named("q" + i, f.quantize(cur, INT8_SCALE, DType.INT8)), INT8_SCALE));
            }
            f.output(cur);
        }).build();
    }

    /** A3's fp16 twin: the same chain with fp16 weights (the int8 values times 2^-3) and no quantization. */
    public static Program a3Fp16Chain(int c, int h, int w, int n) {
        return Mil.program().packWeightsInto("weight.bin").function("main", f -> {
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

    /** A4: input [1,ic,1,seq+oc] = (act, W) → out [1,oc,1,seq] = Wᵀ·act (slice, reshape, transpose, matmul). */
    public static Program a4DynamicMatmul(int ic, int seq, int oc) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp16(1, ic, 1, seq + oc));
            var act = f.named("act", f.sliceBySize(x, new int[] {0, 0, 0, 0}, new int[] {1, ic, 1, seq}));
            var w = f.named("W", f.sliceBySize(x, new int[] {0, 0, 0, seq}, new int[] {1, ic, 1, oc}));
            f.output(f.named("y", dynMatmul(f, act, w)));
        }).build();
    }

    private static Value dynMatmul(FunctionBuilder f, Value act, Value w) {
        int ic = act.shape()[1], seq = act.shape()[3], oc = w.shape()[3];
        var at = f.transpose(f.reshape(act, 1, 1, ic, seq), 0, 1, 3, 2);   // [1,1,SEQ,IC]
        var y = f.matmul(at, f.reshape(w, 1, 1, ic, oc));                  // [1,1,SEQ,OC]
        return f.reshape(f.transpose(y, 0, 1, 3, 2), 1, oc, 1, seq);      // [1,OC,1,SEQ]
    }
}
