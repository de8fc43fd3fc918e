package ane4j.train;

import ane4j.model.ModelConfig;
import ane4j.model.RopeStyle;

/** RoPE cos/sin tables (S, HD) laid out for elementwise use, and the causal mask (S, S). */
public final class RopeTables {
    private RopeTables() {}

    /** Frequency of the rotation pair that element j of a head belongs to: theta^(−2i/HD) with i the pair index. */
    static double frequency(ModelConfig c, int j) {
        int hd = c.headDim();
        int pair = c.ropeStyle() == RopeStyle.INTERLEAVED ? j / 2 : j % (hd / 2);
        return Math.pow(c.ropeTheta(), -2.0 * pair / hd);
    }

    public static float[] cos(ModelConfig c) { return table(c, true); }

    public static float[] sin(ModelConfig c) { return table(c, false); }

    private static float[] table(ModelConfig c, boolean cos) {
        int s = c.seqLen(), hd = c.headDim();
        float[] t = new float[s * hd];
        for (int p = 0; p < s; p++)
            for (int j = 0; j < hd; j++) {
                double angle = p * frequency(c, j);
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
