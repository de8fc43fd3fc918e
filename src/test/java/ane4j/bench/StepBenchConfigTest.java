package ane4j.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.ModelConfig;
import org.junit.jupiter.api.Test;

/** {@code bench step} takes the model settings {@code ane4j train} takes, over --model's preset, with the same derived defaults. */
class StepBenchConfigTest {
    @Test
    void modelSettingsOverThePreset() {
        ModelConfig c = StepBench.config(BenchOptions.parse("step", new String[] {"--model", "stories15m", "--dim", "128", "--n-heads", "4", "--n-layers", "2", "--seq-len", "64"}));
        assertEquals(128, c.dim());
        assertEquals(352, c.hiddenDim(), "llama2.c's rule from dim, as train derives it");
        assertEquals(2, c.nLayers());
        assertEquals(4, c.nHeads());
        assertEquals(64, c.seqLen());
        assertEquals(32000, c.vocabSize(), "the rest from the preset");
    }

    @Test
    void badModelSettingsAreOneLine() {
        var e = assertThrows(IllegalArgumentException.class, () -> StepBench.config(BenchOptions.parse("step", new String[] {"--model", "tiny", "--n-layers", "0"})));
        assertTrue(e.getMessage().startsWith("[bench] ") && !e.getMessage().contains("\n"), e.getMessage());
        var a = assertThrows(IllegalArgumentException.class, () -> StepBench.lora(BenchOptions.parse("step", new String[] {"--lora", "8", "--lora-alpha", "-1"}), ModelConfig.parse("tiny")));
        assertEquals("[bench] loraAlpha = '-1' is not a non-negative number", a.getMessage(), "as train says it");
        var u = assertThrows(IllegalArgumentException.class, () -> BenchOptions.parse("sgemm", new String[] {"--dim", "128"}));
        assertTrue(u.getMessage().contains("dim"), u.getMessage());
    }
}
