package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.train.Checkpoint;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 row 5: {@code ane4j train --lr 1e9} (tiny, in the supervised worker as {@code bin/ane4j} runs it) stops with
 * one line naming the learning rate as the likely cause and the fix, exits 1, and writes no checkpoint of the diverged
 * state (it used to print "gradient overflow at loss scale 512 … update skipped" 99 times and exit 0).
 */
class TrainDivergenceCliTest {
    @TempDir Path dir;

    @Test
    void aLearningRateOf1e9StopsWithADiagnosisAndExitCode1() throws Exception {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int code = Main.run(new String[] {"train", "--lr", "1e9", "--steps", "30", "--checkpoint-every", "10", "--run-dir", dir.toString(), "--backend", "ref"},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String e = err.toString(StandardCharsets.UTF_8), o = out.toString(StandardCharsets.UTF_8);
        assertEquals(1, code, o + e);
        assertEquals(1, e.strip().lines().count(), e);
        assertTrue(e.startsWith("ane4j train: [train] diverged at step 3: the loss (fp32, before any loss scaling) was not finite for 3 steps in a row; "
                + "likely cause: the learning rate 1.0E9 is too high (weights reached |w| = "), e);
        assertTrue(e.strip().endsWith("fix: lower --lr (the default is 3e-3); no checkpoint was written (none was good)"), e);
        assertFalse(o.contains("gradient overflow"), "not blamed on loss scaling: " + o);
        assertTrue(o.contains("[train] step 1: the loss is not finite (NaN, fp32, before loss scaling); update skipped"), o);
        assertFalse(o.contains("sample:"), o);
        assertEquals(List.of(), Checkpoint.list(dir.resolve("checkpoints")));
        assertEquals(4, Files.readAllLines(dir.resolve("metrics.jsonl")).size(), "steps 0–3, then the stop");
    }
}
