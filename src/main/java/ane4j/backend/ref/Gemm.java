package ane4j.backend.ref;

import ane4j.blas.Blas;
import ane4j.blas.Layout;
import ane4j.blas.Transpose;
import java.lang.foreign.MemorySegment;

/**
 * Row-major single-precision GEMM over memory segments, offsets and leading dimensions in floats:
 * {@code C[m×n] = op(A)[m×k] · op(B)[k×n] + beta·C}, through {@link Blas} (OpenBLAS, Accelerate, or its Java fallback).
 */
final class Gemm {
    private Gemm() {}

    static void gemm(boolean ta, boolean tb, int m, int n, int k,
                     MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                     float beta, MemorySegment c, long cOff, int ldc) {
        Blas.sgemm(Layout.ROW_MAJOR, ta ? Transpose.YES : Transpose.NO, tb ? Transpose.YES : Transpose.NO, m, n, k,
                1f, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
    }
}
