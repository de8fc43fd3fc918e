package ane4j.train;

import ane4j.run.TrainOptions;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.golden.GoldenSafetensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** LoRA dropout's counter-based masks: the same bits as tools/gen_lora_golden.py draws, the keep rate, independent streams. */
class LoraDropoutTest {
    @ParameterizedTest
    @ValueSource(strings = {"llama_drop", "qwen3_drop"})
    void masksAreBitForBitThoseOfThePyTorchGolden(String name) {
        GoldenSafetensors g = GoldenSafetensors.load("golden/lora/" + name + ".safetensors");
        LoraDropout d = new LoraDropout(Float.parseFloat(g.metadata().get("dropout")), Long.parseLong(g.metadata().get("dropoutSeed")));
        int[] want = g.i32("maskCheck");                 // (sequence 3, layer 1, target w2): (hiddenDim, S) channel-first
        long[] bits = new long[(want.length + 63) / 64];
        d.mask(d.key(3, 1, TrainOptions.LORA_TARGETS.indexOf("w2")), bits, want.length);
        int dropped = 0;
        for (int e = 0; e < want.length; e++) {
            assertEquals(want[e], (int) (bits[e >>> 6] >>> (e & 63) & 1), name + " element " + e);
            dropped += 1 - want[e];
        }
        assertTrue(dropped > 0 && dropped < want.length, dropped + " of " + want.length + " dropped");
    }

    @Test
    void keepsOneMinusPScaledAndStreamsAreIndependent() {
        LoraDropout d = new LoraDropout(0.1f, 42);
        int n = 1 << 20;
        long[] a = new long[n / 64], b = new long[n / 64], again = new long[n / 64];
        d.mask(d.key(7, 2, 0), a, n);
        d.mask(d.key(7, 2, 0), again, n);
        d.mask(d.key(7, 2, 1), b, n);
        long kept = 0, both = 0;
        for (int i = 0; i < a.length; i++) { kept += Long.bitCount(a[i]); both += Long.bitCount(a[i] & b[i]); }
        assertEquals(0.9, kept / (double) n, 0.002, "keep rate");
        assertEquals(0.81, both / (double) n, 0.002, "two targets' masks are independent");
        assertEquals(java.util.Arrays.toString(a), java.util.Arrays.toString(again), "a pure function of (seed, sequence, layer, target)");
        assertNotEquals(d.key(7, 2, 0), d.key(8, 2, 0));
        assertNotEquals(d.key(7, 2, 0), new LoraDropout(0.1f, 43).key(7, 2, 0));
        float[] x = {1f, 2f, 3f, 4f}, y = new float[4];
        long[] m = {0b1011L};
        d.apply(x, m, y, 4);
        float k = d.keepScale();
        assertEquals(1f / (1f - 0.1f), k);
        assertEquals(java.util.Arrays.toString(new float[] {1f * k, 2f * k, 0f, 4f * k}), java.util.Arrays.toString(y));
        assertEquals("[lora] dropout 1.0 must be in [0, 1)", assertThrows(IllegalArgumentException.class, () -> new LoraDropout(1f, 0)).getMessage());
    }
}
