package ane4j.backend.ref;

import ane4j.backend.BackendException;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.chip.Chip;
import ane4j.chip.ChipRuleException;
import ane4j.chip.ChipRules;
import ane4j.mil.DType;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/** {@code -Dane4j.ref.chip}: the reference backend refuses what the chip refuses and applies its fp16 cliffs. */
class RefChipEmulationTest {
    static RefBackend ref(Chip chip) { return new RefBackend(RefBackend.Options.ANE_LIKE.withChip(chip)); }

    static float[] run(RefBackend b, Program p, float... x) {
        try (Kernel k = b.compile(p)) {
            TensorType t = k.inputs().get(0).type();
            return k.evaluate(Map.of("x", TensorBuffer.of(t, x))).get("y").toFloatArray();
        }
    }

    /** ANEForge #115's probe: a row of K equal values times a column of ones (sum K·v; 32000 exact, 33280 inf at K=64). */
    static Program rowTimesOnes(int k) {
        return Mil.program().function("main", f -> {
            Value x = f.input("x", TensorType.of(DType.FP16, 1, 1, 1, k));
            float[] ones = new float[k * 2];
            Arrays.fill(ones, 1f);
            f.output(f.named("y", f.matmul(x, f.weight("w", TensorType.of(DType.FP16, 1, 1, k, 2), ones))));
        }).build();
    }

    static float[] row(int k, float v) { float[] a = new float[k]; Arrays.fill(a, v); return a; }

    @Test
    void matmulOutputsAbove32752BecomeInfOnEveryChipProfile() {
        for (Chip chip : Chip.values()) {
            assertArrayEquals(new float[] {32000f, 32000f}, run(ref(chip), rowTimesOnes(32), row(32, 1000f)), chip + ": 32000 stays exact");
            assertArrayEquals(new float[] {32000f, 32000f}, run(ref(chip), rowTimesOnes(64), row(64, 500f)), chip + ": 32000 stays exact");
            assertArrayEquals(new float[] {Float.POSITIVE_INFINITY, Float.POSITIVE_INFINITY}, run(ref(chip), rowTimesOnes(64), row(64, 520f)), chip + ": 33280 saturates");
            assertArrayEquals(new float[] {Float.NEGATIVE_INFINITY, Float.NEGATIVE_INFINITY}, run(ref(chip), rowTimesOnes(64), row(64, -520f)), chip + ": −33280 saturates");
        }
        // without emulation fp16 holds 33280
        assertArrayEquals(new float[] {33280f, 33280f}, run(new RefBackend(), rowTimesOnes(64), row(64, 520f)));
    }

    @Test
    void aContractionTheChipRefusesIsRefusedBeforeAnyCliff() {
        var e = assertThrows(BackendException.class, () -> ref(Chip.M1).compile(rowTimesOnes(33)));
        assertTrue(e.getMessage().startsWith("[ane] main breaks chip rule matmul-contraction-32 on M1: y "), e.getMessage());
        ref(Chip.M2).compile(rowTimesOnes(33)).close();   // measured on M1 only: a warning elsewhere
    }

    @Test
    void theSaturationEdgeIsTheRoundingMidpointAbove32752() {
        // 32752 and 32759 round to 32752 (finite); 32760 rounds (ties to even) to 32768: inf; negative side too
        Program p = Mil.program().function("main", f -> {
            Value x = f.input("x", TensorType.of(DType.FP32, 1, 1, 4, 1));
            Value one = f.weight("one", TensorType.of(DType.FP16, 1, 1, 1, 1), new float[] {1f});
            f.output(f.named("y", f.matmul(f.cast(x, DType.FP16), one)));
        }).build();
        float[] y = run(ref(Chip.M4), p, 32752f, 32759f, 32760f, -32760f);
        assertArrayEquals(new float[] {32752f, 32752f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY}, y);
    }

    /** y = x[..., 1:4] of x (1,1,1,4): a slice at width offset 1. */
    static Program widthSlice(int begin) {
        return Mil.program().function("main", f -> {
            Value x = f.input("x", TensorType.of(DType.FP16, 1, 1, 2, 4));
            f.output(f.named("y", f.mul(f.sliceBySize(x, new int[] {0, 0, 0, begin}, new int[] {1, 1, 2, 3}), 1f)));
        }).build();
    }

    @Test
    void widthOffsetSlicesClampAbove4094OnM1ToM3Only() {
        float[] x = {7f, 4094f, 4096f, -5000f, 1f, -4094f, 2f, 3f};
        float inf = Float.POSITIVE_INFINITY;
        for (Chip chip : new Chip[] {Chip.M1, Chip.M2, Chip.M3})
            assertArrayEquals(new float[] {4094f, inf, -inf, -4094f, 2f, 3f}, run(ref(chip), widthSlice(1), x), chip.toString());
        for (Chip chip : new Chip[] {Chip.M4, Chip.M5})
            assertArrayEquals(new float[] {4094f, 4096f, -5000f, -4094f, 2f, 3f}, run(ref(chip), widthSlice(1), x), chip.toString());
        // offset 0 on the width axis takes no crop-DMA: exact everywhere
        assertArrayEquals(new float[] {7f, 4094f, 4096f, 1f, -4094f, 2f}, run(ref(Chip.M1), widthSlice(0), x));
        // no emulation: exact
        assertArrayEquals(new float[] {4094f, 4096f, -5000f, -4094f, 2f, 3f}, run(new RefBackend(), widthSlice(1), x));
    }

    @Test
    void refusesWhatTheChipRefusesWithTheAneMessage() {
        Program flat = Mil.program().function("main", f -> {
            Value x = f.input("x", TensorType.of(DType.FP16, 1, 8, 256, 128));
            f.output(f.named("y", f.reshape(f.mul(f.reshape(x, 1, 8, 1, 32768), 2f), 1, 8, 256, 128)));
        }).build();
        var e = assertThrows(BackendException.class, () -> ref(Chip.M3).compile(flat));
        var direct = assertThrows(ChipRuleException.class, () -> ChipRules.requireCompatible(flat, "main", Chip.M3));
        assertEquals(direct.getMessage(), e.getMessage());
        assertTrue(e.getMessage().startsWith("[ane] main breaks chip rule axis-cap on M3: reshape_"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
        ref(Chip.M4).compile(flat).close();          // 32768 is within M4's 65536
        new RefBackend().compile(flat).close();      // no emulation, no rules
    }

    /** The SPI names the emulated chip (run.txt's chip line, the loss-scale cap's family); without one, none. */
    @Test
    void describeChipNamesTheEmulatedFamily() {
        assertEquals(new ane4j.backend.ChipDescription(Chip.M3, "M3 (emulated by the reference backend)"), ref(Chip.M3).describeChip());
        assertEquals(new ane4j.backend.ChipDescription(null, "none (reference backend, no chip emulated)"), ref(null).describeChip());
    }
}
