package ane4j.train;

import ane4j.run.TrainOptions;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The lora keys of the run key table: defaults (off, PEFT's q,v), spellings, and one-line refusals. */
class LoraOptionsTest {
    @Test
    void defaultsAreOffWithPeftsLlamaTargets() {
        TrainOptions o = TrainOptions.of(Map.of());
        assertEquals(0, o.lora());
        assertEquals(16f, o.loraAlpha());
        assertEquals("q,v", o.loraTargets());
        assertEquals(0f, o.loraDropout());
        assertTrue(o.describe().contains("lora = 0\nloraAlpha = 16.0\nloraTargets = q,v\nloraDropout = 0.0"), o.describe());
    }

    @Test
    void flagSpellingsAndTargets() {
        TrainOptions o = TrainOptions.of(Map.of("lora", "8", "lora-alpha", "32", "lora_targets", " q, K ,w2", "lora-dropout", "0.05"));
        assertEquals(8, o.lora());
        assertEquals(32f, o.loraAlpha());
        assertEquals("q,k,w2", o.loraTargets());
        assertEquals(0.05f, o.loraDropout());
    }

    @Test
    void badValuesAreOneLine() {
        assertEquals("[train] loraTargets = 'q,x': 'x' is not one of q,k,v,o,w1,w2,w3",
                assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(Map.of("loraTargets", "q,x"))).getMessage());
        assertEquals("[train] loraTargets = 'q,q': 'q' is given twice",
                assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(Map.of("loraTargets", "q,q"))).getMessage());
        assertEquals("[train] lora must be at least 0, got -1",
                assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(Map.of("lora", "-1"))).getMessage());
        assertEquals("[train] loraDropout must be below 1, got 1.0",
                assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(Map.of("loraDropout", "1"))).getMessage());
        assertEquals("[train] loraDropout = '-0.1' is not a non-negative number",
                assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(Map.of("lora-dropout", "-0.1"))).getMessage());
    }
}
