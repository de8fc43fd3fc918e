package ane4j.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.ModelConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reading a checkpoint for its weights only (export, generate, the notebook, the launcher after a worker run) skips the
 * AdamW moments, two thirds of the file (4.77 of qwen3-0.6b's 7.15 GB), and still verifies what it returns.
 */
class CheckpointWeightsTest {
    @TempDir Path dir;

    private static final ModelConfig C = ModelConfig.llama("w", 16, 32, 1, 2, 32, 8);
    private static final int N = (int) C.parameterCount();

    private float[] p, m, v;

    private Path saved(int step) {
        Random r = new Random(step);
        p = new float[N]; m = new float[N]; v = new float[N];
        for (int i = 0; i < N; i++) { p[i] = r.nextFloat(); m[i] = r.nextFloat(); v[i] = r.nextFloat(); }
        return Checkpoint.save(dir, new Checkpoint.Contents(new TrainState(C, "id", step, step, 7L, 512f, 0, 3f), p, m, v), 5);
    }

    /** Byte offset of the payload of section {@code index} (0 = state) in a 4-section checkpoint. */
    private static long payloadOf(Path f, int index) throws java.io.IOException {
        var b = java.nio.ByteBuffer.wrap(Files.readAllBytes(f)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        long at = 16;
        for (int i = 0; i < index; i++) at += 16 + b.getLong((int) at + 4);
        return at + 16;
    }

    private static void flip(Path f, long at) throws java.io.IOException {
        byte[] b = Files.readAllBytes(f);
        b[(int) at] ^= 0x40;
        Files.write(f, b);
    }

    @Test
    void weightsWithoutMomentsAreTheSavedWeights() {
        Path f = saved(3);
        Checkpoint.Contents w = Checkpoint.loadWeights(f);
        assertArrayEquals(p, w.params());
        assertNull(w.m());
        assertNull(w.v());
        assertEquals(3, w.state().step());
        Checkpoint.Contents full = Checkpoint.load(f);
        assertArrayEquals(m, full.m());
        assertArrayEquals(v, full.v());
    }

    @Test
    void corruptMomentsFailAResumeButNotAnExport() throws Exception {
        Path older = saved(1), f = saved(2);
        flip(f, payloadOf(f, 2) + 5);   // inside ADAM_M
        var e = assertThrows(CheckpointFormatException.class, () -> Checkpoint.load(f));
        assertTrue(e.getMessage().contains("section 3 fails its checksum"), e.getMessage());
        assertArrayEquals(p, Checkpoint.loadWeights(f).params());
        assertEquals(older, Checkpoint.findNewest(dir).file(), "a resume takes the previous checkpoint");
        assertEquals(f, Checkpoint.findNewestWeights(dir).file(), "the weights of the newest are intact");
    }

    @Test
    void corruptOrTruncatedWeightsFailBothInOneLine() throws Exception {
        Path f = saved(4);
        byte[] good = Files.readAllBytes(f);
        flip(f, payloadOf(f, 1) + 9);   // inside PARAMS
        var e = assertThrows(CheckpointFormatException.class, () -> Checkpoint.loadWeights(f));
        assertTrue(e.getMessage().contains("section 2 fails its checksum") && e.getMessage().lines().count() == 1, e.getMessage());
        Files.write(f, Arrays.copyOf(good, good.length - 10));   // the end of ADAM_V missing
        e = assertThrows(CheckpointFormatException.class, () -> Checkpoint.loadWeights(f));
        assertTrue(e.getMessage().contains("truncated"), e.getMessage());
    }
}
