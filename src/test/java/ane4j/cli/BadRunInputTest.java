package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.Llama2Bin;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.TokenShard;
import ane4j.model.Tokenizer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 14 point 6: small bad (or merely unusual) inputs of {@code ane4j train}, each one line naming the problem and the fix. */
class BadRunInputTest {
    @TempDir Path tmp;

    private static final ModelConfig MINI = ModelConfig.llama("mini", 48, 96, 2, 4, 100, 16);

    private Path miniBin() {
        Path bin = tmp.resolve("mini.bin");
        Llama2Bin.write(bin, Parameters.init(MINI, 3));
        return bin;
    }

    private Path tokens(int n) {
        Path shard = tmp.resolve("tokens.bin");
        int[] t = new int[n];
        for (int i = 0; i < n; i++) t[i] = (i * 37 + 11) % MINI.vocabSize();
        TokenShard.write(shard, t);
        return shard;
    }

    private static boolean oneLine(String s) { return s.strip().lines().count() == 1; }

    /** A token file of exactly seq+1 tokens is one training window: it trains (it used to fail with "[rng] bound must be positive, got 0"). */
    @Test
    void oneWindowTokenFileTrains() {
        var r = RunFolderTest.train("--init", miniBin().toString(), "--data", tokens(MINI.seqLen() + 1).toString(), "--steps", "3",
                "--run-dir", tmp.resolve("run").toString(), "--backend", "ref", "--in-process");
        assertEquals(0, r.code(), r.all());
        assertFalse(r.all().contains("[rng]"), r.all());
        assertTrue(Files.exists(tmp.resolve("run/metrics.jsonl")));
    }

    /** A tokenizer.bin next to --data with fewer tokens than the model's vocabulary is refused before step 0, in one line. */
    @Test
    void smallerTokenizerBesideDataIsRefusedBeforeTraining() {
        Path data = tokens(200);
        List<byte[]> pieces = new ArrayList<>();
        for (int i = 0; i < 50; i++) pieces.add(("p" + i).getBytes(StandardCharsets.UTF_8));
        new Tokenizer(pieces, new float[50]).write(data.resolveSibling("tokenizer.bin"));
        Path run = tmp.resolve("run");
        for (String mode : new String[] {"--in-process", "--heap"}) {
            String[] args = mode.equals("--in-process")
                    ? new String[] {"--init", miniBin().toString(), "--data", data.toString(), "--steps", "3", "--run-dir", run.toString(), "--backend", "ref", mode}
                    : new String[] {"--init", miniBin().toString(), "--data", data.toString(), "--steps", "3", "--run-dir", run.toString(), "--backend", "ref", mode, "256m"};
            var r = RunFolderTest.train(args);
            assertEquals(1, r.code(), r.all());
            assertTrue(r.err().contains("[tokenizer] ") && r.err().contains("vocabulary of 50 tokens is smaller than model mini's 100")
                    && r.err().contains("the data's ids reach 99"), r.err());
            assertTrue(oneLine(r.err()), r.err());
            assertFalse(r.out().contains("step 0"), r.out());
            assertFalse(Files.exists(run.resolve("metrics.jsonl")) && !readOrEmpty(run.resolve("metrics.jsonl")).isBlank(), "no step ran");
        }
    }

    private static String readOrEmpty(Path p) {
        try { return Files.readString(p); } catch (java.io.IOException e) { return ""; }
    }
}
