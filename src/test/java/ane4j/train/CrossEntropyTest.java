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

    /** The blocked two-pass loss (the training step's, block by block as the classifier produces logits) against the one-shot one. */
    @Test
    void blockedMatchesTheOneShotLossAndGradient() {
        int v = 3001, s = 40;
        for (int blockRows : new int[] {64, 1000, 3001, 4096}) {
            float[] x = logits(v, s, 5), blocked = x.clone(), d = new float[v * s];
            int[] t = new int[s];
            Random r = new Random(6);
            for (int j = 0; j < s; j++) t[j] = j % 7 == 3 ? -1 : r.nextInt(v);
            t[0] = 0;
            t[1] = v - 1;                                              // targets in the first and the last block
            float scale = 512f;
            float loss = CpuOps.crossEntropy(d, x, t, v, s, scale);
            CpuOps.BlockedCrossEntropy ce = new CpuOps.BlockedCrossEntropy(v, s, blockRows);
            // pass 1 in reverse block order: the result does not depend on the order the blocks come in
            for (int b = ce.blocks() - 1; b >= 0; b--) ce.block(b, blocked, t);
            float blockedLoss = ce.loss(scale);
            for (int b = 0; b < ce.blocks(); b++) ce.gradient(b, blocked, scale);
            assertEquals(loss, blockedLoss, 2e-6f * Math.abs(loss), "loss, blocks of " + blockRows);
            for (int i = 0; i < d.length; i++)
                assertEquals(d[i], blocked[i], 1e-6f * scale / s + 1e-5f * Math.abs(d[i]), "dlogit " + i + ", blocks of " + blockRows);
        }
    }

    @Test
    void blockedGivesTheSameBitsHoweverThePositionsAreSplit() {
        int v = 5000, s = 64;
        float[] x = logits(v, s, 7);
        int[] t = new int[s];
        for (int j = 0; j < s; j++) t[j] = (j * 131) % v;
        float[] first = null;
        float firstLoss = 0;
        for (int parts : new int[] {1, 2, 3, 0}) {
            CpuOps.BlockedCrossEntropy ce = new CpuOps.BlockedCrossEntropy(v, s, 1024, parts);
            float[] a = x.clone();
            for (int k = 0; k < ce.blocks(); k++) ce.block(k, a, t);
            float loss = ce.loss(1f);
            for (int k = 0; k < ce.blocks(); k++) ce.gradient(k, a, 1f);
            if (first == null) { first = a; firstLoss = loss; continue; }
            assertEquals(firstLoss, loss, 0f, parts + " ranges");
            assertArrayEquals(first, a, 0f, parts + " ranges");
        }
        assertEquals(CpuOps.crossEntropy(null, x, t, v, s, 1f), firstLoss, 2e-6f * firstLoss, "the loss alone");
    }
}
