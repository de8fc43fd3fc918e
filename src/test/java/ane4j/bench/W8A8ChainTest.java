package ane4j.bench;

import ane4j.programs.AcceptancePrograms;
import ane4j.golden.TensorCheck;
import static org.junit.jupiter.api.Assertions.*;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The reference backend's W8A8 chain (A3) against a direct computation in Java with coremltools' semantics: weights
 * int8·scale, conv as a plain sum, fp16 rounding of every op's output, quantize = clip(round-half-even(x/scale), −128,
 * 127), dequantize = q·scale. Inputs and weights are multiples of 2^-3, so every conv sum is exact in fp32 whatever the
 * summation order, and the comparison can be bit-exact.
 */
class W8A8ChainTest {
    static final int C = 24, H = 3, W = 5, N = 3, P = H * W;

    @Test
    void refMatchesDirectComputationBitForBit() {
        float[] x0 = new float[C * P];
        for (int i = 0; i < x0.length; i++) x0[i] = ((i * 37 % 251) - 125) * AcceptancePrograms.INT8_SCALE;   // k/8, |k| ≤ 125
        float[] expected = direct(x0);
        float[] got;
        try (Kernel k = new RefBackend(RefBackend.Options.ANE_LIKE).compile(AcceptancePrograms.a3Int8Chain(C, H, W, N))) {
            TensorBuffer x = k.allocateInput("x");
            x.copyFrom(x0);
            got = k.evaluate(Map.of("x", x)).values().iterator().next().toFloatArray();
        }
        TensorCheck.checkTensor("W8A8 chain against the direct computation", expected, got, 0, 0);
        // the fp16 twin without quantization must differ: the chain really quantizes
        try (Kernel k = new RefBackend(RefBackend.Options.ANE_LIKE).compile(AcceptancePrograms.a3Fp16Chain(C, H, W, N))) {
            TensorBuffer x = k.allocateInput("x");
            x.copyFrom(x0);
            float[] twin = k.evaluate(Map.of("x", x)).values().iterator().next().toFloatArray();
            int differ = 0;
            for (int i = 0; i < twin.length; i++) if (twin[i] != got[i]) differ++;
            assertTrue(differ > twin.length / 2, "W8A8 and fp16 outputs differ in only " + differ + " of " + twin.length);
        }
    }

    @Test
    void maderixInt8BlobCodeIsForTheAneOnly() {
        var p = AcceptancePrograms.a3Int8Chain(C, H, W, N, AcceptancePrograms.WeightFiles.PER_WEIGHT, AcceptancePrograms.Int8BlobCode.CODE_1);
        var e = assertThrows(RuntimeException.class, () -> new RefBackend(RefBackend.Options.ANE_LIKE).compile(p).close());
        assertTrue(e.getMessage().startsWith("["), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }

    @Test
    void quantizeRoundsHalfToEvenAndSaturates() {
        assertEquals(2, quantize(0.3125f));    // 2.5 → 2
        assertEquals(4, quantize(0.4375f));    // 3.5 → 4
        assertEquals(-2, quantize(-0.3125f));  // −2.5 → −2
        assertEquals(127, quantize(100f));
        assertEquals(-128, quantize(-100f));
        // the test data above exercises both paths inside the chain
        float[] x0 = new float[C * P];
        for (int i = 0; i < x0.length; i++) x0[i] = ((i * 37 % 251) - 125) * AcceptancePrograms.INT8_SCALE;
        int[] counts = new int[2];
        float[] y = conv(x0, 0);
        for (float v : y) {
            float r = v / AcceptancePrograms.INT8_SCALE;
            if (r - Math.floor(r) == 0.5) counts[0]++;
            if (r > 127.5f || r < -128.5f) counts[1]++;
        }
        assertTrue(counts[0] > 0, "no exact .5 ties in layer 0: the tie rule is not exercised");
        assertTrue(counts[1] > 0, "no saturation in layer 0: the clip is not exercised");
    }

    /** The chain: conv, fp16 rounding, quantize, dequantize (not after the last layer). */
    static float[] direct(float[] x0) {
        float[] x = x0.clone();
        for (int l = 0; l < N; l++) {
            float[] y = conv(x, l);
            if (l < N - 1) for (int i = 0; i < y.length; i++) y[i] = fp16(quantize(y[i]) * AcceptancePrograms.INT8_SCALE);
            x = y;
        }
        return x;
    }

    /** y[o,p] = fp16(Σ_c (q[o,c]·2^-3)·x[c,p]). */
    static float[] conv(float[] x, int layer) {
        byte[] q = AcceptancePrograms.int8Weights(C, layer);
        float[] y = new float[C * P];
        for (int o = 0; o < C; o++)
            for (int p = 0; p < P; p++) {
                double s = 0;
                for (int c = 0; c < C; c++) s += q[o * C + c] * (double) AcceptancePrograms.INT8_SCALE * x[c * P + p];
                y[o * P + p] = fp16((float) s);
            }
        return y;
    }

    /** coremltools quantize to int8: clip(round_half_even(v / scale), −128, 127). */
    static int quantize(float v) {
        double r = Math.rint(v / AcceptancePrograms.INT8_SCALE);
        return (int) Math.max(-128, Math.min(127, r));
    }

    static float fp16(float v) { return Float.float16ToFloat(Float.floatToFloat16(v)); }
}
