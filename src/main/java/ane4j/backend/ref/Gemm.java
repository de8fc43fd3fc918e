package ane4j.backend.ref;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;

/**
 * Row-major single-precision GEMM over memory segments, offsets and leading dimensions in floats:
 * {@code C[m×n] = op(A)[m×k] · op(B)[k×n] + beta·C}. A plain-Java blocked implementation using up to two threads; to be
 * replaced by {@code ane4j.blas} once that package is on main.
 */
final class Gemm {
    private Gemm() {}

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final int THREADS = Math.min(2, Runtime.getRuntime().availableProcessors());
    private static final int JB = 512, PB = 128;

    static void gemm(boolean ta, boolean tb, int m, int n, int k,
                     MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                     float beta, MemorySegment c, long cOff, int ldc) {
        // pack op(B) once as a dense [k][n] array shared by the threads
        float[] bp = new float[k * n];
        for (int p = 0; p < k; p++)
            for (int j = 0; j < n; j++) bp[p * n + j] = b.getAtIndex(F, bOff + (tb ? (long) j * ldb + p : (long) p * ldb + j));
        long work = (long) m * n * k;
        if (THREADS < 2 || work < (1 << 18) || m < 2) {
            rows(0, m, ta, n, k, a, aOff, lda, bp, beta, c, cOff, ldc);
            return;
        }
        int mid = m / 2;
        Future<?> f = ForkJoinPool.commonPool().submit(() -> rows(mid, m, ta, n, k, a, aOff, lda, bp, beta, c, cOff, ldc));
        rows(0, mid, ta, n, k, a, aOff, lda, bp, beta, c, cOff, ldc);
        try {
            f.get();
        } catch (Exception e) {
            throw new IllegalStateException("[gemm] worker failed: " + e, e);
        }
    }

    /** Rows [i0, i1) of C. */
    private static void rows(int i0, int i1, boolean ta, int n, int k, MemorySegment a, long aOff, int lda,
                             float[] bp, float beta, MemorySegment c, long cOff, int ldc) {
        int mr = i1 - i0;
        if (mr <= 0) return;
        float[] ap = new float[mr * k];
        for (int i = 0; i < mr; i++)
            for (int p = 0; p < k; p++) ap[i * k + p] = a.getAtIndex(F, aOff + (ta ? (long) p * lda + (i0 + i) : (long) (i0 + i) * lda + p));
        float[] acc = new float[mr * n];
        // block over columns and the inner dimension so a panel of B stays in cache
        for (int j0 = 0; j0 < n; j0 += JB) {
            int j1 = Math.min(n, j0 + JB);
            for (int p0 = 0; p0 < k; p0 += PB) {
                int p1 = Math.min(k, p0 + PB);
                for (int i = 0; i < mr; i++) {
                    int ci = i * n;
                    for (int p = p0; p < p1; p++) {
                        float av = ap[i * k + p];
                        int bi = p * n;
                        for (int j = j0; j < j1; j++) acc[ci + j] += av * bp[bi + j];
                    }
                }
            }
        }
        for (int i = 0; i < mr; i++) {
            long row = cOff + (long) (i0 + i) * ldc;
            if (beta == 0f) MemorySegment.copy(acc, i * n, c, F, row * 4, n);
            else for (int j = 0; j < n; j++) c.setAtIndex(F, row + j, acc[i * n + j] + beta * c.getAtIndex(F, row + j));
        }
    }
}
