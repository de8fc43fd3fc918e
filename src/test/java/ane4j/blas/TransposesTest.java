package ane4j.blas;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link Transposes#copy}: b = aᵀ element by element (OpenBLAS's omatcopy where it runs, else Java), and bad arguments refused. */
class TransposesTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    @Test
    void everyElementLandsWhereTheTransposeSaysAndNothingElseIsTouched() {
        SplittableRandom r = new SplittableRandom(7);
        // rows × cols, extra source stride, source offset, extra destination stride, destination offset
        int[][] cases = {{1, 1, 0, 0, 0, 0}, {3, 5, 2, 1, 4, 3}, {64, 64, 0, 0, 0, 0}, {65, 130, 3, 7, 11, 5},
                {768, 64, 704, 0, 256, 256}, {2048, 64, 704, 64, 3072, 100}, {7, 300, 0, 2, 1, 9}};
        for (int[] c : cases) {
            int rows = c[0], cols = c[1], lda = cols + c[2], aOff = c[3], ldb = rows + c[4];
            long bOff = c[5];
            float[] a = new float[aOff + rows * lda];
            for (int i = 0; i < a.length; i++) a[i] = (float) r.nextGaussian();
            a[aOff] = Float.NaN;
            if (a.length > aOff + 1) a[aOff + 1] = -0f;
            long floats = bOff + (long) cols * ldb + 3;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment b = arena.allocate(4 * floats), j = arena.allocate(4 * floats);
                b.fill((byte) 0x55);
                j.fill((byte) 0x55);
                Transposes.copy(a, aOff, rows, cols, lda, b, bOff, ldb);
                Transposes.copyJava(MemorySegment.ofArray(a), aOff, rows, cols, lda, j, bOff, ldb);
                String what = rows + "×" + cols + " lda " + lda + " ldb " + ldb + " (" + Transposes.implementation() + ")";
                for (long k = 0; k < floats; k++) {
                    long rel = k - bOff, row = rel / ldb, col = rel % ldb;
                    boolean inside = rel >= 0 && row < cols && col < rows;
                    if (inside) assertEquals(a[(int) (aOff + col * lda + row)], b.getAtIndex(F, k), what + " at " + k);
                    else assertEquals(0x55555555, Float.floatToRawIntBits(b.getAtIndex(F, k)), what + ": wrote outside at " + k);
                    assertEquals(Float.floatToIntBits(b.getAtIndex(F, k)), Float.floatToIntBits(j.getAtIndex(F, k)), what + ": native ≠ Java at " + k);
                }
                if (cols > 1) assertEquals(Float.floatToRawIntBits(-0f), Float.floatToRawIntBits(b.getAtIndex(F, bOff + ldb)), what + ": −0 kept");
            }
        }
    }

    @Test
    void aSourceWhoseRowsOverlapIsReadAsItsStridesSay() {
        // lda 3 < 8 columns: row i starts 3 floats after row i−1 (the interpreter's views can read that way); lda 0: one row
        float[] a = new float[40];
        for (int i = 0; i < a.length; i++) a[i] = i;
        for (int lda : new int[] {3, 0})
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment b = arena.allocate(4 * 8 * 5);
                Transposes.copy(MemorySegment.ofArray(a), 1, 5, 8, lda, b, 0, 5);
                for (int j = 0; j < 8; j++)
                    for (int i = 0; i < 5; i++) assertEquals(a[1 + i * lda + j], b.getAtIndex(F, j * 5L + i), "lda " + lda + " (" + i + ", " + j + ")");
            }
    }

    @Test
    void badArgumentsAreRefusedInOneLineBeforeAnyWrite() {
        float[] a = new float[12];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment b = arena.allocate(4 * 12);
            String[] messages = {
                    assertThrows(IllegalArgumentException.class, () -> Transposes.copy(a, 0, 3, 4, 4, b, 0, 2)).getMessage(),
                    assertThrows(IllegalArgumentException.class, () -> Transposes.copy(a, 1, 3, 4, 4, b, 0, 3)).getMessage(),
                    assertThrows(IllegalArgumentException.class, () -> Transposes.copy(a, 0, 3, 4, 4, b, 1, 3)).getMessage(),
                    assertThrows(IllegalArgumentException.class, () -> Transposes.copy(a, 0, -1, 4, 4, b, 0, 3)).getMessage(),
                    assertThrows(IllegalArgumentException.class, () -> Transposes.copy((float[]) null, 0, 3, 4, 4, b, 0, 3)).getMessage()};
            for (String m : messages) {
                assertTrue(m.startsWith("[transpose] "), m);
                assertTrue(!m.contains("\n"), m);
            }
            Transposes.copy(a, 0, 3, 4, 4, b, 0, 3);   // the exact fit is accepted
            Transposes.copy(a, 0, 0, 4, 4, b, 0, 1);   // and an empty matrix does nothing
        }
    }
}
