package ane4j.backend;

import ane4j.mil.DType;
import ane4j.mil.TensorType;
import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** An fp16 buffer held as floats reads back, through every method, the bits a packed fp16 buffer given the same writes does. */
class FloatHeldBufferTest {
    private static final TensorType T = TensorType.of(DType.FP16, 1, 6, 1, 50);

    /** Values across fp16's range: normal, subnormal, beyond its largest (→ ±inf), ties, NaN, ±0. */
    private static float[] values(int n, long seed) {
        Random r = new Random(seed);
        float[] v = new float[n];
        for (int i = 0; i < n; i++)
            v[i] = switch (i % 9) {
                case 0 -> (float) r.nextGaussian();
                case 1 -> (float) (r.nextGaussian() * 1e-6);                        // fp16 subnormals
                case 2 -> (float) (r.nextGaussian() * 1e5);                         // overflow to ±inf
                case 3 -> 1f + (2 * r.nextInt(1024) + 1) / 2048f;                  // exact ties between fp16 neighbours
                case 4 -> Float.NaN;
                case 5 -> -0f;
                case 6 -> 65519.99f * (r.nextBoolean() ? 1 : -1);                   // just below the rounding point to inf
                default -> Float.intBitsToFloat(r.nextInt());                       // any bit pattern
            };
        return v;
    }

    private static void assertSameValues(TensorBuffer packed, TensorBuffer held, String what) {
        assertEquals(packed.count(), held.count(), what);
        for (long i = 0; i < packed.count(); i++)
            assertEquals(Float.floatToIntBits(packed.get(i)), Float.floatToIntBits(held.get(i)), what + " element " + i);
    }

    @Test
    void everyWriteRoundsAsFp16AndEveryReadGivesTheFp16Value() {
        TensorBuffer packed = TensorBuffer.allocate(T), held = TensorBuffer.allocateFloatHeld(T);
        assertTrue(held.floatHeld());
        assertFalse(packed.floatHeld());
        assertEquals(4 * T.count(), held.byteSize());
        float[] v = values((int) T.count(), 1);
        packed.copyFrom(v);
        held.copyFrom(v);
        assertSameValues(packed, held, "copyFrom(float[])");
        for (long i = 0; i < T.count(); i += 7) { packed.set(i, v[(int) i] * 3); held.set(i, v[(int) i] * 3); }
        assertSameValues(packed, held, "set");
        float[] a = new float[(int) T.count()], b = new float[a.length];
        packed.copyTo(0, a, 0, a.length);
        held.copyTo(0, b, 0, b.length);
        for (int i = 0; i < a.length; i++) assertEquals(Float.floatToIntBits(a[i]), Float.floatToIntBits(b[i]), "copyTo " + i);
        // the raw floats are the fp16 values themselves
        for (long i = 0; i < T.count(); i++)
            assertEquals(Float.floatToIntBits(packed.get(i)), Float.floatToIntBits(held.segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, i)), "raw " + i);
        packed.fill(1e-7f);
        held.fill(1e-7f);
        assertSameValues(packed, held, "fill");
    }

    @Test
    void channelsColumnsAndCopiesBetweenBothKindsAgree() {
        float[] v = values((int) T.count(), 2), w = values(3 * 20, 3);
        TensorBuffer packed = TensorBuffer.allocate(T), held = TensorBuffer.allocateFloatHeld(T);
        packed.copyFrom(v);
        held.copyFrom(v);
        packed.writeColumns(2, 3, 10, 20, w, 0, 20);
        held.writeColumns(2, 3, 10, 20, w, 0, 20);
        assertSameValues(packed, held, "writeColumns");
        float[] ra = new float[3 * 20], rb = new float[3 * 20];
        packed.readColumns(1, 3, 5, 20, ra, 0, 20);
        held.readColumns(1, 3, 5, 20, rb, 0, 20);
        for (int i = 0; i < ra.length; i++) assertEquals(Float.floatToIntBits(ra[i]), Float.floatToIntBits(rb[i]), "readColumns " + i);
        assertTrue(held.channels(2, 3).floatHeld());
        assertSameValues(packed.channels(2, 3), held.channels(2, 3), "channels view");
        // held → packed, packed → held, held → held, fp32 → held
        TensorBuffer p2 = TensorBuffer.allocate(T), h2 = TensorBuffer.allocateFloatHeld(T), h3 = TensorBuffer.allocateFloatHeld(T);
        p2.copyFrom(held);
        h2.copyFrom(packed);
        h3.copyFrom(held);
        assertSameValues(packed, p2, "held → packed");
        assertSameValues(packed, h2, "packed → held");
        assertSameValues(packed, h3, "held → held");
        TensorBuffer f32 = TensorBuffer.allocate(TensorType.of(DType.FP32, T.shape()));
        f32.copyFrom(v);
        h2.copyFrom(f32);
        p2.copyFrom(f32);
        assertSameValues(p2, h2, "fp32 → held");
        h2.copyChannels(packed, 0, 3, 2);
        p2.copyChannels(packed, 0, 3, 2);
        assertSameValues(p2, h2, "copyChannels");
        h2.copyColumns(held, 0, 30, 15);
        p2.copyColumns(packed, 0, 30, 15);
        assertSameValues(p2, h2, "copyColumns");
        TensorBuffer raw = held.packed();
        assertFalse(raw.floatHeld());
        assertSameValues(packed, raw, "packed()");
        assertSame(packed, packed.packed());
    }

    @Test
    void onlyFp16CanBeHeldAsFloats() {
        var e = assertThrows(IllegalArgumentException.class, () -> TensorBuffer.allocateFloatHeld(TensorType.of(DType.FP32, 4)));
        assertTrue(e.getMessage().startsWith("[tensor] "), e.getMessage());
    }
}
