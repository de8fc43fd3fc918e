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
    void fusedUnscaleClipStepAndZeroEqualsTheSeparatePasses() {
        AdamW opt = new AdamW(0.9f, 0.95f, 1e-8f, 0.1f);
        float[] p1 = random(2, 1f), m1 = random(3, 0.01f), v1 = random(4, 0.01f), g = random(5, 512f);
        for (int i = 0; i < N; i++) v1[i] = Math.abs(v1[i]);
        float[] p2 = p1.clone(), m2 = m1.clone(), v2 = v1.clone(), g1 = g.clone(), g2 = g.clone();
        float k = 1f / 512;
        // separate: unscale, clip to 1, step
        for (int i = 0; i < N; i++) g1[i] *= k;
        float norm1 = AdamW.clipGlobalNorm(g1, 1f);
        opt.step(VIEWS, p1, g1, m1, v1, 3, 1e-3f);
        // fused
        float norm2 = (float) Math.sqrt(AdamW.sumOfSquares(g2, k));
        opt.step(VIEWS, p2, g2, m2, v2, 3, 1e-3f, k * AdamW.clipFactor(norm2, 1f), true);
        assertEquals(norm1, norm2, norm1 * 1e-6f);
        assertTrue(norm1 > 1f, "the case must clip");
        for (int i = 0; i < N; i++) {
            assertEquals(0f, g2[i], "gradient " + i + " not zeroed");
            assertEquals(p1[i], p2[i], 1e-6f * Math.max(1f, Math.abs(p1[i])), "param " + i);
            assertEquals(m1[i], m2[i], 1e-5f * Math.abs(m1[i]) + 1e-12f, "m " + i);
            assertEquals(v1[i], v2[i], 1e-5f * Math.abs(v1[i]) + 1e-12f, "v " + i);
        }
    }
}
