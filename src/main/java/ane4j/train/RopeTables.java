package ane4j.train;

import ane4j.model.ModelConfig;
import ane4j.model.RopeStyle;

/** RoPE cos/sin tables (S, HD) laid out for elementwise use, and the causal mask (S, S). */
public final class RopeTables {
    private RopeTables() {}

    /** The rotation pair that element j of a head belongs to (its frequency: {@code ModelConfig.ropeFrequencies()[pair]}). */
    static int pair(ModelConfig c, int j) {
        return c.ropeStyle() == RopeStyle.INTERLEAVED ? j / 2 : j % (c.headDim() / 2);
    }

    public static float[] cos(ModelConfig c) { return table(c, true); }

    public static float[] sin(ModelConfig c) { return table(c, false); }

    private static float[] table(ModelConfig c, boolean cos) {
        int s = c.seqLen(), hd = c.headDim();
        float[] t = new float[s * hd];
        double[] freq = c.ropeFrequencies();
        for (int p = 0; p < s; p++)
            for (int j = 0; j < hd; j++) {
                double angle = p * freq[pair(c, j)];
                t[p * hd + j] = (float) (cos ? Math.cos(angle) : Math.sin(angle));
            }
        return t;
    }

    /** 0 where key ≤ query, −65504 (fp16's lowest) above the diagonal. */
    public static float[] causalMask(int s) {
        float[] m = new float[s * s];
        for (int i = 0; i < s; i++) for (int j = i + 1; j < s; j++) m[i * s + j] = TrainingKernels.MASK_VALUE;
        return m;
    }
}
