package ane4j.train;

import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

class CrossEntropyTest {

    /** Logits (V,S) channel-first, a −1 target, values spread over ±30 so the max subtraction matters. */
    static float[] logits(int v, int s, long seed) {
        Random r = new Random(seed);
        float[] x = new float[v * s];
        for (int i = 0; i < x.length; i++) x[i] = (float) (r.nextGaussian() * 10);
        return x;
    }

    @Test
    void matchesADoublePrecisionSoftmaxCrossEntropy() {
        int v = 1000, s = 37;
        float[] x = logits(v, s, 1);
        int[] t = new int[s];
        Random r = new Random(2);
        for (int j = 0; j < s; j++) t[j] = j == 5 ? -1 : r.nextInt(v);
        float[] d = new float[v * s];
        float scale = 256f;
        float loss = CpuOps.crossEntropy(d, x, t, v, s, scale);
        double expectLoss = 0;
        int n = s - 1;                                                 // torch's ignore_index mean: over the counted positions
        for (int j = 0; j < s; j++) {
            double max = Double.NEGATIVE_INFINITY, sum = 0;
            for (int i = 0; i < v; i++) max = Math.max(max, x[i * s + j]);
            for (int i = 0; i < v; i++) sum += Math.exp(x[i * s + j] - max);
            if (t[j] >= 0) expectLoss -= x[t[j] * s + j] - max - Math.log(sum);
            for (int i = 0; i < v; i++) {
                double g = (Math.exp(x[i * s + j] - max) / sum - (i == t[j] ? 1 : 0)) / n * scale;
                if (t[j] < 0) g = 0;                                   // an ignored position gets no gradient
                assertEquals(g, d[i * s + j], 1e-5 * scale / n + 1e-6 * Math.abs(g), "dlogit " + i + "," + j);
            }
        }
        assertEquals(expectLoss / n, loss, 1e-5 * Math.abs(expectLoss / n));
    }

    @Test
    void inPlaceGivesTheSameLossAndGradient() {
        int v = 3001, s = 64;
        float[] x = logits(v, s, 3), inPlace = x.clone(), d = new float[v * s];
        int[] t = new int[s];
        for (int j = 0; j < s; j++) t[j] = (j * 97) % v;
        float loss = CpuOps.crossEntropy(d, x, t, v, s, 1f);
        float lossInPlace = CpuOps.crossEntropy(inPlace, inPlace, t, v, s, 1f);
        assertEquals(loss, lossInPlace, 0f);
        assertArrayEquals(d, inPlace, 0f);
    }
}
