package ane4j.train;

import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.run.TrainOptions;
import ane4j.train.TrainingKernels.Name;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The staging's segment table against the kernels' layouts, the step's options, the phase timer, the dW thread. */
class WeightStagingTest {
    /** Every weight column region of every weight-bearing kernel's input is one the staging writes, and nothing else. */
    @Test
    void theSegmentTableCoversEveryWeightSegmentOfTheKernels() {
        ModelConfig c = ModelConfig.parse("tiny");
        TrainingKernels k = new TrainingKernels(c, DType.FP16);
        assertEquals(8, WeightStaging.WEIGHTED.size());
        for (Name n : Name.values()) {
            Set<String> weights = new TreeSet<>();
            for (String seg : k.build(n).input().segments().keySet()) if (seg.matches("w.*")) weights.add(seg);
            Set<String> staged = new TreeSet<>();
            for (WeightStaging.Segment s : WeightStaging.SEGMENTS.getOrDefault(n, List.of())) staged.add(s.name());
            assertEquals(weights, staged, n.id());
            assertEquals(n.weighted(), WeightStaging.SEGMENTS.containsKey(n), n.id());
        }
        assertEquals("wqT", new WeightStaging.Segment("q", true).name());
        assertEquals("w2", new WeightStaging.Segment("w2", false).name());
    }

    /** A run's settings become the step's options in one place; LoRA dropout with static weights is refused there too. */
    @Test
    void optionsFromARunsSettings() {
        var o = TrainingStep.Options.of(TrainOptions.of(Map.of("storage", "fp32", "weights", "static", "attention", "threestage")), null);
        assertEquals(new TrainingStep.Options(DType.FP32, true, true, null), o);
        assertEquals(new TrainingStep.Options(DType.FP16, false, false, null), TrainingStep.Options.of(TrainOptions.of(Map.of()), null));
        ModelConfig c = ModelConfig.parse("tiny");
        LoraAdapters dropped = LoraAdapters.init(c, 4, 8f, List.of("q", "v"), 1L, 0.1f);
        var e = assertThrows(IllegalArgumentException.class, () -> TrainingStep.Options.of(DType.FP32).withLora(dropped).withStaticWeights(true));
        assertTrue(e.getMessage().startsWith("[train] loraDropout = 0.1 with weights = static: "), e.getMessage());
        assertFalse(TrainingStep.Options.of(DType.FP32).withStaticWeights(true).withLora(LoraAdapters.init(c, 4, 8f, List.of("q"), 1L)).lora() == null);
    }

    @Test
    void theTimerSumsEachPhasesRegions() throws InterruptedException {
        StepTimer t = new StepTimer();
        try (var _ = t.phase(TrainingStep.Phase.IO)) { Thread.sleep(2); }
        try (var _ = t.phase(TrainingStep.Phase.IO)) { Thread.sleep(2); }
        try (var _ = t.phase(TrainingStep.Phase.CPU)) { Thread.sleep(1); }
        assertEquals(List.of(TrainingStep.Phase.IO, TrainingStep.Phase.CPU), List.copyOf(t.nanos().keySet()));
        assertTrue(t.nanos().get(TrainingStep.Phase.IO) >= 4_000_000L, t.nanos().toString());
        t.clear();
        assertTrue(t.nanos().isEmpty());
    }

    /** dW tasks run in the order queued; one that fails surfaces at the wait as one [train] line, and the queue is clear after. */
    @Test
    void theDwThreadRunsTasksInOrderAndReportsAFailure() {
        StepTimer t = new StepTimer();
        try (DwThread dw = new DwThread(t)) {
            List<Integer> ran = new java.util.concurrent.CopyOnWriteArrayList<>();
            for (int i = 0; i < 5; i++) {
                int n = i;
                dw.submit(() -> ran.add(n));
            }
            var last = dw.submit(() -> ran.add(5));
            dw.await(last);
            assertEquals(List.of(0, 1, 2, 3, 4, 5), ran);
            dw.submit(() -> { throw new IllegalArgumentException("bad shape"); });
            var e = assertThrows(IllegalStateException.class, dw::awaitAll);
            assertEquals("[train] a weight-gradient sgemm failed: java.lang.IllegalArgumentException: bad shape", e.getMessage());
            dw.awaitAll();                                  // the failed task is not waited for twice
            assertTrue(t.nanos().containsKey(TrainingStep.Phase.DW_WAIT));
        }
    }

    /** Three-stage attention's middle stage: softmax over keys 0..i, zeros after, each row summing to 1. */
    @Test
    void theCausalSoftmaxMasksKeysAfterTheQuery() {
        float[] row = {1f, 2f, 3f, 100f};
        CpuOps.causalSoftmax(row, 2, 4);
        double e1 = Math.exp(-2), e2 = Math.exp(-1), sum = e1 + e2 + 1;
        assertEquals(e1 / sum, row[0], 1e-7);
        assertEquals(e2 / sum, row[1], 1e-7);
        assertEquals(1 / sum, row[2], 1e-7);
        assertEquals(0f, row[3]);
        float[] first = {5f, -1f};
        CpuOps.causalSoftmax(first, 0, 2);
        assertEquals(List.of(1f, 0f), List.of(first[0], first[1]));
    }
}
