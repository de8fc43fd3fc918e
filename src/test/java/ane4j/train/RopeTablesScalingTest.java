package ane4j.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import ane4j.model.ModelConfig;
import ane4j.model.RopeScaling;
import ane4j.model.RopeStyle;
import org.junit.jupiter.api.Test;

/**
 * The training kernels' RoPE tables take the scaled frequencies ({@link ModelConfig#ropeFrequencies()}, checked against
 * transformers' formula by RopeScalingTest), for both pairings: element j of a head rotates with its pair's frequency.
 */
class RopeTablesScalingTest {
    @Test
    void tablesUseTheScaledFrequencyOfEachElementsPair() {
        for (RopeStyle style : RopeStyle.values()) {
            ModelConfig plain = new ModelConfig("t", 64, 64, 1, 4, 4, 16, 32, 24, 10000f, style, false, true, 1e-5f, 1f);
            ModelConfig c = plain.withRopeScaling(new RopeScaling.Llama3(8, 1, 4, 64));
            double[] f = c.ropeFrequencies();
            float[] cos = RopeTables.cos(c), sin = RopeTables.sin(c);
            int hd = c.headDim();
            for (int p = 0; p < c.seqLen(); p++)
                for (int j = 0; j < hd; j++) {
                    int pair = style == RopeStyle.INTERLEAVED ? j / 2 : j % (hd / 2);
                    assertEquals((float) Math.cos(p * f[pair]), cos[p * hd + j], style + " cos p=" + p + " j=" + j);
                    assertEquals((float) Math.sin(p * f[pair]), sin[p * hd + j], style + " sin p=" + p + " j=" + j);
                }
            // pair 0 (wavelength 2π < 16) is kept, the last pairs (wavelength > 64) are slowed down 8×
            assertEquals(RopeTables.cos(plain)[5 * hd], cos[5 * hd]);
            int last = style == RopeStyle.INTERLEAVED ? hd - 1 : hd / 2 - 1;
            assertNotEquals(RopeTables.cos(plain)[5 * hd + last], cos[5 * hd + last]);
        }
    }
}
