package ane4j.train;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.mil.DType;
import ane4j.model.EmbeddedCorpus;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterView;
import ane4j.model.Parameters;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * fp16 gradient underflow, as the ANE shows it (docs/ane-facts.md §5.4): with the reference backend's fp16 storage, the
 * attention-score gradient (≈ probs·dP/S, tiny at seq 256) loses its small values unless the loss is scaled.
 */
class LossScalingTest {
    static float[] grads(ModelConfig c, Parameters p, int[] x, int[] y, boolean fp32, float scale) {
        float[] g = new float[p.data().length];
        try (TrainingStep s = new TrainingStep(c, new RefBackend(RefBackend.Options.ANE_LIKE.withFp32Storage(fp32)), TrainingStep.Options.of(fp32 ? DType.FP32 : DType.FP16))) {
            s.stageWeights(p.data());
            s.forwardBackward(p.data(), g, x, y, scale);
        }
        for (int i = 0; i < g.length; i++) g[i] /= scale;
        return g;
    }

    static double relErr(float[] ref, float[] g, ParameterView v) {
        double n = 0, d = 0;
        for (int i = v.offset(); i < v.end(); i++) {
            double e = ref[i] - g[i];
            n += e * e;
            d += (double) ref[i] * ref[i];
        }
        return Math.sqrt(n / d);
    }

    @Test
    void unscaledFp16GradientsUnderflowAndScaledOnesDoNot() {
        ModelConfig c = ModelConfig.parse("tiny").withSeqLen(256);
        Parameters p = Parameters.init(c, 7);
        int[] toks = EmbeddedCorpus.train(1, c.seqLen() + 1);
        int[] x = Arrays.copyOf(toks, c.seqLen()), y = Arrays.copyOfRange(toks, 1, c.seqLen() + 1);
        float scale = 256f * c.nLayers();
        float[] exact = grads(c, p, x, y, true, 1f), unscaled = grads(c, p, x, y, false, 1f), scaled = grads(c, p, x, y, false, scale);
        for (int l = 0; l < c.nLayers(); l++)
            for (ParameterView v : new ParameterView[] {p.layer(l).wq(), p.layer(l).wk()}) {
                double bad = relErr(exact, unscaled, v), good = relErr(exact, scaled, v);
                assertTrue(bad > 0.01, v.name() + ": unscaled fp16 error " + bad + " should show underflow");
                assertTrue(good < 0.002, v.name() + ": scaled fp16 error " + good);
                assertTrue(bad > 10 * good, v.name() + ": scaling should cut the error tenfold (" + bad + " vs " + good + ")");
            }
    }

    @Test
    void dynamicScalerHalvesOnOverflowAndGrowsAfterCleanSteps() {
        LossScaler s = new LossScaler(LossScaler.Mode.DYNAMIC, 1024f);
        assertFalse(s.afterBackward(false));
        assertEquals(512f, s.scale());
        for (int i = 0; i < LossScaler.GROWTH_INTERVAL; i++) assertTrue(s.afterBackward(true));
        assertEquals(1024f, s.scale());
        assertEquals(1, s.skippedUpdates());
        // slow (PyTorch's GradScaler interval) and capped per chip below the fp16 cliffs (docs/ane-audit-2.md R5)
        assertEquals(2000, LossScaler.GROWTH_INTERVAL);
        LossScaler m1 = new LossScaler(LossScaler.Mode.DYNAMIC, 128f, LossScaler.capFor(ane4j.chip.Chip.M1));
        for (int i = 0; i < 10 * LossScaler.GROWTH_INTERVAL; i++) m1.afterBackward(true);
        assertEquals(256f, m1.scale(), "M1-M3: never above 256");
        assertEquals(2048f, LossScaler.capFor(ane4j.chip.Chip.M4));
        assertEquals(LossScaler.MAX_SCALE, LossScaler.capFor(null));
        LossScaler fixed = new LossScaler(LossScaler.Mode.STATIC, 1024f);
        assertFalse(fixed.afterBackward(false), "a non-finite gradient is never applied");
        assertEquals(1, fixed.skippedUpdates(), "static scaling counts its skips too");
        assertEquals(1024f, fixed.scale());
        assertEquals(1f, new LossScaler(LossScaler.Mode.NONE, 1024f).scale());
    }
}
