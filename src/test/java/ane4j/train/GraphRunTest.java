package ane4j.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.mil.DType;
import ane4j.mil.TensorType;
import ane4j.model.Json;
import ane4j.run.MetricsLog;
import ane4j.run.StepMetrics;
import ane4j.run.TrainOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A user graph trained by the preset runs' {@link Trainer} (issue 31): it learns, resumes bit-identically, scales its loss
 * exactly, writes the same run folder (metrics.jsonl, run.json, checkpoints of the one format), and refuses bad input in
 * one line before it touches a run folder.
 */
class GraphRunTest {
    @TempDir Path dir;

    private static RefBackend fp16() { return new RefBackend(RefBackend.Options.ANE_LIKE); }

    private Trainer trainer(Map<String, String> opts) { return new Trainer(TrainOptions.of(opts), fp16(), null); }

    private static float mean(List<StepMetrics> h, int from, int to) {
        double s = 0;
        for (int i = from; i < to; i++) s += h.get(i).loss();
        return (float) (s / (to - from));
    }

    @Test
    void learnsAndWritesThePresetRunsFolder() throws Exception {
        GraphRunFixture.write(dir);
        Path run = dir.resolve("run");
        List<StepMetrics> h;
        try (Trainer t = trainer(GraphRunFixture.options(dir, run, 80))) {
            assertNull(t.config());
            assertEquals(16 * 4 + 16 + 2 * 16 + 2, t.weights().length);
            h = t.run(null, 0);
        }
        assertEquals(80, h.size());
        // ln 2 at the start (two classes); a linearly separable rule is learnt well below it
        float first = mean(h, 0, 5), last = mean(h, 70, 80);
        assertTrue(first > 0.5f && last < 0.35f, "loss " + first + " → " + last);
        // validation every 10 steps on the held-out tail (valFraction 0.1 of 96 samples: 9), and dynamic loss scaling from 256
        long validated = h.stream().filter(StepMetrics::validated).count();
        assertEquals(8, validated);
        assertTrue(h.getLast().valLoss() < 0.5f, "validation loss " + h.getLast().valLoss());
        assertEquals(256f, h.getFirst().lossScale());
        // the run folder of a preset run
        assertEquals(80, MetricsLog.read(run.resolve("metrics.jsonl"), 80, w -> {}).size());
        assertTrue(Files.readString(run.resolve("run.txt")).contains("param.w1 = 16 4"));
        Map<?, ?> json = (Map<?, ?>) Json.parse(Files.readString(run.resolve("run.json")));
        Map<?, ?> options = (Map<?, ?>) json.get("options"), model = (Map<?, ?>) json.get("model"), data = (Map<?, ?>) json.get("data");
        assertEquals(dir.resolve("mlp.mil").toString(), options.get("graph"));
        assertEquals("loss", model.get("loss"));
        assertEquals("16 4", model.get("param.w1"));
        assertEquals("114", model.get("parameters"));
        assertTrue(data.toString().contains("data.x") && data.toString().contains("data.labels") && data.toString().contains("graph"), data.toString());
        Checkpoint.Contents c = Checkpoint.loadNewest(run.resolve("checkpoints"), w -> { throw new AssertionError(w); });
        assertEquals(80, c.state().step());
        assertNull(c.state().config());
        assertEquals(List.of("w1", "b1", "w2", "b2"), c.state().graph().params().stream().map(GraphLayout.Param::name).toList());
    }

    /** Stopping after 25 of 40 steps and resuming from that checkpoint ends bit-identical to the uninterrupted run. */
    @Test
    void resumedGraphRunIsBitIdentical() throws Exception {
        GraphRunFixture.write(dir);
        float[] w, m, v;
        List<StepMetrics> whole;
        try (Trainer t = trainer(GraphRunFixture.options(dir, dir.resolve("a"), 40, "accum", "2"))) {
            whole = t.run(null, 0);
            w = t.weights().clone();
            m = t.firstMoments().clone();
            v = t.secondMoments().clone();
        }
        Map<String, String> b = GraphRunFixture.options(dir, dir.resolve("b"), 40, "accum", "2");
        try (Trainer t = trainer(b)) {
            t.run(null, 26);
            t.checkpointNow();
        }
        b.put("resume", "true");
        try (Trainer t = trainer(b)) {
            assertEquals(26, t.nextStep());
            t.run(null, 0);
            assertArrayEquals(w, t.weights(), "weights");
            assertArrayEquals(m, t.firstMoments(), "AdamW first moments");
            assertArrayEquals(v, t.secondMoments(), "AdamW second moments");
        }
        List<StepMetrics> resumed = MetricsLog.read(dir.resolve("b/metrics.jsonl"), 40, x -> {});
        assertEquals(40, resumed.size());
        for (int i = 0; i < 40; i++) {
            assertEquals(Float.floatToRawIntBits(whole.get(i).loss()), Float.floatToRawIntBits(resumed.get(i).loss()), "loss of step " + i);
            assertEquals(whole.get(i).validated() ? whole.get(i).valLoss() : Float.NaN, resumed.get(i).validated() ? resumed.get(i).valLoss() : Float.NaN, "validation of step " + i);
        }
    }

    /**
     * The loss scale seeds the backward's upstream gradient and is divided out before clipping: with fp32 storage a power
     * of two changes no bit, so a static scale of 1024 trains the same weights as no scaling at all.
     */
    @Test
    void lossScalingIsExactInFp32() throws Exception {
        GraphRunFixture.write(dir);
        float[] none, scaled;
        try (Trainer t = new Trainer(TrainOptions.of(GraphRunFixture.options(dir, dir.resolve("none"), 20, "lossScaling", "none")), new RefBackend(RefBackend.Options.FP32_STORAGE), null)) {
            t.run(null, 0);
            none = t.weights().clone();
        }
        try (Trainer t = new Trainer(TrainOptions.of(GraphRunFixture.options(dir, dir.resolve("static"), 20, "lossScaling", "static", "lossScale", "1024")),
                new RefBackend(RefBackend.Options.FP32_STORAGE), null)) {
            List<StepMetrics> h = t.run(null, 0);
            assertEquals(1024f, h.getFirst().lossScale());
            scaled = t.weights().clone();
        }
        assertArrayEquals(none, scaled);
    }

    /**
     * The scale reaches an fp16 graph's backward: a scale past fp16's range overflows the gradients, which dynamic scaling
     * catches (update skipped, scale halved) while the loss itself, not scaled, stays finite; at a sane scale it learns.
     */
    @Test
    void anFp16GraphOverflowsAtAHugeScaleAndLearnsAtTheDefault() throws Exception {
        GraphRunFixture.write(dir, DType.FP16);
        try (Trainer t = trainer(GraphRunFixture.options(dir, dir.resolve("huge"), 3, "lossScaling", "dynamic", "lossScale", "1e6", "evalEvery", "0"))) {
            List<StepMetrics> h = t.run(null, 0);
            for (StepMetrics m : h) {
                assertTrue(m.skipped(), "an update with gradients scaled past fp16 is skipped (step " + m.step() + ")");
                assertTrue(Float.isFinite(m.loss()) && m.loss() > 0.5f, "the loss is not scaled: " + m.loss());
            }
            assertEquals(1e6f / 4, h.getLast().lossScale(), "the scale halves at each overflow");
        }
        try (Trainer t = trainer(GraphRunFixture.options(dir, dir.resolve("fp16"), 80))) {
            List<StepMetrics> h = t.run(null, 0);
            assertEquals(0, h.stream().filter(StepMetrics::skipped).count());
            assertTrue(mean(h, 70, 80) < 0.35f, "fp16 graph: loss " + mean(h, 0, 5) + " → " + mean(h, 70, 80));
        }
    }

    /** Initial values from an init folder; parameters without a file start from the seed (the same seed: the same values). */
    @Test
    void initFolderAndSeed() throws Exception {
        GraphRunFixture.write(dir);
        Files.createDirectories(dir.resolve("init"));
        TensorBuffer w1 = TensorBuffer.allocate(TensorType.of(DType.FP32, 16, 4));
        for (int i = 0; i < 64; i++) w1.set(i, i / 64f);
        Npy.write(dir.resolve("init/w1.npy"), w1);
        float[] a, b;
        try (Trainer t = trainer(GraphRunFixture.options(dir, dir.resolve("a"), 1, "init", dir.resolve("init").toString()))) { a = t.weights().clone(); }
        try (Trainer t = trainer(GraphRunFixture.options(dir, dir.resolve("b"), 1, "init", dir.resolve("init").toString()))) { b = t.weights().clone(); }
        assertArrayEquals(a, b);
        for (int i = 0; i < 64; i++) assertEquals(i / 64f, a[i]);
        for (int i = 64; i < 80; i++) assertEquals(0f, a[i], "b1 starts at 0");
        assertTrue(a[80] != 0f, "w2 starts from the seed");
    }

    private void assertOneLine(String expected, Map<String, String> opts) {
        var e = assertThrows(IllegalArgumentException.class, () -> trainer(opts).close());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
        assertFalse(Files.exists(Path.of(opts.get("runDir"))), "no run folder for a run refused at its start");
    }

    @Test
    void badInputIsOneLineBeforeAnyRunFolder() throws Exception {
        GraphRunFixture.write(dir);
        Path run = dir.resolve("run");
        // a graph that does not parse: file:line:col
        Files.writeString(dir.resolve("bad.mil"), Files.readString(dir.resolve("mlp.mil")).replace("tanh(x = ", "tanh(x = %"));
        Map<String, String> o = GraphRunFixture.options(dir, run, 5);
        o.put("graph", dir.resolve("bad.mil").toString());
        var e = assertThrows(IllegalArgumentException.class, () -> trainer(o).close());
        assertTrue(e.getMessage().matches("\\[train] graph .*bad\\.mil:\\d+:\\d+: .*"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
        // a loss that is not an output, a parameter that is not an input
        assertOneLine("loss = logits is not an output of graph", GraphRunFixture.options(dir, run, 5, "loss", "logits"));
        // a loss that is not one number (it would train on the sum of a tensor whose mean is shown)
        GraphRunFixture.writeWithLogits(dir);
        Map<String, String> tensorLoss = GraphRunFixture.options(dir, run, 5, "loss", "logits");
        tensorLoss.put("graph", dir.resolve("both.mil").toString());
        assertOneLine("loss = logits is fp32[8,2] in graph", tensorLoss);
        assertOneLine("a graph run's loss is one float number: reduce it in the graph (reduce_mean), or give logits = NAME and labels = NAME", tensorLoss);
        // a data file that cannot be read: one tagged line
        Path dangling = dir.resolve("dangling");
        Files.createDirectories(dangling);
        Files.createSymbolicLink(dangling.resolve("x.npy"), dir.resolve("nowhere.npy"));
        Files.copy(dir.resolve("data/labels.npy"), dangling.resolve("labels.npy"));
        Map<String, String> unreadable = GraphRunFixture.options(dir, run, 5);
        unreadable.put("data", dangling.toString());
        var npy = assertThrows(IllegalArgumentException.class, () -> trainer(unreadable).close());
        assertTrue(npy.getMessage().startsWith("[npy] cannot read ") && npy.getMessage().endsWith("x.npy: no such file"), npy.getMessage());
        assertOneLine("params: 'w9' is not an input of graph", GraphRunFixture.options(dir, run, 5, "params", "w1,w9"));
        // shapes that do not match the graph's inputs
        Npy.write(dir.resolve("data/x.npy"), TensorBuffer.allocate(TensorType.of(DType.FP32, 96, 5)));
        assertOneLine("is [96, 5] but graph input 'x' is fp32[8,4]: give [N, 4] (samples along the first axis)", GraphRunFixture.options(dir, run, 5));
        Npy.write(dir.resolve("data/x.npy"), TensorBuffer.allocate(TensorType.of(DType.FP32, 95, 4)));
        assertOneLine("labels.npy has 96 samples but x.npy has 95", GraphRunFixture.options(dir, run, 5));
        // data missing an input
        Files.delete(dir.resolve("data/labels.npy"));
        assertOneLine("graph input 'labels' int32[8] has no data file", GraphRunFixture.options(dir, run, 5));
        // a preset setting with a graph, and a graph setting without one: refused as the options are read
        var preset = assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(GraphRunFixture.options(dir, run, 5, "model", "stories15m")));
        assertTrue(preset.getMessage().startsWith("[train] model = stories15m is a setting of the preset transformer, but graph = "), preset.getMessage());
        preset = assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(GraphRunFixture.options(dir, run, 5, "dim", "64")));
        assertTrue(preset.getMessage().contains("dim = 64 is a setting of the preset transformer"), preset.getMessage());
        var loose = assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(Map.of("loss", "loss")));
        assertTrue(loose.getMessage().startsWith("[train] loss = loss without graph"), loose.getMessage());
    }

    /** A preset run's checkpoint is not resumed by a graph run in the same folder (nor the other way round). */
    @Test
    void aGraphRunRefusesAPresetCheckpoint() throws Exception {
        GraphRunFixture.write(dir);
        Path run = dir.resolve("run");
        try (Trainer t = new Trainer(TrainOptions.of(Map.of("model", "tiny", "dim", "32", "nLayers", "1", "nHeads", "2", "seqLen", "16", "steps", "1",
                "runDir", run.toString(), "evalEvery", "0")), fp16(), null)) {
            t.run(null, 0);
        }
        var e = assertThrows(CheckpointFormatException.class, () -> trainer(GraphRunFixture.options(dir, run, 5, "resume", "true")).close());
        assertTrue(e.getMessage().contains("is of model") && e.getMessage().contains("this run trains graph = mlp.mil"), e.getMessage());
        assertNotNull(Checkpoint.loadNewest(run.resolve("checkpoints"), w -> {}), "the checkpoint is left as it was");
    }
}
