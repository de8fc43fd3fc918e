package ane4j.blas;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Out-of-place transpose {@code b = aᵀ} from a heap array or memory into memory: the training step's transposed weight
 * staging and the reference backend's transposing copies.
 * OpenBLAS's {@code cblas_somatcopy} (row-major, transposed, alpha 1) where the selected GEMM is OpenBLAS's and the
 * library has it; else a Java loop in 64×64 tiles through heap arrays. Both are copies: the same bits either way. One
 * call runs on the calling thread (the library does not thread it); callers split the columns across threads.
 */
@SuppressWarnings("restricted") // the downcall to the library that {@link OpenBlas} loaded
public final class Transposes {
    private Transposes() {}

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final int CBLAS_ROW_MAJOR = 101, CBLAS_TRANS = 112;

    /** {@code void cblas_somatcopy(order, trans, rows, cols, alpha, A, lda, B, ldb)}. */
    private static final FunctionDescriptor SOMATCOPY = FunctionDescriptor.ofVoid(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
            JAVA_FLOAT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT);

    private static volatile MethodHandle somatcopy;
    private static volatile boolean looked;

    /** Which implementation {@link #copy} uses: {@code openblas} or {@code java}. */
    public static String implementation() { return nativeHandle() != null ? "openblas" : "java"; }

    /**
     * {@code b[bOffset + j·ldb + i] = a[aOffset + i·lda + j]} for i < rows, j < cols: a (rows × cols, row stride lda)
     * transposed into b (cols × rows, row stride ldb). Offsets and strides in floats.
     */
    public static void copy(float[] a, int aOffset, int rows, int cols, int lda, MemorySegment b, long bOffset, int ldb) {
        if (a == null) throw new IllegalArgumentException("[transpose] source is null");
        copy(MemorySegment.ofArray(a), aOffset, rows, cols, lda, b, bOffset, ldb);
    }

    /**
     * {@link #copy(float[], int, int, int, int, MemorySegment, long, int)} from memory (the interpreter's transposing
     * copies); a source whose rows overlap (lda < cols, 0 for one row read again) is read by the Java loop.
     */
    public static void copy(MemorySegment a, long aOffset, int rows, int cols, long lda, MemorySegment b, long bOffset, long ldb) {
        check(a, aOffset, rows, cols, lda, b, bOffset, ldb);
        if (rows == 0 || cols == 0) return;
        MethodHandle h = lda >= cols && lda <= Integer.MAX_VALUE && ldb <= Integer.MAX_VALUE ? nativeHandle() : null;
        if (h != null) {
            try {
                h.invokeExact(CBLAS_ROW_MAJOR, CBLAS_TRANS, rows, cols, 1f, a.asSlice(4 * aOffset), (int) lda, b.asSlice(4 * bOffset), (int) ldb);
            } catch (Throwable t) {
                throw new IllegalStateException("[transpose] native cblas_somatcopy failed: " + t, t);
            }
        } else copyJava(a, aOffset, rows, cols, lda, b, bOffset, ldb);
    }

    private static final int TILE = 64;
    private static final ThreadLocal<float[][]> TILES = ThreadLocal.withInitial(() -> new float[][] {new float[TILE * TILE], new float[TILE * TILE]});

    /** The Java path of {@link #copy} (also what tests compare the native one with). */
    static void copyJava(MemorySegment a, long aOffset, int rows, int cols, long lda, MemorySegment b, long bOffset, long ldb) {
        check(a, aOffset, rows, cols, lda, b, bOffset, ldb);
        float[][] scratch = TILES.get();
        float[] tile = scratch[0], turned = scratch[1];
        for (int i0 = 0; i0 < rows; i0 += TILE) {
            int ih = Math.min(TILE, rows - i0);
            for (int j0 = 0; j0 < cols; j0 += TILE) {
                int jw = Math.min(TILE, cols - j0);
                // tile (ih, jw) ← a[i0.., j0..]: contiguous runs of a
                for (int i = 0; i < ih; i++) MemorySegment.copy(a, F, 4 * (aOffset + (i0 + i) * lda + j0), tile, i * TILE, jw);
                // turned (jw, ih) = tileᵀ, in cache
                for (int j = 0; j < jw; j++) for (int i = 0; i < ih; i++) turned[j * TILE + i] = tile[i * TILE + j];
                // b[j0 + j, i0..] ← turned row j: contiguous runs of b
                for (int j = 0; j < jw; j++) MemorySegment.copy(turned, j * TILE, b, F, 4 * (bOffset + (j0 + j) * ldb + i0), ih);
            }
        }
    }

    private static void check(MemorySegment a, long aOffset, int rows, int cols, long lda, MemorySegment b, long bOffset, long ldb) {
        if (a == null || b == null) throw new IllegalArgumentException("[transpose] " + (a == null ? "source" : "destination") + " is null");
        if (rows < 0 || cols < 0) throw new IllegalArgumentException("[transpose] negative size " + rows + "×" + cols);
        // the source may be read twice (overlapping rows); the destination's rows must not overlap
        if (lda < 0 || ldb < Math.max(1, rows))
            throw new IllegalArgumentException("[transpose] strides " + lda + ", " + ldb + ": the destination's " + ldb + " is below the " + rows + " floats of its rows");
        if (rows == 0 || cols == 0) return;
        long aEnd = aOffset + (rows - 1) * lda + cols, bEnd = bOffset + (cols - 1) * ldb + rows;
        if (aOffset < 0 || 4 * aEnd > a.byteSize())
            throw new IllegalArgumentException("[transpose] source " + rows + "×" + cols + " at " + aOffset + " (stride " + lda + ") outside " + a.byteSize() / 4 + " floats");
        if (bOffset < 0 || 4 * bEnd > b.byteSize())
            throw new IllegalArgumentException("[transpose] destination " + cols + "×" + rows + " at " + bOffset + " (stride " + ldb + ") outside " + b.byteSize() / 4 + " floats");
    }

    /** somatcopy of the library the selected GEMM runs on, or null (another GEMM, or a library without it). */
    private static MethodHandle nativeHandle() {
        if (looked) return somatcopy;
        synchronized (Transposes.class) {
            if (!looked) {
                somatcopy = lookUp();
                looked = true;
            }
            return somatcopy;
        }
    }

    private static MethodHandle lookUp() {
        if (!Blas.get().name().startsWith("openblas") || !OpenBlas.PROBE.loaded()) return null;
        try {
            return SymbolLookup.libraryLookup(OpenBlas.PROBE.detail(), Arena.global()).find("cblas_somatcopy")
                    .map(s -> Linker.nativeLinker().downcallHandle(s, SOMATCOPY, Linker.Option.critical(true))).orElse(null);
        } catch (RuntimeException e) {
            return null;
        }
    }
}
