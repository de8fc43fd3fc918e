package ane4j.cli;

import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.CpuModel;
import ane4j.model.Llama2Bin;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.TextData;
import ane4j.model.Tokenizer;
import ane4j.run.MetricsLog;
import ane4j.train.PeftAdapter;
import ane4j.train.Trainer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A LoRA fine-tuning run as a user types it: {@code ane4j train --init MODEL --data train.jsonl --lora 4 …} on
 * {prompt, completion} lines, then the run's PEFT adapter with {@code export} and {@code generate --adapter}. The run's
 * validation loss is checked against an independent computation: the CPU model of the base with the exported PEFT
 * adapter fused in, cross-entropy over the completion tokens of the held-out lines only.
 */
class LoraJsonlRunTest {
    @TempDir Path dir;

    static final Path TOKENIZER = Path.of("src/test/resources/tokenizer/qwen3-4k/tokenizer.json").toAbsolutePath();

    /** {"prompt": "Question: what is 3 plus 4?", "completion": " 7."} lines, JSON-escaped by construction (digits and words only). */
    static String lines(Random r, int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            int a = r.nextInt(10), c = r.nextInt(10);
            b.append("{\"prompt\": \"Question: what is ").append(a).append(" plus ").append(c).append("?\", \"completion\": \" ").append(a + c).append(".\"}\n");
        }
        return b.toString();
    }

    @Test
    void promptCompletionLoraRunThroughTheCli() throws Exception {
        Random r = new Random(5);
        Path train = Files.writeString(dir.resolve("train.jsonl"), lines(r, 80)), val = Files.writeString(dir.resolve("val.jsonl"), lines(r, 12));
        ModelConfig c = ModelConfig.llama("qa", 64, 128, 2, 2, 4352, 32);
        Path base = dir.resolve("base.bin"), run = dir.resolve("run");
        Llama2Bin.write(base, Parameters.init(c, 3));

        var t = ExportCommandTest.run("train", "--init", base.toString(), "--data", train.toString(), "--val-data", val.toString(), "--tokenizer", TOKENIZER.toString(),
                "--lora", "4", "--lora-targets", "q,v,o,w2", "--steps", "30", "--lr", "2e-2", "--warmup", "2", "--storage", "fp32",
                "--eval-every", "30", "--eval-tokens", "96", "--run-dir", run.toString(), "--in-process");
        assertEquals(0, t.code(), t.err() + t.out());
        assertTrue(t.out().contains("LoRA adapter (PEFT layout): " + run.resolve("adapter")), t.out());
        List<?> history = MetricsLog.read(run.resolve("metrics.jsonl"), 30, w -> { throw new AssertionError(w); });
        float valLoss = ((StepMetrics) history.getLast()).valLoss();

        // independent: the base + the exported PEFT adapter on the CPU, over the 3 held-out windows of 32 (eval-tokens 96)
        Parameters baseParams = Llama2Bin.read(base);
        Parameters fused = PeftAdapter.read(run.resolve("adapter"), c).fused(baseParams);
        int[] ids;
        byte[] mask;
        try (TextData d = TextData.open(val, Tokenizer.read(TOKENIZER), c.vocabSize(), c.seqLen())) {
            ids = new int[(int) d.size()];
            mask = new byte[ids.length];
            d.read(0, ids, 0, ids.length);
            d.readMask(0, mask, 0, ids.length);
        }
        double[] completionOnly = crossEntropy(fused, ids, mask, 3, true), everyToken = crossEntropy(fused, ids, mask, 3, false);
        assertEquals(completionOnly[0], valLoss, 1e-4, "the run's validation loss is the fused model's loss on the completions");
        assertTrue(Math.abs(everyToken[0] - completionOnly[0]) > 0.1, "the prompts' tokens would change it: " + everyToken[0] + " vs " + completionOnly[0]);
        assertTrue(completionOnly[1] > 6 && completionOnly[1] < everyToken[1] / 2, "completions are a minority of the tokens: " + completionOnly[1] + " of " + everyToken[1]);
        double before = crossEntropy(baseParams, ids, mask, 3, true)[0];
        assertTrue(valLoss < before - 0.2, "30 steps on the completions lower their held-out loss: " + before + " → " + valLoss);

        // export the base and the fused model from the run folder; generate: the run, base + its PEFT adapter, fused — one text
        Path baseOut = dir.resolve("export-base"), fusedOut = dir.resolve("export-fused");
        var e = ExportCommandTest.run("export", "--run", run.toString(), "--format", "safetensors", "--out", baseOut.toString());
        assertEquals(0, e.code(), e.err());
        e = ExportCommandTest.run("export", "--run", run.toString(), "--format", "safetensors", "--merge", "--out", fusedOut.toString());
        assertEquals(0, e.code(), e.err());
        String[] greedy = {"--prompt", "Question: what is 2 plus 5?", "--temperature", "0", "--tokens", "6", "--tokenizer", TOKENIZER.toString()};
        var fromRun = ExportCommandTest.run(cat(new String[] {"generate", "--run", run.toString()}, greedy));
        var fromAdapter = ExportCommandTest.run(cat(new String[] {"generate", "--model", baseOut.toString(), "--adapter", run.resolve("adapter").toString()}, greedy));
        var fromFused = ExportCommandTest.run(cat(new String[] {"generate", "--model", fusedOut.toString()}, greedy));
        var plain = ExportCommandTest.run(cat(new String[] {"generate", "--model", baseOut.toString()}, greedy));
        for (var g : List.of(fromRun, fromAdapter, fromFused, plain)) assertEquals(0, g.code(), g.err());
        assertTrue(fromAdapter.err().contains("+ LoRA adapter " + run.resolve("adapter") + " (rank 4, q,v,o,w2)"), fromAdapter.err());
        assertEquals(fromFused.out(), fromAdapter.out());
        assertEquals(fromFused.out(), fromRun.out());
        assertTrue(!plain.out().equals(fromAdapter.out()), "the adapter changes what the base generates: " + plain.out());
    }

    /**
     * {mean cross-entropy, targets counted} of the first {@code windows} windows of seqLen + 1 tokens (overlapping by one,
     * as validation reads them), by the CPU model; {@code completionOnly}: only targets whose mask is 1.
     */
    static double[] crossEntropy(Parameters p, int[] ids, byte[] mask, int windows, boolean completionOnly) {
        int s = p.layout().config().seqLen();
        double sum = 0;
        int counted = 0;
        for (int w = 0; w < windows; w++) {
            CpuModel m = new CpuModel(p);
            for (int pos = 0; pos < s; pos++) {
                int at = w * s + pos;
                float[] logits = m.forward(ids[at], pos);
                if (completionOnly && mask[at + 1] == 0) continue;
                double max = Double.NEGATIVE_INFINITY, z = 0;
                for (float l : logits) max = Math.max(max, l);
                for (float l : logits) z += Math.exp(l - max);
                sum += Math.log(z) + max - logits[ids[at + 1]];
                counted++;
            }
        }
        return new double[] {sum / counted, counted};
    }

    private static String[] cat(String[] a, String[] b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
