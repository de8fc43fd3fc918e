/**
 * Single-precision GEMM for the reference backend and the CPU half of training.
 *
 * <pre>{@code
 * // C[m×n] = alpha·op(A)·op(B) + beta·C, CBLAS conventions, offsets and leading dimensions in floats
 * Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, m, n, k,
 *            1f, a, aOffset, lda, b, bOffset, ldb, 0f, c, cOffset, ldc);   // MemorySegment or float[]
 * Blas.get().description();   // which implementation, e.g. "OpenBLAS via FFM (libopenblas.so.0, …, 2 threads)"
 * }</pre>
 *
 * <p>Implementations: OpenBLAS through FFM on Linux, Accelerate ({@code cblas_sgemm$NEWLAPACK}) on macOS, and a
 * pure-Java fallback (Vector API, or a blocked scalar loop without {@code --add-modules jdk.incubator.vector}).
 * {@code -Dane4j.blas=openblas|accelerate|java} forces one; see {@link ane4j.blas.Blas}.
 *
 * <p>Threads: OpenBLAS runs each call on one thread and ane4j splits large products over its own pool (the caller plus
 * one thread per further core); {@link ane4j.blas.Parallel} runs the other parallel loops of the CPU side on the same
 * threads. {@link ane4j.blas.VectorMath} has the elementwise {@code exp} of softmax, SiLU and cross-entropy.
 */
package ane4j.blas;
