package ane4j.backend.ref;

import ane4j.golden.TensorCheck;
import ane4j.backend.BackendException;
import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.FunctionBuilder;
import ane4j.mil.Literal;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import ane4j.mil.Weights;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Random;
import java.util.function.Consumer;

import static ane4j.mil.Mil.fp16;
import static ane4j.mil.Mil.fp32;
import static org.junit.jupiter.api.Assertions.*;

class RefBackendTest {
    static final RefBackend REF = new RefBackend(RefBackend.Options.ANE_LIKE);

    static Program prog(Consumer<FunctionBuilder> body) { return Mil.program().function("main", body).build(); }

    /** Runs main with one input x and returns the first output as floats. */
    static float[] run(RefBackend b, Program p, float[] x) {
        try (RefKernel k = b.compileRef(p)) {
            TensorBuffer in = TensorBuffer.of(k.inputs().get(0).type(), x);
            return k.evaluate(Map.of(k.inputs().get(0).name(), in)).values().iterator().next().toFloatArray();
        }
    }

    static float[] run(Program p, float[] x) { return run(REF, p, x); }

    static float[] seq(int n, float scale, float shift) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = i * scale + shift;
        return a;
    }

    static float[] random(int n, long seed) {
        Random r = new Random(seed);
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = Float.float16ToFloat(Float.floatToFloat16((float) r.nextGaussian()));
        return a;
    }

    static void close(float[] expected, float[] actual, float atol, float rtol) {
        TensorCheck.checkTensor("ref output", expected, actual, atol, rtol);
    }

    // ---- acceptance programs built here (A1, A4) ---------------------------------------------------------------

    /** A4 (docs/ane-facts.md §9): input [1,IC,1,SEQ+OC] → out[o,s] = Σ_d W[d,o]·act[d,s]. */
    static Program a4(int ic, int seq, int oc, DType io) {
        return prog(f -> {
            Value x = f.input("x", TensorType.of(io, 1, ic, 1, seq + oc));
            Value act = f.sliceBySize(x, new int[] {0, 0, 0, 0}, new int[] {1, ic, 1, seq});
            Value w = f.sliceBySize(x, new int[] {0, 0, 0, seq}, new int[] {1, ic, 1, oc});
            Value a2 = f.transpose(f.reshape(act, 1, 1, ic, seq), 0, 1, 3, 2);
            Value w2 = f.reshape(w, 1, 1, ic, oc);
            Value y = f.matmul(a2, w2);
            f.output(f.named("y", f.reshape(f.transpose(y, 0, 1, 3, 2), 1, oc, 1, seq)));
        });
    }

    @Test
    void a4IdentityCopiesAndDoubledWeightsDouble() {
        int ic = 8, seq = 5;
        for (float scale : new float[] {1f, 2f}) {
            TensorBuffer x = TensorBuffer.allocate(DType.FP16, 1, ic, 1, seq + ic);
            float[] act = random(ic * seq, 1);
            x.writeColumns(0, seq, act);
            float[] w = new float[ic * ic];
            for (int d = 0; d < ic; d++) w[d * ic + d] = scale;
            x.writeColumns(seq, ic, w);
            float[] y = run(a4(ic, seq, ic, DType.FP16), x.toFloatArray());
            float[] expect = act.clone();
            for (int i = 0; i < expect.length; i++) expect[i] *= scale;
            assertArrayEquals(expect, y);
        }
    }

    @Test
    void a4MatchesJavaAndRunsAsOneStep() {
        int ic = 32, seq = 16, oc = 24;
        float[] x = random(ic * (seq + oc), 7);
        float[] y = run(a4(ic, seq, oc, DType.FP32), x);
        float[] expect = new float[oc * seq];
        for (int o = 0; o < oc; o++)
            for (int s = 0; s < seq; s++) {
                double acc = 0;
                for (int d = 0; d < ic; d++) acc += x[d * (seq + oc) + seq + o] * (double) x[d * (seq + oc) + s];
                expect[o * seq + s] = (float) acc;
            }
        close(expect, y, 1e-4f, 1e-5f);
        try (RefKernel k = REF.compileRef(a4(ic, seq, oc, DType.FP16))) {
            // slices, reshapes and transposes are views; the matmul writes its result transposed: one GEMM, no copies
            assertEquals(1, k.stepCount());
        }
    }

    /** A1: fp32 input, cast to fp16, 1×1 conv with a BLOBFILE weight, cast back. */
    static Program a1(int c, int s, float[] w) {
        return prog(f -> {
            Value x = f.input("x", fp32(1, c, 1, s));
            Value x16 = f.cast(x, DType.FP16);
            Value wv = f.weight("W", fp16(c, c, 1, 1), w);
            f.output(f.named("y", f.cast(f.conv(x16, wv), DType.FP32)));
        });
    }

    @Test
    void a1IdentityConvCopiesFp16RoundedInput() {
        int c = 16, s = 64;
        float[] w = new float[c * c];
        for (int i = 0; i < c; i++) w[i * c + i] = 1;
        float[] x = seq(c * s, 0.013f, -3f);
        float[] y = run(a1(c, s, w), x);
        for (int i = 0; i < x.length; i++) assertEquals(Float.float16ToFloat(Float.floatToFloat16(x[i])), y[i]);
    }

    /**
     * An elementwise op over a view read across its rows (the head-split q of sdpaFwd: a matmul written transposed)
     * gathers that operand densely first; the values are those of x op y element by element, rounded once.
     */
    @Test
    void binaryOpsOverTransposedViewsGiveEachElementsRoundedResult() {
        int b = 2, r = 3, c = 40;
        Program p = prog(f -> {
            Value x = f.input("x", TensorType.of(DType.FP16, b * c * r));
            Value t = f.transpose(f.reshape(x, b, c, r), 0, 2, 1);                  // (b, r, c) at strides (c·r, 1, r)
            Value row = f.reshape(f.mul(f.sliceBySize(x, new int[] {0}, new int[] {c}), 0.5f), 1, 1, c);   // dense, broadcast over b and r
            f.output(f.named("mul", f.mul(t, row)), f.named("sub", f.sub(row, t)), f.named("add", f.add(t, t)), f.named("div", f.realDiv(row, t)));
        });
        float[] x = random(b * c * r, 11);
        try (RefKernel k = REF.compileRef(p)) {
            var out = k.evaluate(Map.of("x", TensorBuffer.of(k.inputs().get(0).type(), x)));
            for (int i = 0; i < b; i++)
                for (int j = 0; j < r; j++)
                    for (int e = 0; e < c; e++) {
                        float tv = x[i * c * r + e * r + j], rv = fp16round(x[e] * 0.5f);
                        int at = (i * r + j) * c + e;
                        assertEquals(fp16round(tv * rv), out.get("mul").get(at), "mul " + at);
                        assertEquals(fp16round(rv - tv), out.get("sub").get(at), "sub " + at);
                        assertEquals(fp16round(tv + tv), out.get("add").get(at), "add " + at);
                        assertEquals(fp16round(rv / tv), out.get("div").get(at), "div " + at);
                    }
        }
    }

    private static float fp16round(float v) { return Float.float16ToFloat(Float.floatToFloat16(v)); }

    @Test
    void missingWeightFileIsNamed() {
        Program p = a1(4, 4, new float[16]).withWeights(Weights.empty());
        var e = assertThrows(BackendException.class, () -> REF.compile(p));
        assertTrue(e.getMessage().contains("@model_path/weights/W.bin"), e.getMessage());
    }

    // ---- fp16 storage semantics --------------------------------------------------------------------------------

    static Program squareTwice(DType io) {
        return prog(f -> {
            Value x = f.input("x", TensorType.of(io, 1, 3));
            Value x2 = f.mul(x, x);
            f.output(f.named("y", f.mul(f.mul(x2, 1e-3f), 1e3f)));
        });
    }

    @Test
    void fp16IntermediatesOverflowAndUnderflowLikeTheAne() {
        float[] x = {300f, 1e-4f, 2f};
        float[] y = run(squareTwice(DType.FP16), x);
        // 300² = 90000 overflows fp16 → inf; (1e-4)² = 1e-8 flushes to 0 in fp16 (below the smallest subnormal 6e-8)
        assertEquals(Float.POSITIVE_INFINITY, y[0]);
        assertEquals(0f, y[1]);
        assertEquals(4f, y[2], 0.01f);
        // with fp32 storage the intermediates survive (the output is still rounded to fp16 at the end)
        RefBackend fp32 = new RefBackend(RefBackend.Options.FP32_STORAGE);
        float[] z = run(fp32, squareTwice(DType.FP16), x);
        assertEquals(Float.POSITIVE_INFINITY, z[0]); // 90000 is not representable in the fp16 output either
        assertEquals(Float.float16ToFloat(Float.floatToFloat16(1e-8f)), z[1]);
        float[] w = run(fp32, squareTwice(DType.FP32), new float[] {300f, 1e-4f, 2f});
        assertEquals(90000f, w[0], 1f);
    }

    @Test
    void fp16SubnormalsAreKept() {
        Program p = prog(f -> f.output(f.mul(f.input("x", fp16(1, 1)), 1e-3f)));
        float[] y = run(p, new float[] {0.01f});
        float expect = Float.float16ToFloat(Float.floatToFloat16(Float.float16ToFloat(Float.floatToFloat16(0.01f)) * Float.float16ToFloat(Float.floatToFloat16(1e-3f))));
        assertTrue(expect > 0 && expect < 6.1e-5f, "a subnormal fp16");
        assertEquals(expect, y[0]);
    }

    // ---- ops ------------------------------------------------------------------------------------------------------

    @Test
    void broadcastingAddAndNegativeAxisReduce() {
        Program p = prog(f -> {
            Value x = f.input("x", fp32(2, 3));
            Value b = f.tensor(fp32(3), 10, 20, 30);
            Value s = f.add(x, b);
            f.output(f.named("y", f.reduceSum(s, true, -1)));
        });
        float[] y = run(p, new float[] {1, 2, 3, 4, 5, 6});
        assertArrayEquals(new float[] {66, 75}, y);
    }

    @Test
    void reduceMeanAndMaxOverSeveralAxes() {
        Program p = prog(f -> f.output(f.reduceMax(f.input("x", fp32(2, 2, 3)), false, 0, 2)));
        assertArrayEquals(new float[] {9, 12}, run(p, new float[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
        Program m = prog(f -> f.output(f.reduceMean(f.input("x", fp32(2, 3)), false, 0)));
        assertArrayEquals(new float[] {2.5f, 3.5f, 4.5f}, run(m, new float[] {1, 2, 3, 4, 5, 6}));
    }

    @Test
    void matmulTransposeYAndBatchBroadcast() {
        Program p = prog(f -> {
            Value x = f.input("x", fp32(2, 2, 3));
            Value y = f.tensor(fp32(1, 4, 3), 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1);
            f.output(f.matmul(x, y, false, true));
        });
        float[] y = run(p, new float[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
        assertArrayEquals(new float[] {1, 2, 3, 6, 4, 5, 6, 15, 7, 8, 9, 24, 10, 11, 12, 33}, y);
    }

    @Test
    void concatInterleaveAndSplit() {
        Program p = prog(f -> {
            Value x = f.input("x", fp32(2, 2));
            Value y = f.mul(x, 10f);
            f.output(f.concat(0, true, x, y));
        });
        assertArrayEquals(new float[] {1, 2, 10, 20, 3, 4, 30, 40}, run(p, new float[] {1, 2, 3, 4}));
        Program s = prog(f -> {
            var parts = f.splitSizes(f.input("x", fp32(1, 5)), -1, 2, 3);
            f.output(f.concat(1, parts.get(1), parts.get(0)));
        });
        assertArrayEquals(new float[] {3, 4, 5, 1, 2}, run(s, new float[] {1, 2, 3, 4, 5}));
    }

    @Test
    void convWithGroupsStridesSamePaddingDilationAndBias() {
        int cin = 4, cout = 4, h = 5, w = 5, groups = 2, k = 3;
        float[] wt = random(cout * (cin / groups) * k * k, 3);
        float[] bias = {0.5f, -1f, 2f, 0f};
        float[] x = random(cin * h * w, 4);
        for (String pad : new String[] {"same", "same_lower", "valid"}) {
            int stride = 2, dil = pad.equals("valid") ? 2 : 1;
            Program p = prog(f -> {
                Value xv = f.input("x", fp32(1, cin, h, w));
                Value wv = f.tensor(fp32(cout, cin / groups, k, k), wt);
                Value bv = f.tensor(fp32(cout), bias);
                f.output(f.conv(xv, wv, bv, new int[] {stride, stride}, pad, new int[4], new int[] {dil, dil}, groups));
            });
            float[] y = run(p, x);
            int eff = dil * (k - 1) + 1;
            int oh = pad.equals("valid") ? (h - eff) / stride + 1 : (h + stride - 1) / stride;
            int total = Math.max(0, (oh - 1) * stride + eff - h);
            int before = pad.equals("same") ? total / 2 : pad.equals("same_lower") ? total - total / 2 : 0;
            float[] expect = new float[cout * oh * oh];
            for (int co = 0; co < cout; co++) {
                int g = co / (cout / groups);
                for (int i = 0; i < oh; i++)
                    for (int j = 0; j < oh; j++) {
                        double acc = bias[co];
                        for (int ci = 0; ci < cin / groups; ci++)
                            for (int a = 0; a < k; a++)
                                for (int b = 0; b < k; b++) {
                                    int ii = i * stride - before + a * dil, jj = j * stride - before + b * dil;
                                    if (ii < 0 || jj < 0 || ii >= h || jj >= w) continue;
                                    acc += wt[((co * (cin / groups) + ci) * k + a) * k + b] * x[((g * (cin / groups) + ci) * h + ii) * w + jj];
                                }
                        expect[(co * oh + i) * oh + j] = (float) acc;
                    }
            }
            close(expect, y, 1e-4f, 1e-5f);
        }
    }

    @Test
    void quantizeRoundsHalfToEvenAndSaturates() {
        Program p = prog(f -> f.output(f.cast(f.quantize(f.input("x", fp32(6)), 0.5f, DType.INT8), DType.FP32)));
        // x/0.5 = 1.5→2, 2.5→2, -0.5→-0, 3.5→4, 1000→127, -1000→-128
        assertArrayEquals(new float[] {2, 2, 0, 4, 127, -128}, run(p, new float[] {0.75f, 1.25f, -0.25f, 1.75f, 500f, -500f}));
        Program d = prog(f -> f.output(f.dequantize(f.quantize(f.input("x", fp16(3)), 0.125f, DType.INT8), 0.125f)));
        assertArrayEquals(new float[] {0.25f, -0.125f, 15.875f}, run(d, new float[] {0.26f, -0.1f, 100f}));
    }

    @Test
    void perAxisQuantizeWithZeroPoint() {
        Program p = prog(f -> {
            Value x = f.input("x", fp32(2, 2));
            Value q = f.quantize(x, Literal.ofFloats(fp32(2), 1f, 0.5f), Literal.of(Mil.uint8(2), new byte[] {10, (byte) 200}), 0, DType.UINT8);
            f.output(f.cast(q, DType.FP32));
        });
        assertArrayEquals(new float[] {11, 8, 255, 204}, run(p, new float[] {1, -2, 30, 2}));
    }

    @Test
    void constexprAffineDequantizePerAxis() {
        byte[] q = {1, 2, 3, 4, -1, -2};
        Program p = prog(f -> {
            Value x = f.input("x", fp32(3, 2));
            Value w = f.constexprAffineDequantize("Wq", Mil.int8(3, 2), q, Literal.ofFloats(fp32(3), 1f, 0.5f, 2f),
                    Literal.of(Mil.int8(3), new byte[] {0, 2, -1}), 0, null);
            f.output(f.add(x, w));
        });
        assertArrayEquals(new float[] {1, 2, 0.5f, 1, 0, -2}, run(p, new float[6]));
    }

    @Test
    void layerNormGatherSelectSoftmaxCast() {
        Program ln = prog(f -> {
            Value x = f.input("x", fp32(2, 2));
            f.output(f.layerNorm(x, new int[] {-1}, f.tensor(fp32(2), 2, 1), f.tensor(fp32(2), 0, 1), 0f));
        });
        assertArrayEquals(new float[] {-2, 2, -2, 2}, run(ln, new float[] {1, 3, 5, 7}));

        Program g = prog(f -> {
            Value x = f.input("x", fp32(3, 2));
            f.output(f.gather(x, f.constant(Literal.int32s(-1, 0)), 0));
        });
        assertArrayEquals(new float[] {5, 6, 1, 2}, run(g, new float[] {1, 2, 3, 4, 5, 6}));

        Program s = prog(f -> {
            Value x = f.input("x", fp32(4));
            Value c = f.cast(x, DType.BOOL);
            f.output(f.select(c, x, f.tensor(fp32(1), -9)));
        });
        assertArrayEquals(new float[] {-9, 2, -9, -1}, run(s, new float[] {0, 2, 0, -1}));

        Program sm = prog(f -> f.output(f.softmax(f.input("x", fp32(2, 2)), 0)));
        float e = (float) (1 / (1 + Math.exp(-2)));
        close(new float[] {1 - e, 1 - e, e, e}, run(sm, new float[] {0, 1, 2, 3}), 1e-6f, 0);

        Program ci = prog(f -> f.output(f.cast(f.cast(f.input("x", fp32(3)), DType.INT32), DType.FP32)));
        assertArrayEquals(new float[] {2, -2, 0}, run(ci, new float[] {2.7f, -2.7f, 0.4f}));
    }

    @Test
    void sdpaIgnoresTheMaskUnlessAsked() {
        int l = 3, e = 2;
        float[] qkv = random(3 * l * e, 11);
        Consumer<FunctionBuilder> body = f -> {
            Value x = f.input("x", fp32(3, 1, l, e));
            var parts = f.split(x, 0, 3);
            Value mask = f.tensor(fp32(1, l, l), 0, -1e4f, -1e4f, 0, 0, -1e4f, 0, 0, 0);
            f.output(f.scaledDotProductAttention(parts.get(0), parts.get(1), parts.get(2), mask));
        };
        float[] ignored, honored;
        try (RefKernel k = REF.compileRef(prog(body))) {
            assertEquals(1, k.warnings().size());
            assertTrue(k.warnings().get(0).contains("attn_mask") && k.warnings().get(0).contains("ane4j.ref.honorSdpaMask"));
            ignored = k.evaluate(Map.of("x", TensorBuffer.of(k.inputs().get(0).type(), qkv))).values().iterator().next().toFloatArray();
        }
        RefBackend honor = new RefBackend(RefBackend.Options.HONOR_SDPA_MASK);
        try (RefKernel k = honor.compileRef(prog(body))) {
            assertTrue(k.warnings().isEmpty());
            honored = k.evaluate(Map.of("x", TensorBuffer.of(k.inputs().get(0).type(), qkv))).values().iterator().next().toFloatArray();
        }
        close(attention(qkv, l, e, false), ignored, 1e-5f, 1e-5f);
        close(attention(qkv, l, e, true), honored, 1e-5f, 1e-5f);
        // first query row sees only key 0 when causal: output = v[0]
        assertEquals(qkv[2 * l * e], honored[0], 1e-5f);
    }

    static float[] attention(float[] qkv, int l, int e, boolean causal) {
        float[] out = new float[l * e];
        for (int i = 0; i < l; i++) {
            double[] p = new double[l];
            double max = Double.NEGATIVE_INFINITY, sum = 0;
            for (int j = 0; j < l; j++) {
                double s = 0;
                for (int d = 0; d < e; d++) s += qkv[i * e + d] * qkv[l * e + j * e + d];
                p[j] = s / Math.sqrt(e) + (causal && j > i ? -1e4 : 0);
                max = Math.max(max, p[j]);
            }
            for (int j = 0; j < l; j++) { p[j] = Math.exp(p[j] - max); sum += p[j]; }
            for (int d = 0; d < e; d++) {
                double acc = 0;
                for (int j = 0; j < l; j++) acc += p[j] / sum * qkv[2 * l * e + j * e + d];
                out[i * e + d] = (float) acc;
            }
        }
        return out;
    }

    @Test
    void wrongInputTypeIsRejected() {
        try (RefKernel k = REF.compileRef(a4(4, 2, 4, DType.FP16))) {
            var e = assertThrows(IllegalArgumentException.class, () -> k.evaluate(Map.of("x", TensorBuffer.allocate(DType.FP32, 1, 4, 1, 6))));
            assertTrue(e.getMessage().contains("'x' is fp32[1,4,1,6]"), e.getMessage());
        }
    }
}
