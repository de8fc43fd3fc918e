package ane4j.train;

import ane4j.model.ModelConfig;
import ane4j.model.RopeStyle;

/** RoPE cos/sin tables (S, HD) laid out for elementwise use, RoPE's rotation matrix, and the causal mask (S, S). */
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

    /**
     * RoPE's rotation as a matrix P (rows, cols), row-major, with x·P = rotate(x) for a head x of {@code rows} values:
     * interleaved (−x[2i+1], x[2i]) or half (−x[i+HD/2], x[i]). Rows and columns from HD on are zero (the pad columns of
     * a head padded to HDp). Each output is one ±x term, so x·P is exact. The training kernels use (HDp, HDp), the
     * generation kernels (HDp, HD).
     */
    public static float[] rotation(ModelConfig c, int rows, int cols) {
        int hd = c.headDim();
        float[] p = new float[rows * cols];
        for (int i = 0; i < hd / 2; i++) {
            int a, b;                                                                   // rotated[a] = −x[b], rotated[b] = x[a]
            if (c.ropeStyle() == RopeStyle.INTERLEAVED) { a = 2 * i; b = 2 * i + 1; }
            else { a = i; b = i + hd / 2; }
            p[b * cols + a] = -1f;
            p[a * cols + b] = 1f;
        }
        return p;
    }

    /** 0 where key ≤ query, −65504 (fp16's lowest) above the diagonal. */
    public static float[] causalMask(int s) {
        float[] m = new float[s * s];
        for (int i = 0; i < s; i++) for (int j = i + 1; j < s; j++) m[i * s + j] = TrainingKernels.MASK_VALUE;
        return m;
    }
}
