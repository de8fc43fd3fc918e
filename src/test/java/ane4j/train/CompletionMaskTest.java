package ane4j.train;

import ane4j.run.TrainOptions;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.model.CpuModel;
import ane4j.model.Llama2Bin;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.TextData;
import ane4j.model.Tokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Prompt/completion JSON lines train on the completion only: the trainer's loss is the cross-entropy of the completion tokens alone. */
class CompletionMaskTest {
    @TempDir Path dir;

    @Test
    void maskedTargetsBecomeIgnored() {
        int[] t = {5, 6, 7, 8};
        Trainer.maskTargets(t, new byte[]{0, 1, 0, 1});
        assertArrayEquals(new int[]{-1, 6, -1, 8}, t);
    }

    @Test
    void firstStepLossIsTheCompletionsCrossEntropy() throws Exception {
        Path tokJson = Path.of("src/test/resources/tokenizer/qwen3-4k/tokenizer.json").toAbsolutePath();
        Tokenizer tok = Tokenizer.read(tokJson);
        Path data = dir.resolve("qa.jsonl");
        Files.writeString(data, "{\"prompt\": \"Question: what is the capital of France?\", \"completion\": \" Paris.\"}\n"
                + "{\"prompt\": \"Question: and of Italy?\", \"completion\": \" Rome, of course.\"}\n");
        // one window exactly (seqLen + 1 tokens): the trainer's first window is the whole file
        int n;
        int[] ids;
        byte[] mask;
        try (TextData d = TextData.open(data, tok, 4352, 1)) {
            n = (int) d.size();
            ids = new int[n];
            mask = new byte[n];
            d.read(0, ids, 0, n);
            d.readMask(0, mask, 0, n);
        }
        ModelConfig c = ModelConfig.llama("qa", 32, 64, 1, 2, 4352, n - 1);
        Parameters init = Parameters.init(c, 11);
        Path bin = dir.resolve("qa.bin");
        Llama2Bin.write(bin, init);
        TrainOptions o = TrainOptions.of(Map.of("init", bin.toString(), "data", data.toString(), "tokenizer", tokJson.toString(), "steps", "1",
                "storage", "fp32", "runDir", dir.resolve("run").toString(), "evalEvery", "0", "valFraction", "0"));
        float loss;
        try (Trainer t = new Trainer(o, new RefBackend(), null)) {
            loss = t.run(null, 0).getFirst().loss();
        }
        // reference: the CPU model's logits, cross-entropy over the positions whose target is a completion token (or its EOS)
        CpuModel m = new CpuModel(Llama2Bin.read(bin));
        double sum = 0;
        int counted = 0;
        for (int pos = 0; pos + 1 < n; pos++) {
            float[] logits = m.forward(ids[pos], pos);
            if (mask[pos + 1] == 0) continue;
            double max = Double.NEGATIVE_INFINITY, z = 0;
            for (float l : logits) max = Math.max(max, l);
            for (float l : logits) z += Math.exp(l - max);
            sum += Math.log(z) + max - logits[ids[pos + 1]];
            counted++;
        }
        assertTrue(counted > 2 && counted < n - 3, "some targets count, the prompts' do not: " + counted + " of " + (n - 1));
        assertEquals(sum / counted, loss, 1e-4, "the trainer's loss counts the completion tokens only");
    }
}
