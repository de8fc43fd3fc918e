package ane4j.train;

import ane4j.run.TrainOptions;
import ane4j.run.MetricsLog;
import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.model.CpuModel;
import ane4j.model.EmbeddedCorpus;
import ane4j.model.TokenShard;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Validation loss during training: where it runs, what it equals, and that it never moves the training numbers. */
class ValidationTest {
    @TempDir Path dir;

    private TrainOptions options(Path runDir, int steps, String... kv) {
        var m = new LinkedHashMap<String, String>();
        m.put("steps", Integer.toString(steps));
        m.put("runDir", runDir.toString());
        m.put("checkpointEvery", "10");
        m.put("warmup", "5");
        m.put("evalEvery", "10");
        m.put("evalTokens", "256");
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return TrainOptions.of(m);
    }

    private static RefBackend ref() { return new RefBackend(RefBackend.Options.ANE_LIKE); }

    /** Mean cross-entropy of consecutive windows by the independent CPU model (KV-cache forward, golden-tested against PyTorch). */
    static double cpuLoss(ane4j.model.Parameters p, int[] tokens, long from, int windows) {
        int s = p.config().seqLen();
        double total = 0;
        for (int w = 0; w < windows; w++) {
            CpuModel cpu = new CpuModel(p);
            double loss = 0;
            for (int t = 0; t < s; t++) {
                int at = (int) from + w * s + t;
                float[] logits = cpu.forward(tokens[at], t);
                double max = Double.NEGATIVE_INFINITY, sum = 0;
                for (float l : logits) max = Math.max(max, l);
                for (float l : logits) sum += Math.exp(l - max);
                loss -= logits[tokens[at + 1]] - max - Math.log(sum);
            }
            total += loss / s;
        }
        return total / windows;
    }

    /**
     * On the embedded corpus: validation after every 10th step and the last, in metrics.jsonl and in the history; it
     * equals the CPU model's loss on the validation stories' first windows, and it falls as the model learns.
     */
    @Test
    void validationRunsEveryNStepsOnTheHeldOutStories() throws IOException {
        List<String> messages = new ArrayList<>();
        Trainer.Listener log = new Trainer.Listener() {
            @Override public void onStep(StepMetrics m) {}
            @Override public void onMessage(String line) { messages.add(line); }
        };
        List<StepMetrics> h;
        try (Trainer t = new Trainer(options(dir.resolve("run"), 25, "storage", "fp32"), new RefBackend(RefBackend.Options.FP32_STORAGE), log)) {
            h = t.run(null, 0);
            int s = t.config().seqLen(), windows = 256 / s;
            int[] val = EmbeddedCorpus.validation(42, windows * s + 1);
            double expected = cpuLoss(t.parameters(), val, 0, windows);
            assertEquals(expected, h.getLast().valLoss(), 2e-4 * expected, "validation loss of the final weights");
        }
        assertTrue(messages.stream().anyMatch(l -> l.startsWith("[eval] validation loss every 10 steps and at the end: 4 windows of 64 tokens of the embedded corpus")), messages.toString());
        List<Long> validated = h.stream().filter(StepMetrics::validated).map(StepMetrics::step).toList();
        assertEquals(List.of(9L, 19L, 24L), validated);
        assertTrue(h.get(24).valLoss() < h.get(9).valLoss(), "validation loss falls: " + h.get(9).valLoss() + " → " + h.get(24).valLoss());
        assertTrue(h.get(24).valMs() > 0);
        List<StepMetrics> read = MetricsLog.read(dir.resolve("run/metrics.jsonl"), 25, w -> { throw new AssertionError(w); });
        for (int i = 0; i < h.size(); i++) assertEquals(h.get(i).valLoss(), read.get(i).valLoss(), "valLoss of step " + i + " in metrics.jsonl");
        String lines = Files.readString(dir.resolve("run/metrics.jsonl"));
        assertEquals(3, lines.split("\"valLoss\":", -1).length - 1, "valLoss only on the validated steps' lines");
    }

    /** Validation on or off trains bit-identical weights and losses, and compiles nothing more (the forward kernels training has). */
    @Test
    void validationDoesNotMoveTheTrainingNumbersOrCompile() {
        float[] with, without;
        List<Float> lossesWith = new ArrayList<>(), lossesWithout = new ArrayList<>();
        long compilesWith, compilesWithout;
        RefBackend b = ref(), b2 = ref();
        try (Trainer t = new Trainer(options(dir.resolve("on"), 20, "evalEvery", "3"), b, null)) {
            for (var m : t.run(null, 0)) lossesWith.add(m.loss());
            with = t.parameters().data().clone();
            compilesWith = b.compileCount();
        }
        try (Trainer t = new Trainer(options(dir.resolve("off"), 20, "evalEvery", "0"), b2, null)) {
            var h = t.run(null, 0);
            for (var m : h) lossesWithout.add(m.loss());
            assertFalse(h.stream().anyMatch(StepMetrics::validated));
            without = t.parameters().data().clone();
            compilesWithout = b2.compileCount();
        }
        assertArrayEquals(without, with);
        assertEquals(lossesWithout, lossesWith);
        assertEquals(compilesWithout, compilesWith, "validation compiles nothing");
    }

    /** A run stopped and resumed ends bit-identical to an uninterrupted one, validation losses included. */
    @Test
    void resumedRunHasTheSameValidationLosses() {
        float[] params;
        List<Float> val = new ArrayList<>();
        try (Trainer t = new Trainer(options(dir.resolve("a"), 30, "accum", "2"), ref(), null)) {
            for (var m : t.run(null, 0)) val.add(m.valLoss());
            params = t.parameters().data().clone();
        }
        try (Trainer t = new Trainer(options(dir.resolve("b"), 30, "accum", "2"), ref(), null)) {
            t.run(null, 15);
        }
        try (Trainer t = new Trainer(options(dir.resolve("b"), 30, "accum", "2", "resume", "true"), ref(), null)) {
            assertEquals(10, t.nextStep());
            List<Float> resumed = new ArrayList<>();
            for (var m : t.run(null, 0)) resumed.add(m.valLoss());
            assertArrayEquals(params, t.parameters().data());
            assertEquals(val, resumed);
        }
    }

    /**
     * A token file's last valFraction is held out: the sampler never draws it. The training part is one repeated
     * token, the tail other tokens: the model learns the repeat (training loss near 0) and not the tail.
     */
    @Test
    void tokenFileTailIsHeldOutFromTheSampler() throws IOException {
        ane4j.model.ModelConfig c = ane4j.model.ModelConfig.llama("mini", 48, 96, 2, 4, 100, 16);
        Path bin = dir.resolve("mini.bin"), shard = dir.resolve("tokens.bin");
        ane4j.model.Llama2Bin.write(bin, ane4j.model.Parameters.init(c, 3));
        int[] tokens = new int[1000];
        for (int i = 0; i < tokens.length; i++) tokens[i] = i < 900 ? 7 : 10 + (i * 37) % 90;
        TokenShard.write(shard, tokens);
        List<String> messages = new ArrayList<>();
        Trainer.Listener log = new Trainer.Listener() {
            @Override public void onStep(StepMetrics m) {}
            @Override public void onMessage(String line) { messages.add(line); }
        };
        try (Trainer t = new Trainer(options(dir.resolve("tail"), 40, "init", bin.toString(), "data", shard.toString(), "evalTokens", "64", "lr", "1e-2"), ref(), log)) {
            var h = t.run(null, 0);
            assertTrue(h.getLast().loss() < 0.1f, "the repeated token is learnt: " + h.getLast().loss());
            assertTrue(h.getLast().valLoss() > 2f, "the held-out tail is not: " + h.getLast().valLoss());
            assertEquals(cpuLoss(t.parameters(), tokens, 900, 4), h.getLast().valLoss(), 0.02, "four windows from token 900");
        }
        assertTrue(messages.contains("[eval] validation loss every 10 steps and at the end: 4 windows of 16 tokens of the last 100 tokens of tokens.bin"), messages.toString());
        // valData: the whole file trains; a file too small for a tail: no validation, said once
        Path small = dir.resolve("small.bin");
        TokenShard.write(small, java.util.Arrays.copyOf(tokens, 40));
        messages.clear();
        try (Trainer t = new Trainer(options(dir.resolve("small"), 2, "init", bin.toString(), "data", small.toString()), ref(), log)) {
            assertFalse(t.run(null, 0).stream().anyMatch(StepMetrics::validated));
        }
        assertTrue(messages.stream().anyMatch(l -> l.startsWith("[eval] small.bin: 40 tokens are too few to hold out 0.1 of them (4)")), messages.toString());
        messages.clear();
        try (Trainer t = new Trainer(options(dir.resolve("val"), 10, "init", bin.toString(), "data", small.toString(), "valData", shard.toString()), ref(), log)) {
            assertTrue(t.run(null, 0).getLast().validated());
        }
        assertTrue(messages.stream().anyMatch(l -> l.endsWith("16 windows of 16 tokens of tokens.bin")), messages.toString());
    }

    /** Static weights would recompile every weight-bearing kernel for a validation: it is off, said in one line. */
    @Test
    void staticWeightsSayValidationIsOff() {
        List<String> messages = new ArrayList<>();
        Trainer.Listener log = new Trainer.Listener() {
            @Override public void onStep(StepMetrics m) {}
            @Override public void onMessage(String line) { messages.add(line); }
        };
        try (Trainer t = new Trainer(options(dir.resolve("static"), 1, "weights", "static"), ref(), log)) {
            assertFalse(t.run(null, 0).stream().anyMatch(StepMetrics::validated));
        }
        assertTrue(messages.stream().anyMatch(l -> l.startsWith("[eval] weights = static: no validation during training")), messages.toString());
    }
}
