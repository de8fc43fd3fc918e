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
 * {@code cblas_sgemm} (LP64: every integer is a C {@code int}) called through FFM, for OpenBLAS and Accelerate.
 *
 * <p>Native segments are passed as they are. Heap segments (e.g. {@code float[]}) cannot be passed to an ordinary
 * downcall: small products use a second, {@link Linker.Option#critical(boolean) critical} handle that may read the
 * Java heap directly (no copy; the calling thread cannot reach a safepoint until it returns, which is why it is only
 * used for short calls), and larger ones copy the heap operands into a per-thread native scratch block, whose O(n²)
 * cost is small next to the O(n³) product.
 */
@SuppressWarnings("restricted") // FFM downcalls are this class's job
final class NativeSgemm extends Sgemm {

    /** {@code void cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)}. */
    static final FunctionDescriptor SGEMM = FunctionDescriptor.ofVoid(JAVA_INT, JAVA_INT, JAVA_INT,
            JAVA_INT, JAVA_INT, JAVA_INT, JAVA_FLOAT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_FLOAT, ADDRESS, JAVA_INT);

    /** Products up to this many multiply-adds (M·N·K) use the critical handle on heap arrays instead of a copy. */
    static final long CRITICAL_MAX_MACS = Long.getLong("ane4j.blas.criticalMaxMacs", 1L << 21);

    private final String name;
    private final String description;
    private final int threads;
    private final MethodHandle sgemm;
    private final MethodHandle sgemmCritical;

    NativeSgemm(String name, String description, int threads, MemorySegment symbol) {
        this.name = name;
        this.description = description;
        this.threads = threads;
        Linker linker = Linker.nativeLinker();
        this.sgemm = linker.downcallHandle(symbol, SGEMM);
        this.sgemmCritical = linker.downcallHandle(symbol, SGEMM, Linker.Option.critical(true));
    }

    @Override public String name() { return name; }
    @Override public int threads() { return threads; }
    @Override public String description() { return description; }

    @Override
    void compute(Layout layout, Transpose transA, Transpose transB, int m, int n, int k,
                 float alpha, MemorySegment a, long aOffset, int lda,
                 MemorySegment b, long bOffset, int ldb,
                 float beta, MemorySegment c, long cOffset, int ldc) {
        boolean heap = !a.isNative() || !b.isNative() || !c.isNative();
        if (!heap || (long) m * n * k <= CRITICAL_MAX_MACS) {
            call(heap ? sgemmCritical : sgemm, layout, transA, transB, m, n, k, alpha,
                    slice(a, aOffset), lda, slice(b, bOffset), ldb, beta, slice(c, cOffset), ldc);
            return;
        }
        long aFloats = span(layout, transA == Transpose.YES ? k : m, transA == Transpose.YES ? m : k, lda);
        long bFloats = span(layout, transB == Transpose.YES ? n : k, transB == Transpose.YES ? k : n, ldb);
        long cFloats = span(layout, m, n, ldc);
        // one scratch block for the heap operands, 64-byte aligned pieces
        long aAt = 0, bAt = aAt + (a.isNative() ? 0 : round64(aFloats)), cAt = bAt + (b.isNative() ? 0 : round64(bFloats));
        long bytes = cAt + (c.isNative() ? 0 : round64(cFloats));
        MemorySegment scratch = scratch(bytes);
        MemorySegment na = a.isNative() ? slice(a, aOffset) : copyIn(a, aOffset, aFloats, scratch, aAt);
        MemorySegment nb = b.isNative() ? slice(b, bOffset) : copyIn(b, bOffset, bFloats, scratch, bAt);
        // with beta == 0 BLAS never reads C, so it need not be copied in
        MemorySegment nc = c.isNative() ? slice(c, cOffset)
                : beta == 0f ? scratch.asSlice(cAt, cFloats * Float.BYTES) : copyIn(c, cOffset, cFloats, scratch, cAt);
        call(sgemm, layout, transA, transB, m, n, k, alpha, na, lda, nb, ldb, beta, nc, ldc);
        if (!c.isNative()) copyOut(nc, c, cOffset, layout == Layout.ROW_MAJOR ? m : n, layout == Layout.ROW_MAJOR ? n : m, ldc);
    }

    /** Copies back only the {@code outer} runs of {@code inner} floats of C: the gaps between them (ld > inner) were
     *  never copied in when beta == 0 and must keep the caller's values. */
    private static void copyOut(MemorySegment from, MemorySegment c, long cOffset, int outer, int inner, int ld) {
        if (ld == inner) {
            MemorySegment.copy(from, 0, c, cOffset * Float.BYTES, (long) outer * inner * Float.BYTES);
            return;
        }
        for (long r = 0; r < outer; r++) {
            MemorySegment.copy(from, r * ld * Float.BYTES, c, (cOffset + r * ld) * Float.BYTES, (long) inner * Float.BYTES);
        }
    }

    /** Scratch blocks up to this size are kept per thread for the next call; larger ones are freed by the GC. */
    static final long SCRATCH_KEEP_BYTES = 256L << 20;
    private static final ThreadLocal<MemorySegment> SCRATCH = new ThreadLocal<>();

    /** A native block of at least {@code bytes} (contents undefined), reused across calls: a fresh one per call costs
     *  zeroing and page faults that at n = 2048 are a sizeable fraction of the product itself. */
    private static MemorySegment scratch(long bytes) {
        MemorySegment s = SCRATCH.get();
        if (s != null && s.byteSize() >= bytes) return s;
        s = Arena.ofAuto().allocate(Math.max(bytes, 64), 64);
        if (bytes <= SCRATCH_KEEP_BYTES) SCRATCH.set(s);
        return s;
    }

    private static long round64(long floats) { return (floats * Float.BYTES + 63) & ~63L; }

    private static MemorySegment copyIn(MemorySegment seg, long offset, long floats, MemorySegment scratch, long at) {
        MemorySegment dst = scratch.asSlice(at, floats * Float.BYTES);
        MemorySegment.copy(seg, offset * Float.BYTES, dst, 0, floats * Float.BYTES);
        return dst;
    }

    private static void call(MethodHandle h, Layout layout, Transpose transA, Transpose transB, int m, int n, int k,
                             float alpha, MemorySegment a, int lda, MemorySegment b, int ldb,
                             float beta, MemorySegment c, int ldc) {
        try {
            h.invokeExact(layout.cblas, transA.cblas, transB.cblas, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        } catch (Throwable t) {
            throw new IllegalStateException("[sgemm] native cblas_sgemm failed: " + t, t);
        }
    }

    /** Floats spanned by a stored {@code rows × cols} matrix with leading dimension {@code ld}; 0 if empty. */
    private static long span(Layout layout, int rows, int cols, int ld) {
        if (rows == 0 || cols == 0) return 0;
        return layout == Layout.ROW_MAJOR ? (rows - 1L) * ld + cols : (cols - 1L) * ld + rows;
    }

    private static MemorySegment slice(MemorySegment seg, long offset) {
        // an operand of an empty product may have any offset: it is not read
        return offset == 0 || offset * Float.BYTES >= seg.byteSize() ? seg : seg.asSlice(offset * Float.BYTES);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // optional informational symbols

    static int intFunction(SymbolLookup lookup, String symbol) {
        return lookup.find(symbol).map(s -> {
            try {
                return (int) Linker.nativeLinker().downcallHandle(s, FunctionDescriptor.of(JAVA_INT)).invokeExact();
            } catch (Throwable t) {
                return 0;
            }
        }).orElse(0);
    }

    static String stringFunction(SymbolLookup lookup, String symbol) {
        return lookup.find(symbol).map(s -> {
            try {
                MemorySegment p = (MemorySegment) Linker.nativeLinker()
                        .downcallHandle(s, FunctionDescriptor.of(ADDRESS.withTargetLayout(
                                java.lang.foreign.MemoryLayout.sequenceLayout(4096, ValueLayout.JAVA_BYTE))))
                        .invokeExact();
                return p.equals(MemorySegment.NULL) ? "" : p.getString(0).trim();
            } catch (Throwable t) {
                return "";
            }
        }).orElse("");
    }
}
