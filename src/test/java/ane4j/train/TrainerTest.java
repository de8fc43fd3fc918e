package ane4j.train;

import ane4j.run.TrainOptions;
import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TrainerTest {
    @TempDir Path dir;

    private TrainOptions options(Path runDir, int steps, String... kv) {
        var m = new java.util.LinkedHashMap<String, String>(Map.of("steps", Integer.toString(steps), "runDir", runDir.toString(),
                "checkpointEvery", "10", "warmup", "5"));
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return TrainOptions.of(m);
    }

    private static RefBackend ref() { return new RefBackend(RefBackend.Options.ANE_LIKE); }

    private static float mean(List<StepMetrics> h, int from, int to) {
        double s = 0;
        for (int i = from; i < to; i++) s += h.get(i).loss();
        return (float) (s / (to - from));
    }

    /** The default model learns the embedded corpus: the loss falls by more than a third in 120 steps, with fp16 semantics. */
    @Test
    void lossFallsOnTheEmbeddedCorpus() {
        try (Trainer t = new Trainer(options(dir.resolve("run"), 120), ref(), null)) {
            List<StepMetrics> h = t.run(null, 0);
            assertEquals(120, h.size());
            float first = mean(h, 0, 10), last = mean(h, 110, 120);
            assertTrue(last < 0.67f * first, "loss " + first + " → " + last);
            double uniform = Math.log(t.config().vocabSize());   // the cross-entropy of a uniform guess, about where step 0 starts
            for (StepMetrics m : h) assertTrue(m.loss() > 0 && m.loss() < 1.5 * uniform, "loss " + m.loss() + " at step " + m.step() + " outside (0, 1.5·ln V = " + 1.5 * uniform + ")");
        }
        assertTrue(Files.exists(dir.resolve("run/metrics.jsonl")));
        assertTrue(Files.exists(dir.resolve("run/run.txt")));
        assertEquals(3, Checkpoint.list(dir.resolve("run/checkpoints")).size(), "last 3 checkpoints kept");
    }

    /** Stopping and resuming from the newest checkpoint ends bit-identical to an uninterrupted run. */
    @Test
    void resumedRunIsBitIdentical() {
        float[] params, m, v;
        List<Float> losses = new ArrayList<>();
        try (Trainer t = new Trainer(options(dir.resolve("a"), 40, "accum", "2", "lossScaling", "dynamic"), ref(), null)) {
            for (var s : t.run(null, 0)) losses.add(s.loss());
            params = t.parameters().data().clone();
            m = t.firstMoments().clone();
            v = t.secondMoments().clone();
        }
        try (Trainer t = new Trainer(options(dir.resolve("b"), 40, "accum", "2", "lossScaling", "dynamic"), ref(), null)) {
            t.run(null, 25);           // checkpoints at 10 and 20; steps 20..24 are lost with the "crash"
        }
        List<Float> resumed = new ArrayList<>();
        try (Trainer t = new Trainer(options(dir.resolve("b"), 40, "accum", "2", "lossScaling", "dynamic", "resume", "true"), ref(), null)) {
            assertEquals(20, t.nextStep());
            for (var s : t.run(null, 0)) resumed.add(s.loss());
            assertArrayEquals(params, t.parameters().data());
            assertArrayEquals(m, t.firstMoments());
            assertArrayEquals(v, t.secondMoments());
        }
        assertEquals(losses, resumed, "loss curve (metrics.jsonl rewritten from the checkpoint on)");
    }

    @Test
    void corruptNewestCheckpointFallsBackToThePreviousOne() throws IOException {
        try (Trainer t = new Trainer(options(dir.resolve("c"), 30), ref(), null)) {
            t.run(null, 0);
        }
        List<Path> ckpts = Checkpoint.list(dir.resolve("c/checkpoints"));
        Path newest = ckpts.get(0);
        byte[] bytes = Files.readAllBytes(newest);
        bytes[bytes.length / 2] ^= 0x40;
        Files.write(newest, bytes);
        List<String> warnings = new ArrayList<>();
        Checkpoint.Contents c = Checkpoint.loadNewest(dir.resolve("c/checkpoints"), warnings::add);
        assertEquals(20, c.state().step());
        assertEquals(1, warnings.size());
        assertTrue(warnings.get(0).contains("checksum"), warnings.get(0));
        // truncated too
        Files.write(ckpts.get(1), java.util.Arrays.copyOf(Files.readAllBytes(ckpts.get(1)), 100));
        var e = assertThrows(CheckpointFormatException.class, () -> Checkpoint.load(ckpts.get(1)));
        assertTrue(e.getMessage().contains("truncated"), e.getMessage());
    }

    @Test
    void checkpointOfAnotherModelIsRefused() {
        try (Trainer t = new Trainer(options(dir.resolve("d"), 10), ref(), null)) {
            t.run(null, 0);
        }
        Path cfg = dir.resolve("other.txt");
        var e = assertThrows(CheckpointFormatException.class, () -> {
            Files.writeString(cfg, "preset = tiny\nname = wider\ndim = 96\nheadDim = 24\n");
            new Trainer(options(dir.resolve("d"), 10, "model", cfg.toString(), "resume", "true"), ref(), null).close();
        });
        assertTrue(e.getMessage().contains("is for model tiny"), e.getMessage());
    }

    /**
     * --init from a llama2.c checkpoint and --data from a token shard: the config comes from the file, and the first
     * loss equals the one the independent CPU model (golden-tested against PyTorch) computes for the same window.
     */
    @Test
    void initFromLlama2BinAndTokenShard() throws IOException {
        ane4j.model.ModelConfig c = ane4j.model.ModelConfig.llama("mini", 48, 96, 2, 4, 100, 16);
        ane4j.model.Parameters p = ane4j.model.Parameters.init(c, 3);
        Path bin = dir.resolve("mini.bin"), shard = dir.resolve("tokens.bin");
        ane4j.model.Llama2Bin.write(bin, p);
        int[] tokens = new int[c.seqLen() + 2];                // room for exactly one window: position 0
        for (int i = 0; i < tokens.length; i++) tokens[i] = (i * 37 + 11) % c.vocabSize();
        ane4j.model.TokenShard.write(shard, tokens);
        float expected;
        {
            ane4j.model.CpuModel cpu = new ane4j.model.CpuModel(ane4j.model.Llama2Bin.read(bin));
            double loss = 0;
            for (int t = 0; t < c.seqLen(); t++) {
                float[] logits = cpu.forward(tokens[t], t);
                double max = Double.NEGATIVE_INFINITY, sum = 0;
                for (float l : logits) max = Math.max(max, l);
                for (float l : logits) sum += Math.exp(l - max);
                loss -= logits[tokens[t + 1]] - max - Math.log(sum);
            }
            expected = (float) (loss / c.seqLen());
        }
        TrainOptions o = options(dir.resolve("init"), 3, "init", bin.toString(), "data", shard.toString(), "storage", "fp32");
        try (Trainer t = new Trainer(o, new RefBackend(RefBackend.Options.FP32_STORAGE), null)) {
            assertEquals(48, t.config().dim());
            assertEquals(100, t.config().vocabSize());
            List<StepMetrics> h = t.run(null, 0);
            assertEquals(expected, h.get(0).loss(), 1e-4f);
            assertTrue(h.get(2).loss() < h.get(0).loss(), "training on one window lowers its loss");
        }
    }

    @Test
    void badOptionsNameTheKey() {
        var e = assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(Map.of("stepz", "3")));
        assertTrue(e.getMessage().startsWith("[train] unknown option 'stepz'"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(Map.of("lossScaling", "huge")));
        assertTrue(e.getMessage().contains("not one of static, dynamic, none"), e.getMessage());
        assertEquals("static", TrainOptions.of(Map.of("weights", "static")).weights());
        assertEquals(0.5f, TrainOptions.of(Map.of("weight-decay", "0.5")).weightDecay());
    }

    /** Validation keys: on by default, every 100 micro-steps over 1024 held-out tokens; a data file's tail of 10% held out. */
    @Test
    void validationKeys() {
        TrainOptions d = TrainOptions.of(Map.of());
        assertEquals(100, d.evalEvery());
        assertEquals(1024, d.evalTokens());
        assertEquals(null, d.valData());
        assertEquals(0.1f, d.valFraction());
        TrainOptions o = TrainOptions.of(Map.of("eval-every", "0", "eval_tokens", "64", "val-data", "val.bin", "valFraction", "0"));
        assertEquals(0, o.evalEvery());
        assertEquals(64, o.evalTokens());
        assertEquals(Path.of("val.bin"), o.valData());
        assertEquals(0f, o.valFraction());
        var e = assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(Map.of("valFraction", "1")));
        assertTrue(e.getMessage().startsWith("[train] valFraction must be below 1"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(Map.of("evalTokens", "0")));
        assertTrue(e.getMessage().startsWith("[train] evalTokens must be at least 1"), e.getMessage());
    }
}
