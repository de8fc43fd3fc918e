package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ParameterLayoutTest {
    static final ModelConfig QWEN_SMALL = new ModelConfig("q", 32, 48, 3, 4, 2, 16, 40, 16, 1e6f, RopeStyle.HALF, true, false, 1e-6f, 1f);

    @Test
    void viewsTileTheBufferWithoutGapsInTheDocumentedOrder() {
        for (ModelConfig c : new ModelConfig[]{ModelConfig.parse("stories15m"), QWEN_SMALL, ModelConfig.parse("tiny")}) {
            ParameterLayout l = new ParameterLayout(c);
            int next = 0;
            for (ParameterView v : l.views()) {
                assertEquals(next, v.offset(), v.name());
                next = v.end();
            }
            assertEquals(c.parameterCount(), l.size());
            assertEquals(next, l.size());
            assertEquals("tokenEmbedding", l.views().getFirst().name());
        }
    }

    @Test
    void shapesAreRowMajorOutIn() {
        ParameterLayout l = new ParameterLayout(QWEN_SMALL);
        var ly = l.layer(1);
        assertArrayEquals(new int[]{64, 32}, ly.wq().shape());
        assertArrayEquals(new int[]{32, 32}, ly.wk().shape());
        assertArrayEquals(new int[]{32, 64}, ly.wo().shape());
        assertArrayEquals(new int[]{48, 32}, ly.w1().shape());
        assertArrayEquals(new int[]{32, 48}, ly.w2().shape());
        assertArrayEquals(new int[]{16}, ly.qNorm().shape());
        assertEquals(ly.wq(), l.view("layers.1.wq"));
        assertNotNull(l.wcls());
        assertEquals(l.wcls(), l.classifier());
        assertEquals(l.layer(0).size(), QWEN_SMALL.layerParameterCount());
        assertEquals(l.layer(1).offset(), l.layer(0).offset() + l.layer(0).size());
        // decay: matrices yes, norms no
        assertTrue(ly.wq().decay() && l.tokenEmbedding().decay());
        assertFalse(ly.rmsAtt().decay() || ly.qNorm().decay() || l.rmsFinal().decay());

        ParameterLayout tied = new ParameterLayout(ModelConfig.parse("tiny"));
        assertNull(tied.wcls());
        assertNull(tied.layer(0).qNorm());
        assertEquals(tied.tokenEmbedding(), tied.classifier());
        var e = assertThrows(IllegalArgumentException.class, () -> tied.view("wcls"));
        assertTrue(e.getMessage().startsWith("[layout] no parameter 'wcls'"), e.getMessage());
    }

    @Test
    void initIsDeterministicAndScaled() {
        ModelConfig c = ModelConfig.parse("tiny");
        Parameters a = Parameters.init(c, 7), b = Parameters.init(c, 7), d = Parameters.init(c, 8);
        assertArrayEquals(a.data(), b.data());
        assertFalse(java.util.Arrays.equals(a.data(), d.data()));
        float[] rms = a.get(a.layer(0).rmsAtt());
        for (float v : rms) assertEquals(1f, v);
        assertEquals(0.02, std(a.get(a.layer(0).wq())), 0.002);
        assertEquals(0.02 / Math.sqrt(2 * c.nLayers()), std(a.get(a.layer(1).w2())), 0.001);
    }

    static double std(float[] x) {
        double s = 0, ss = 0;
        for (float v : x) { s += v; ss += v * v; }
        double m = s / x.length;
        return Math.sqrt(ss / x.length - m * m);
    }

    @Test
    void rngStateRestoresTheSequence() {
        Rng r = new Rng(42);
        r.nextGaussian();
        long saved = r.state();
        double[] first = {r.nextGaussian(), r.nextFloat(), r.nextInt(1000)};
        Rng again = new Rng(0).restore(saved);
        assertArrayEquals(first, new double[]{again.nextGaussian(), again.nextFloat(), again.nextInt(1000)});
        // uniform floats are in [0, 1) and look uniform
        Rng u = new Rng(1);
        double sum = 0;
        for (int i = 0; i < 100_000; i++) {
            float f = u.nextFloat();
            assertTrue(f >= 0 && f < 1);
            sum += f;
        }
        assertEquals(0.5, sum / 100_000, 0.01);
    }
}
