package ane4j.train;

import ane4j.run.TrainOptions;
import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 row 5 and docs/ane-audit.md F4: an fp16 gradient overflow is skipped (and a dynamic scale backs off) in every
 * mode; divergence (the fp32 loss not finite, overflow that no scale cures, weights beyond fp16) stops the run with one
 * line naming the likely cause and the fix, and never writes a checkpoint of the diverged state.
 */
class DivergenceTest {
    @TempDir Path dir;

    private static TrainOptions options(Path runDir, int steps, String... kv) {
        var m = new java.util.LinkedHashMap<String, String>(Map.of("steps", Integer.toString(steps), "runDir", runDir.toString(),
                "checkpointEvery", "2", "warmup", "2"));
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return TrainOptions.of(m);
    }

    private static RefBackend ref() { return new RefBackend(RefBackend.Options.ANE_LIKE); }

    @Test
    void theDefaultIsDynamicScalingFromMaderixs256() {
        TrainOptions o = TrainOptions.of(Map.of());
        assertEquals("dynamic", o.lossScaling());
        try (Trainer t = new Trainer(options(dir.resolve("d"), 2), ref(), null)) {
            assertEquals(LossScaler.DEFAULT_SCALE, t.run(null, 1).getFirst().lossScale());
        }
    }

    @Test
    void anFp16OverflowIsSkippedAndBacksOffInsteadOfStoppingTheRun() {
        // 2^24 overflows the fp16 gradients (max 65504) at once: dynamic halves until they fit, then trains
        List<String> messages = new ArrayList<>();
        List<StepMetrics> h;
        double uniform;
        try (Trainer t = new Trainer(options(dir.resolve("dyn"), 10, "lossScale", "4194304"), ref(), null)) {
            h = t.run(listener(messages), 0);
            uniform = Math.log(t.config().vocabSize());   // the cross-entropy of a uniform guess
        }
        long skipped = h.stream().filter(StepMetrics::skipped).count();
        assertTrue(skipped >= 2 && !h.getLast().skipped(), "overflow skips, then clean updates: " + skipped);
        assertTrue(h.getLast().lossScale() < 4194304f / 2, "the scale backed off: " + h.getLast().lossScale());
        for (StepMetrics m : h)
            assertTrue(m.loss() > 0 && m.loss() < 1.5 * uniform, "the fp32 loss stays in (0, 1.5·ln V) at step " + m.step() + ": " + m.loss());
        assertTrue(messages.getFirst().matches("\\[train] step 0: gradient overflow at loss scale 4194304\\.0, scale now 2097152\\.0; update skipped"), messages.getFirst());
    }

    @Test
    void aStaticScaleThatOverflowsEveryUpdateIsDiagnosedAsTheScale() {
        var e = assertThrows(TrainingDivergedException.class, () -> {
            try (Trainer t = new Trainer(options(dir.resolve("static"), 40, "lossScaling", "static", "lossScale", "16777216", "checkpointEvery", "0"), ref(), null)) {
                t.run(null, 0);
            }
        });
        assertEquals(1, e.getMessage().lines().count());
        assertTrue(e.getMessage().startsWith("[train] diverged at step " + (Divergence.STATIC_SKIP_LIMIT - 1)
                + ": gradients overflowed fp16 at the static loss scale 16777216 for " + Divergence.STATIC_SKIP_LIMIT + " updates in a row; "
                + "likely cause: the static loss scale 16777216 is too large for these gradients; fix: use --loss-scaling dynamic (the default) or a smaller --loss-scale; "
                + "no checkpoint was written (none was good)"), e.getMessage());
        assertEquals(List.of(), Checkpoint.list(dir.resolve("static/checkpoints")));
    }

    @Test
    void divergedWeightsStopTheRunAndTheLastGoodCheckpointIsKept() throws Exception {
        Path run = dir.resolve("run");
        try (Trainer t = new Trainer(options(run, 40), ref(), null)) {
            t.run(null, 4);                                           // checkpoints after steps 2 and 4
            List<Path> good = Checkpoint.list(run.resolve("checkpoints"));
            assertEquals(2, good.size(), good.toString());
            byte[] newest = Files.readAllBytes(good.getFirst());
            // what a learning rate of 1e9 does to the weights after one update
            java.util.Arrays.fill(t.parameters().data(), 3e7f);
            var e = assertThrows(TrainingDivergedException.class, () -> t.run(null, 0));
            assertEquals(1, e.getMessage().lines().count());
            // step 4's loss is NaN (update skipped), and the checkpoint after step 5 finds the weights
            assertTrue(e.getMessage().startsWith("[train] diverged at step 5: weights beyond the fp16 range (|w| = 3.00e+07) at the checkpoint; "
                    + "likely cause: the learning rate 0.003 is too high (weights reached |w| = 3.00e+07); fix: lower --lr (the default is 3e-3); "
                    + "the last good checkpoint " + good.getFirst() + " is kept (nothing written after it)"), e.getMessage());
            assertEquals(good, Checkpoint.list(run.resolve("checkpoints")), "no checkpoint of the diverged state");
            assertArrayEquals(newest, Files.readAllBytes(good.getFirst()));
            assertThrows(TrainingDivergedException.class, () -> t.saveCheckpoint(Float.NaN), "an explicit save refuses it too");
            assertEquals(good, Checkpoint.list(run.resolve("checkpoints")));
        }
    }

    @Test
    void overflowAtTheMinimumDynamicScaleIsDivergenceAndOverflowAboveItIsNot() {
        Divergence d = new Divergence();
        for (float scale = 256; scale > 1; scale /= 2) d.overflow(scale);   // backing off: eight skips, none at the minimum
        assertEquals(null, d.symptom(LossScaler.Mode.DYNAMIC));
        d.overflow(1f);
        d.overflow(1f);
        assertEquals(null, d.symptom(LossScaler.Mode.DYNAMIC));
        d.overflow(1f);
        assertEquals("gradients overflowed fp16 at the minimum loss scale 1 for 3 updates in a row", d.symptom(LossScaler.Mode.DYNAMIC));
        d.applied();
        assertEquals(null, d.symptom(LossScaler.Mode.DYNAMIC), "a clean update ends the streak");
        d.loss(Float.NaN);
        d.loss(Float.POSITIVE_INFINITY);
        d.loss(1.5f);
        d.loss(Float.NaN);
        assertEquals(null, d.symptom(LossScaler.Mode.STATIC), "not in a row");
        assertEquals("[train] diverged at step 7: s; likely cause: exploding gradients, most often a learning rate too high (0.003); "
                + "loss scaling cannot help at scale 1; fix: lower --lr; k", Divergence.diagnosis(7, "s", 2f, TrainOptions.of(Map.of()), LossScaler.Mode.DYNAMIC, 1f, "k"));
    }

    private static Trainer.Listener listener(List<String> messages) {
        return new Trainer.Listener() {
            @Override public void onStep(StepMetrics m) {}

            @Override public void onMessage(String line) { messages.add(line); }
        };
    }
}
