package ane4j.blas;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static ane4j.blas.Layout.COL_MAJOR;
import static ane4j.blas.Layout.ROW_MAJOR;
import static ane4j.blas.Transpose.NO;
import static ane4j.blas.Transpose.YES;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Bad arguments are rejected with one-line messages, before any native call. */
class SgemmArgumentsTest {

    static String error(Executable call) {
        return assertThrows(IllegalArgumentException.class, call).getMessage();
    }

    static java.util.stream.Stream<Sgemm> implementations() { return SgemmTest.implementations(); }

    @ParameterizedTest
    @MethodSource("implementations")
    void leadingDimensionTooSmall(Sgemm s) {
        float[] a = new float[100], b = new float[100], c = new float[100];
        assertEquals("[sgemm] lda 3 < K 4 for row-major A; pass lda >= 4",
                error(() -> s.sgemm(ROW_MAJOR, NO, NO, 2, 2, 4, 1f, a, 0, 3, b, 0, 2, 0f, c, 0, 2)));
        assertEquals("[sgemm] lda 3 < M 5 for row-major Aᵀ (stored K×M); pass lda >= 5",
                error(() -> s.sgemm(ROW_MAJOR, YES, NO, 5, 2, 4, 1f, a, 0, 3, b, 0, 2, 0f, c, 0, 2)));
        assertEquals("[sgemm] ldb 1 < K 4 for column-major B; pass ldb >= 4",
                error(() -> s.sgemm(COL_MAJOR, NO, NO, 2, 2, 4, 1f, a, 0, 2, b, 0, 1, 0f, c, 0, 2)));
        assertEquals("[sgemm] ldc 2 < N 3 for row-major C; pass ldc >= 3",
                error(() -> s.sgemm(ROW_MAJOR, NO, NO, 2, 3, 4, 1f, a, 0, 4, b, 0, 3, 0f, c, 0, 2)));
    }

    @ParameterizedTest
    @MethodSource("implementations")
    void negativeDimensions(Sgemm s) {
        float[] x = new float[16];
        assertEquals("[sgemm] negative dimension (M -1, N 2, K 2); dimensions must be >= 0",
                error(() -> s.sgemm(ROW_MAJOR, NO, NO, -1, 2, 2, 1f, x, 0, 2, x, 0, 2, 0f, x, 0, 2)));
    }

    @ParameterizedTest
    @MethodSource("implementations")
    void segmentTooSmall(Sgemm s) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(4L * 11), b = arena.allocate(4L * 64), c = arena.allocate(4L * 64);
            // A is 3×4 row-major with lda 4 from offset 0: needs 12 floats, has 11
            assertEquals("[sgemm] A needs 12 floats (offset 0, 3×4 row-major, lda 4) but its segment holds 11;"
                            + " pass a larger segment or fix the offset/lda",
                    error(() -> s.sgemm(ROW_MAJOR, NO, NO, 3, 2, 4, 1f, a, 0, 4, b, 0, 2, 0f, c, 0, 2)));
            // C 4×4 column-major, ldc 6, offset 50: needs 50 + 3*6 + 4 = 72 > 64
            assertEquals("[sgemm] C needs 72 floats (offset 50, 4×4 column-major, ldc 6) but its segment holds 64;"
                            + " pass a larger segment or fix the offset/ldc",
                    error(() -> s.sgemm(COL_MAJOR, NO, NO, 4, 4, 2, 1f, b, 0, 4, b, 0, 2, 0f, c, 50, 6)));
        }
        float[] small = new float[5], big = new float[64];
        error(() -> s.sgemm(ROW_MAJOR, NO, NO, 2, 2, 3, 1f, small, 0, 3, big, 0, 2, 0f, big, 0, 2));
        error(() -> s.sgemm(ROW_MAJOR, NO, NO, 2, 2, 2, 1f, big, -1, 2, big, 0, 2, 0f, big, 0, 2));
    }

    @Test
    void nullArgumentsNameTheOperand() {
        Sgemm s = Blas.javaScalar();
        float[] x = new float[4];
        assertEquals("[sgemm] B is null; pass an array",
                error(() -> s.sgemm(ROW_MAJOR, NO, NO, 1, 1, 1, 1f, x, 0, 1, (float[]) null, 0, 1, 0f, x, 0, 1)));
        assertEquals("[sgemm] layout is null; pass Layout.ROW_MAJOR or COL_MAJOR",
                error(() -> s.sgemm(null, NO, NO, 1, 1, 1, 1f, x, 0, 1, x, 0, 1, 0f, x, 0, 1)));
    }

    @Test
    void emptyProductsNeedNoStorage() {
        for (Sgemm s : implementations().toList()) {
            float[] none = new float[0];
            s.sgemm(ROW_MAJOR, NO, NO, 0, 5, 3, 1f, none, 0, 3, new float[15], 0, 5, 0f, none, 0, 5);
            s.sgemm(COL_MAJOR, YES, YES, 4, 0, 3, 1f, new float[12], 0, 3, none, 0, 1, 0f, none, 0, 4);
        }
    }
}
