package ane4j.train;

import ane4j.run.StepMetrics;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.mil.DType;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.model.Rng;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static ane4j.mil.Mil.fp32;
import static ane4j.mil.Mil.int32;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A small MLP built with the fluent API trains through GraphStep + GraphTrainer; a resumed run ends bit-identical. */
class GraphTrainerTest {
    @TempDir Path dir;

    static final int B = 16, IN = 4, HID = 16, K = 3;

    static Program mlp() {
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp32(B, IN));
            var labels = f.input("labels", int32(B));
            var w1 = f.input("w1", fp32(HID, IN));
            var b1 = f.input("b1", fp32(HID));
            var w2 = f.input("w2", fp32(K, HID));
            var b2 = f.input("b2", fp32(K));
            var h = f.gelu(f.linear(x, w1, b1));
            f.output(f.named("loss", f.crossEntropyLabels(f.linear(h, w2, b2), labels)));
        }).build();
    }

    /** Three Gaussian blobs; batch `step` is a fixed function of the step. */
    static Map<String, TensorBuffer> batch(long step) {
        Rng r = new Rng(1000 + step);
        TensorBuffer x = TensorBuffer.allocate(TensorType.of(DType.FP32, B, IN)), y = TensorBuffer.allocate(TensorType.of(DType.INT32, B));
        for (int i = 0; i < B; i++) {
            int c = r.nextInt(K);
            y.set(i, c);
            for (int j = 0; j < IN; j++) x.set(i * IN + j, (j == c ? 2f : 0f) + (r.nextFloat() - 0.5f));
        }
        return Map.of("x", x, "labels", y);
    }

    static float[] init(GraphStep step) {
        Rng r = new Rng(7);
        float[] p = new float[step.size()];
        for (int i = 0; i < p.length; i++) p[i] = (r.nextFloat() - 0.5f) * 0.5f;
        return p;
    }

    @Test
    void learnsAndValidates() {
        try (GraphStep step = new GraphStep(mlp(), "loss", List.of("w1", "b1", "w2", "b2"), new RefBackend(RefBackend.Options.FP32_STORAGE), true)) {
            float[] p = init(step);
            GraphTrainer t = new GraphTrainer(step, p, GraphTrainer.Options.defaults().withSteps(150).withEvalEvery(50));
            var h = t.fit(GraphTrainerTest::batch, batch(-1), null);
            assertEquals(150, h.size());
            assertTrue(h.get(0).loss() > 0.9f, "first loss " + h.get(0).loss());
            assertTrue(h.get(149).valLoss() < 0.2f, "validation loss after 150 steps " + h.get(149).valLoss());
            assertEquals(3, h.stream().filter(StepMetrics::validated).count());
        }
    }

    @Test
    void resumedRunIsBitIdentical() throws Exception {
        var backend = new RefBackend(RefBackend.Options.ANE_LIKE);
        float[] straight, resumed;
        try (GraphStep step = new GraphStep(mlp(), "loss", List.of("w1", "b1", "w2", "b2"), backend, true)) {
            straight = init(step);
            new GraphTrainer(step, straight, GraphTrainer.Options.defaults().withSteps(30).withCheckpoints(dir.resolve("a"), 10)).fit(GraphTrainerTest::batch, null, null);
            // the same run stopped after 15 steps (checkpoint at 10), then a new trainer on the folder
            resumed = init(step);
            GraphTrainer first = new GraphTrainer(step, resumed, GraphTrainer.Options.defaults().withSteps(30).withCheckpoints(dir.resolve("b"), 10));
            first.fit(s -> { if (s == 15) throw new IllegalStateException("stop"); return batch(s); }, null, null);
        } catch (IllegalStateException stopped) {
            assertEquals("stop", stopped.getMessage());
        }
        try (GraphStep step = new GraphStep(mlp(), "loss", List.of("w1", "b1", "w2", "b2"), backend, true)) {
            resumed = new float[step.size()];
            GraphTrainer again = new GraphTrainer(step, resumed, GraphTrainer.Options.defaults().withSteps(30).withCheckpoints(dir.resolve("b"), 10));
            assertEquals(10, again.nextStep());
            again.fit(GraphTrainerTest::batch, null, null);
            assertEquals(30, again.history().size());
        }
        straight = straightParams(dir.resolve("a"));
        assertArrayEquals(straight, resumed);
        assertTrue(Files.exists(dir.resolve("b/metrics.jsonl")));
    }

    /** The final parameters of run a, read back from its last checkpoint (a new trainer on the finished folder). */
    static float[] straightParams(Path run) {
        try (GraphStep step = new GraphStep(mlp(), "loss", List.of("w1", "b1", "w2", "b2"), new RefBackend(RefBackend.Options.ANE_LIKE), true)) {
            float[] p = new float[step.size()];
            GraphTrainer t = new GraphTrainer(step, p, GraphTrainer.Options.defaults().withSteps(30).withCheckpoints(run, 10));
            assertEquals(30, t.nextStep());
            return p;
        }
    }
}
