package ane4j.train;

import ane4j.run.TrainOptions;
import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.chip.Chip;
import ane4j.mil.DType;
import ane4j.model.EmbeddedCorpus;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/ane-audit.md F4 on an emulated pre-M4 chip ({@link RefBackend.Options#chip()}: a width-offset slice turns |v| > 4094
 * into ±inf on M1–M3, an fp16 matmul output above 32752 is ±inf, ANEForge #115/#164/#178): a cliff the scaled
 * gradients reach is never silent. At every loss scale a step's gradients are either not finite (the overflow check
 * sees it and the update is skipped) or bit-identical to the unemulated backend's; and fp16 training that starts at
 * a scale past the cliff skips, backs off and trains on with finite losses and updates.
 */
class CliffsOnPreM4Test {
    @TempDir Path dir;

    static final ModelConfig TINY = ModelConfig.parse("tiny");

    @Test
    void atEveryScaleTheGradientsAreEitherNotFiniteOrUntouchedByTheCliffs() {
        Parameters p = Parameters.init(TINY, 3);
        int[] toks = EmbeddedCorpus.train(5, TINY.seqLen() + 1);
        int[] x = Arrays.copyOf(toks, TINY.seqLen()), y = Arrays.copyOfRange(toks, 1, TINY.seqLen() + 1);
        List<String> log = new ArrayList<>();
        int cliffOnly = 0;
        try (TrainingStep plain = new TrainingStep(TINY, new RefBackend(RefBackend.Options.ANE_LIKE), TrainingStep.Options.of(DType.FP16));
             TrainingStep m3 = new TrainingStep(TINY, new RefBackend(RefBackend.Options.ANE_LIKE.withChip(Chip.M3)), TrainingStep.Options.of(DType.FP16))) {
            plain.stageWeights(p.data());
            m3.stageWeights(p.data());
            for (float scale = 256; scale <= 1 << 24; scale *= 4) {
                float[] gp = new float[p.data().length], gm = new float[p.data().length];
                plain.forwardBackward(p.data(), gp, x, y, scale);
                m3.forwardBackward(p.data(), gm, x, y, scale);
                boolean plainFinite = Double.isFinite(AdamW.sumOfSquares(gp, 1f)), m3Finite = Double.isFinite(AdamW.sumOfSquares(gm, 1f));
                log.add(scale + ": plain " + plainFinite + ", m3 " + m3Finite);
                if (m3Finite) assertArrayEquals(gp, gm, "scale " + scale + ": finite gradients on M3 must be the unemulated ones (a cliff changed them silently)");
                if (!m3Finite && plainFinite) cliffOnly++;
            }
        }
        assertTrue(cliffOnly > 0, "some scale reaches an M3 cliff below the fp16 overflow: " + log);
    }

    @Test
    void fp16TrainingPastTheCliffSkipsBacksOffAndTrainsOn() {
        // 2^21: plain fp16 holds these gradients (above), M3's slice clamp does not until the scale is 2^18
        var m = new LinkedHashMap<String, String>(Map.of("steps", "6", "runDir", dir.resolve("m3").toString(), "checkpointEvery", "0",
                "warmup", "2", "lossScale", "2097152"));
        List<String> messages = new ArrayList<>();
        List<StepMetrics> h;
        Trainer.Listener listener = new Trainer.Listener() {
            @Override public void onStep(StepMetrics s) {}

            @Override public void onMessage(String line) { messages.add(line); }
        };
        double uniform;
        try (Trainer t = new Trainer(TrainOptions.of(m), new RefBackend(RefBackend.Options.ANE_LIKE.withChip(Chip.M3)), null)) {
            h = t.run(listener, 0);
            uniform = Math.log(t.config().vocabSize());   // the cross-entropy of a uniform guess
        }
        long skipped = h.stream().filter(StepMetrics::skipped).count();
        assertTrue(skipped >= 1, "the cliff was reached and seen: " + messages);
        assertTrue(messages.getFirst().startsWith("[train] step 0: gradient overflow at loss scale 2097152.0, scale now 1048576.0; update skipped"), messages.toString());
        assertFalse(h.getLast().skipped(), "clean updates after backing off: " + messages);
        for (StepMetrics s : h) {
            assertTrue(s.loss() > 0 && s.loss() < 1.5 * uniform, "step " + s.step() + ": loss " + s.loss() + " outside (0, 1.5·ln V)");
            if (s.updated() && !s.skipped())
                assertTrue(s.gradNorm() > 0 && Float.isFinite(s.gradNorm()), "step " + s.step() + ": an applied update has finite, non-zero gradients: " + s.gradNorm());
        }
        assertEquals(h.size() - skipped, h.stream().filter(s -> s.updated() && !s.skipped()).count());
    }
}
