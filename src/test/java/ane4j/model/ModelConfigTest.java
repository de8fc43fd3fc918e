package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelConfigTest {
    @TempDir Path tmp;

    @Test
    void presetsHaveThePublishedShapesAndParameterCounts() {
        ModelConfig s110 = ModelConfig.parse("stories110m");
        assertEquals(109_529_856L, s110.parameterCount()); // docs/ane-facts.md §1.3
        assertEquals(64, s110.headDim());
        ModelConfig q = ModelConfig.parse("Qwen3-0.6B");
        assertEquals(2048, q.qDim());
        assertEquals(1024, q.kvDim());
        assertEquals(2, q.groupSize());
        // 596,042,752 without QK-norm (docs/ane-facts.md §1.3) + 28 layers × 2 × 128 norm weights
        assertEquals(596_042_752L + 28 * 256, q.parameterCount());
        ModelConfig s15 = ModelConfig.parse("stories15m");
        assertEquals(48, s15.headDim());
        assertEquals(15_191_712L, s15.parameterCount());
        assertEquals(RopeStyle.INTERLEAVED, s15.ropeStyle());
        assertEquals(1024, ModelConfig.parse("stories42m").seqLen());
        ModelConfig tiny = ModelConfig.parse("tiny");
        assertEquals(ModelConfig.TINY_VOCAB, tiny.vocabSize());
        assertTrue(tiny.parameterCount() < 200_000, "tiny must train in about a minute on 2 cores: " + tiny.parameterCount());
    }

    @Test
    void unknownPresetNamesTheChoices() {
        var e = assertThrows(IllegalArgumentException.class, () -> ModelConfig.parse("gpt5"));
        assertTrue(e.getMessage().startsWith("[config] unknown model 'gpt5'") && e.getMessage().contains("stories15m"), e.getMessage());
    }

    @Test
    void validationMessages() {
        var e = assertThrows(IllegalArgumentException.class, () -> new ModelConfig("m", 64, 128, 2, 6, 4, 16, 100, 32,
                1e4f, RopeStyle.HALF, false, true, 1e-5f, 1f));
        assertTrue(e.getMessage().contains("nHeads 6 is not a multiple of nKvHeads 4"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new ModelConfig("m", 64, 128, 2, 4, 4, 15, 100, 32,
                1e4f, RopeStyle.HALF, false, true, 1e-5f, 1f));
        assertTrue(e.getMessage().contains("headDim 15 is odd"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ModelConfig.parse("tiny").withSeqLen(0));
        assertTrue(e.getMessage().contains("seqLen must be positive, got 0"), e.getMessage());
    }

    @Test
    void loadsAFileWithDefaultsAndPresets() throws IOException {
        Path f = tmp.resolve("my-model.cfg");
        Files.writeString(f, """
                # a small model
                dim = 128
                hiddenDim = 384
                nLayers = 3
                nHeads = 4   # MHA
                vocabSize = 1_000
                seqLen = 128
                """);
        ModelConfig c = ModelConfig.load(f);
        assertEquals("my-model", c.name());
        assertEquals(32, c.headDim());
        assertEquals(4, c.nKvHeads());
        assertEquals(1000, c.vocabSize());
        assertEquals(ModelConfig.load(writeText("again.cfg", c.toFileText())), c.withName("my-model"));

        Path p = writeText("q.cfg", "preset = qwen3-0.6b\nnLayers = 2\nvocabSize = 512\n");
        ModelConfig q = ModelConfig.load(p);
        assertEquals(128, q.headDim());
        assertEquals(8, q.nKvHeads());
        assertTrue(q.qkNorm());
        assertEquals(2, q.nLayers());
    }

    private Path writeText(String name, String text) throws IOException {
        return Files.writeString(tmp.resolve(name), text);
    }

    @Test
    void fileErrorsNameTheKeyAndLine() throws IOException {
        Path f = writeText("bad.cfg", "dim = 64\nhiddenDims = 10\n");
        var e = assertThrows(ModelFormatException.class, () -> ModelConfig.load(f));
        assertTrue(e.getMessage().startsWith("[config] " + f + ":2: unknown key 'hiddenDims'"), e.getMessage());

        Path g = writeText("missing.cfg", "dim = 64\nhiddenDim = 128\nnLayers = 2\nnHeads = 4\nseqLen = 8\n");
        e = assertThrows(ModelFormatException.class, () -> ModelConfig.load(g));
        assertTrue(e.getMessage().contains("missing key 'vocabSize'"), e.getMessage());

        Path h = writeText("heads.cfg", "dim = 100\nhiddenDim = 128\nnLayers = 2\nnHeads = 3\nvocabSize = 9\nseqLen = 8\n");
        e = assertThrows(ModelFormatException.class, () -> ModelConfig.load(h));
        assertTrue(e.getMessage().contains(h + ":4: dim 100 is not divisible by nHeads 3; set headDim"), e.getMessage());

        Path k = writeText("kv.cfg", "dim = 64\nhiddenDim = 128\nnLayers = 2\nnHeads = 4\nnKvHeads = 3\nvocabSize = 9\nseqLen = 8\n");
        e = assertThrows(ModelFormatException.class, () -> ModelConfig.load(k));
        assertTrue(e.getMessage().contains("nHeads 4 is not a multiple of nKvHeads 3") && e.getMessage().contains(k.toString()), e.getMessage());

        Path n = writeText("num.cfg", "preset = tiny\nseqLen = lots\n");
        e = assertThrows(ModelFormatException.class, () -> ModelConfig.load(n));
        assertTrue(e.getMessage().contains(n + ":2: seqLen = 'lots' is not an integer"), e.getMessage());

        Path r = writeText("rep.cfg", "preset = tiny\ndim = 32\ndim = 64\n");
        e = assertThrows(ModelFormatException.class, () -> ModelConfig.load(r));
        assertTrue(e.getMessage().contains(":3: key 'dim' repeated (first on line 2)"), e.getMessage());
    }

    // issue 18 row 15: a sequence length whose attention scores cannot be one tensor is refused by the config, before any allocation
    @Test
    void seqLenWhoseAttentionScoresCannotBeATensorIsRefused() throws Exception {
        Path f = writeText("long.cfg", "preset = stories15m\nseqLen = 100000\n");
        var e = assertThrows(ModelFormatException.class, () -> ModelConfig.load(f));
        assertTrue(e.getMessage().matches("\\[config\\] .*long\\.cfg: seqLen 100000 with 6 heads makes attention scores \\[1, 6, 100000, 100000\\] of 60000000000 elements, over 2\\^31-1; use seqLen ≤ 18918"), e.getMessage());
        assertEquals(18918, ModelConfig.parse("stories15m").withSeqLen(18918).seqLen());
    }
}
