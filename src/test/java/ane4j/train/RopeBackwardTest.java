package ane4j.train;

import ane4j.model.ModelConfig;
import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

class RopeBackwardTest {

    /** RoPE backward on the channel-first tables gives the bits of the inverse rotation read from the (S, HD) tables. */
    @Test
    void channelFirstTablesGiveTheInverseRotationOfTheRowMajorOnes() {
        for (ModelConfig c : new ModelConfig[] {ModelConfig.parse("tiny"), ModelConfig.parse("qwen3-0.6b").withSeqLen(48)}) {
            int hd = c.headDim(), s = c.seqLen(), heads = 2;
            float[] cos = RopeTables.cos(c), sin = RopeTables.sin(c);
            float[] d = new float[heads * hd * s];
            Random r = new Random(3);
            for (int i = 0; i < d.length; i++) d[i] = (float) r.nextGaussian();
            float[] expect = d.clone();
            boolean interleaved = c.ropeStyle() == ane4j.model.RopeStyle.INTERLEAVED;
            for (int h = 0; h < heads; h++)
                for (int i = 0; i < hd / 2; i++) {
                    int ja = interleaved ? 2 * i : i, jb = interleaved ? 2 * i + 1 : i + hd / 2;
                    for (int p = 0; p < s; p++) {
                        int a = (h * hd + ja) * s + p, b = (h * hd + jb) * s + p;
                        float co = cos[p * hd + ja], si = sin[p * hd + ja], da = d[a], db = d[b];
                        expect[a] = da * co + db * si;
                        expect[b] = -da * si + db * co;
                    }
                }
            CpuOps.ropeBackward(d, c, heads, CpuOps.channelFirst(cos, s, hd), CpuOps.channelFirst(sin, s, hd));
            assertArrayEquals(expect, d, 0f, c.name());
        }
    }
}
