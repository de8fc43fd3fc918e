package ane4j.train;

import ane4j.model.ParameterView;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AdamWTest {
    static final int N = 700_001;   // more than two chunks, odd tail
    static final List<ParameterView> VIEWS = List.of(new ParameterView("w", 0, new int[] {N - 1001}, true), new ParameterView("norm", N - 1001, new int[] {1001}, false));

    static float[] random(long seed, float scale) {
        Random r = new Random(seed);
        float[] a = new float[N];
        for (int i = 0; i < N; i++) a[i] = (float) (r.nextGaussian() * scale);
        return a;
    }

    @Test
    void sumOfSquaresMatchesDoubleAndFlagsNonFinite() {
        float[] g = random(1, 3f);
        double expect = 0;
        for (float x : g) expect += (double) x * 0.25 * x * 0.25;
        assertEquals(expect, AdamW.sumOfSquares(g, 0.25f), expect * 1e-6);
        g[N / 2] = Float.NaN;
        assertFalse(Double.isFinite(AdamW.sumOfSquares(g, 1f)));
        g[N / 2] = Float.POSITIVE_INFINITY;
        assertFalse(Double.isFinite(AdamW.sumOfSquares(g, 1f)));
    }

    @Test
    void fusedUnscaleClipStepAndZeroEqualsTheTorchStyleSeparatePasses() {
        AdamW opt = new AdamW(0.9f, 0.95f, 1e-8f, 0.1f);
        float[] p1 = random(2, 1f), m1 = random(3, 0.01f), v1 = random(4, 0.01f), g = random(5, 512f);
        for (int i = 0; i < N; i++) v1[i] = Math.abs(v1[i]);
        float[] p2 = p1.clone(), m2 = m1.clone(), v2 = v1.clone(), g2 = g.clone();
        float k = 1f / 512, lr = 1e-3f, wd = 0.1f;
        int t = 3;
        // separate, in double, as torch writes it: unscale, clip_grad_norm_(1.0), AdamW
        double[] g1 = new double[N];
        double ss = 0;
        for (int i = 0; i < N; i++) { g1[i] = g[i] * (double) k; ss += g1[i] * g1[i]; }
        double norm1 = Math.sqrt(ss), clip = norm1 > 1 ? 1 / (norm1 + 1e-6) : 1;
        double bc1 = 1 - Math.pow(0.9, t), bc2 = 1 - Math.pow(0.95, t);
        // fused
        float norm2 = (float) Math.sqrt(AdamW.sumOfSquares(g2, k));
        opt.step(VIEWS, p2, g2, m2, v2, t, lr, k * AdamW.clipFactor(norm2, 1f), true);
        assertEquals(norm1, norm2, norm1 * 1e-6);
        assertTrue(norm1 > 1, "the case must clip");
        for (int i = 0; i < N; i++) {
            double gi = g1[i] * clip, decay = i < N - 1001 ? 1 - lr * wd : 1;
            double m = 0.9 * m1[i] + 0.1 * gi, v = 0.95 * v1[i] + 0.05 * gi * gi;
            double p = p1[i] * decay - lr / bc1 * m / (Math.sqrt(v) / Math.sqrt(bc2) + 1e-8);
            assertEquals(0f, g2[i], "gradient " + i + " not zeroed");
            // float rounding relative to the terms summed (m can cancel)
            assertEquals(m, m2[i], 1e-6 * (0.9 * Math.abs(m1[i]) + 0.1 * Math.abs(gi)), "m " + i);
            assertEquals(v, v2[i], 1e-6 * v, "v " + i);
            assertEquals(p, p2[i], 1e-6 * Math.max(1, Math.abs(p)), "param " + i);
        }
    }
}
