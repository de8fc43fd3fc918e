package ane4j.blas;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Single-precision GEMM: {@code C = alpha * op(A) * op(B) + beta * C}, where op(A) is M×K, op(B) is K×N and C is
 * M×N, with the CBLAS conventions (layout, transposes, leading dimensions). Offsets and leading dimensions are
 * counted in floats. With {@code beta == 0} the old contents of C are ignored (NaN in C does not propagate).
 *
 * <p>Every argument is checked before any work (and before any native call); a bad one throws an
 * {@link IllegalArgumentException} with a one-line {@code [sgemm] …} message.
 *
 * <p>Instances come from {@link Blas}: {@link Blas#get()} for the selected implementation, or a specific one.
 */
public abstract sealed class Sgemm permits NativeSgemm, JavaSgemm, RoutedSgemm {

    Sgemm() {}

    /** A short name: {@code openblas}, {@code accelerate}, {@code java-vector} or {@code java-scalar}. */
    public abstract String name();

    /** Threads this implementation uses for a large product (0 if unknown). */
    public abstract int threads();

    /** One line describing the implementation (library path, version, threads). */
    public abstract String description();

    @Override
    public String toString() { return description(); }

    /** GEMM over memory segments; offsets and leading dimensions in floats. */
    public final void sgemm(Layout layout, Transpose transA, Transpose transB, int m, int n, int k,
                            float alpha, MemorySegment a, long aOffset, int lda,
                            MemorySegment b, long bOffset, int ldb,
                            float beta, MemorySegment c, long cOffset, int ldc) {
        check(layout, transA, transB, m, n, k, a, aOffset, lda, b, bOffset, ldb, c, cOffset, ldc);
        if (m == 0 || n == 0) return;
        compute(layout, transA, transB, m, n, k, alpha, a, aOffset, lda, b, bOffset, ldb, beta, c, cOffset, ldc);
    }

    /** GEMM over heap arrays; offsets and leading dimensions in floats. */
    public final void sgemm(Layout layout, Transpose transA, Transpose transB, int m, int n, int k,
                            float alpha, float[] a, int aOffset, int lda,
                            float[] b, int bOffset, int ldb,
                            float beta, float[] c, int cOffset, int ldc) {
        if (a == null || b == null || c == null) throw new IllegalArgumentException(
                "[sgemm] " + (a == null ? "A" : b == null ? "B" : "C") + " is null; pass an array");
        sgemm(layout, transA, transB, m, n, k, alpha,
                MemorySegment.ofArray(a), aOffset, lda, MemorySegment.ofArray(b), bOffset, ldb,
                beta, MemorySegment.ofArray(c), cOffset, ldc);
    }

    /** Dense row-major {@code C[m×n] = A[m×k] · B[k×n]}. */
    public final void matmul(float[] a, float[] b, float[] c, int m, int n, int k) {
        sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, m, n, k, 1f,
                a, 0, Math.max(1, k), b, 0, Math.max(1, n), 0f, c, 0, Math.max(1, n));
    }

    /** Does the work; arguments are already checked and M, N are positive. */
    abstract void compute(Layout layout, Transpose transA, Transpose transB, int m, int n, int k,
                          float alpha, MemorySegment a, long aOffset, int lda,
                          MemorySegment b, long bOffset, int ldb,
                          float beta, MemorySegment c, long cOffset, int ldc);

    // ---------------------------------------------------------------------------------------------------------------
    // argument checks

    static void check(Layout layout, Transpose transA, Transpose transB, int m, int n, int k,
                      MemorySegment a, long aOffset, int lda, MemorySegment b, long bOffset, int ldb,
                      MemorySegment c, long cOffset, int ldc) {
        if (layout == null) throw new IllegalArgumentException("[sgemm] layout is null; pass Layout.ROW_MAJOR or COL_MAJOR");
        if (transA == null || transB == null) throw new IllegalArgumentException(
                "[sgemm] trans" + (transA == null ? "A" : "B") + " is null; pass Transpose.NO or YES");
        if (m < 0 || n < 0 || k < 0) throw new IllegalArgumentException(
                "[sgemm] negative dimension (M " + m + ", N " + n + ", K " + k + "); dimensions must be >= 0");
        if (a == null || b == null || c == null) throw new IllegalArgumentException(
                "[sgemm] segment " + (a == null ? "A" : b == null ? "B" : "C") + " is null; pass a MemorySegment");
        // stored shapes: A is M×K (or K×M when transposed), B is K×N (or N×K), C is M×N
        boolean ta = transA == Transpose.YES, tb = transB == Transpose.YES;
        checkOperand(layout, "A", ta, ta ? k : m, ta ? m : k, ta ? "K" : "M", ta ? "M" : "K", a, aOffset, lda, "lda", m == 0 || k == 0);
        checkOperand(layout, "B", tb, tb ? n : k, tb ? k : n, tb ? "N" : "K", tb ? "K" : "N", b, bOffset, ldb, "ldb", k == 0 || n == 0);
        checkOperand(layout, "C", false, m, n, "M", "N", c, cOffset, ldc, "ldc", m == 0 || n == 0);
    }

    /** Checks one stored {@code rows × cols} operand: its leading dimension and that the segment covers it. */
    private static void checkOperand(Layout layout, String name, boolean transposed, int rows, int cols,
                                     String rowsName, String colsName, MemorySegment seg, long offset, int ld,
                                     String ldName, boolean empty) {
        String what = layout.label() + " " + name + (transposed ? "ᵀ (stored " + rowsName + "×" + colsName + ")" : "");
        boolean rowMajor = layout == Layout.ROW_MAJOR;
        int minLd = Math.max(1, rowMajor ? cols : rows);
        String minName = rowMajor ? colsName : rowsName;
        if (ld < minLd) throw new IllegalArgumentException("[sgemm] " + ldName + " " + ld + " < " + minName + " "
                + minLd + " for " + what + "; pass " + ldName + " >= " + minLd);
        if (offset < 0) throw new IllegalArgumentException("[sgemm] negative offset " + offset + " for " + name
                + "; offsets count floats from the start of the segment");
        if (empty) return;
        long outer = rowMajor ? rows : cols, inner = rowMajor ? cols : rows;
        long need = offset + (outer - 1) * (long) ld + inner;
        long have = seg.byteSize() / Float.BYTES;
        if (need > have) throw new IllegalArgumentException("[sgemm] " + name + " needs " + need + " floats (offset "
                + offset + ", " + rows + "×" + cols + " " + layout.label() + ", " + ldName + " " + ld
                + ") but its segment holds " + have + "; pass a larger segment or fix the offset/" + ldName);
    }

    static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;
}
