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
 * <p>Threads: with {@code parallel > 1} the library itself runs single-threaded (OpenBLAS: {@code
 * openblas_set_num_threads(1)}) and this class splits a large product into row or column blocks of C, one
 * single-threaded call per block, on the caller plus {@code parallel − 1} pool threads. OpenBLAS's own workers
 * busy-wait between calls; on a machine with few cores they took the cores from the Java work around the calls (the
 * reference backend's elementwise ops, a second thread's GEMMs) and ran small GEMMs at a fraction of one core's speed.
 * A block boundary is a multiple of 16 rows/columns (a whole number of micro-kernel tiles): dim 288 (stories15m) is
 * halved evenly, 8% faster than 128 + 160 rows. The split is fixed by the shape and the thread count, so a machine
 * gives the same bits run after run; it is not bit-neutral: a block may take another kernel path than the whole
 * product (OpenBLAS 0.3.21's Haswell, Zen, SkylakeX and Cooperlake cores change the last bits of some products split
 * at 64 or 16 rows; Prescott's and Sandybridge's do not), within the tolerances {@code SgemmTest} states.
 *
 * <p>Native segments are passed as they are. Heap segments (e.g. {@code float[]}) cannot be passed to an ordinary
 * downcall: products up to {@link #CRITICAL_MAX_MACS} use a second, {@link Linker.Option#critical(boolean) critical}
 * handle that reads the Java heap in place (the calling thread cannot reach a safepoint until it returns: a GC waits
 * for the call, tens of milliseconds at most for the training step's largest products); larger ones copy the heap
 * operands into a per-thread native scratch block.
 */
@SuppressWarnings("restricted") // FFM downcalls are this class's job
final class NativeSgemm extends Sgemm {

    /** {@code void cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)}. */
    static final FunctionDescriptor SGEMM = FunctionDescriptor.ofVoid(JAVA_INT, JAVA_INT, JAVA_INT,
            JAVA_INT, JAVA_INT, JAVA_INT, JAVA_FLOAT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_FLOAT, ADDRESS, JAVA_INT);

    /** Products up to this many multiply-adds (M·N·K) use the critical handle on heap arrays instead of a copy. */
    static final long CRITICAL_MAX_MACS = Long.getLong("ane4j.blas.criticalMaxMacs", 1L << 34);

    /** Products from this many multiply-adds are split across threads (below, one block is faster than a hand-off). */
    static final long SPLIT_MIN_MACS = Long.getLong("ane4j.blas.splitMinMacs", 1L << 20);

    /** Block boundaries are multiples of this (rows or columns of C). */
    private static final int BLOCK_ALIGN = 16;

    private final String name;
    private final String description;
    private final int threads;
    private final boolean parallel;
    private final MemorySegment symbol;
    private final MethodHandle sgemm;
    private final MethodHandle sgemmCritical;
    private final long criticalMaxMacs;
    private final ThreadPool pool;
    private final boolean zeroCForBetaZero;

    /**
     * @param threads  threads used for a large product (0 if unknown: the library's own threading is left alone)
     * @param parallel whether this class does the threading (the library is then set to one thread by the caller)
     */
    NativeSgemm(String name, String description, int threads, boolean parallel, MemorySegment symbol) {
        this(name, description, threads, parallel, symbol, CRITICAL_MAX_MACS, name.equals("accelerate"));
    }

    /**
     * @param zeroCForBetaZero write zeros into C before a β = 0 call: Accelerate has been seen to read C when β = 0
     *                         (M = 1, N = 512, K = 544, B misaligned: NaN in C became NaN out in 100 of 100 runs;
     *                         ml-explore/mlx PR #3563, macOS 15), against the BLAS contract OpenBLAS keeps
     */
    NativeSgemm(String name, String description, int threads, boolean parallel, MemorySegment symbol, long criticalMaxMacs,
                boolean zeroCForBetaZero) {
        this.name = name;
        this.zeroCForBetaZero = zeroCForBetaZero;
        this.description = description;
        this.threads = threads;
        this.criticalMaxMacs = criticalMaxMacs;
        this.pool = parallel && threads > 1 ? ThreadPool.shared() : null;
        Linker linker = Linker.nativeLinker();
        this.sgemm = linker.downcallHandle(symbol, SGEMM);
        this.sgemmCritical = linker.downcallHandle(symbol, SGEMM, Linker.Option.critical(true));
        this.symbol = symbol;
        this.parallel = parallel;
    }

    /** The same library with another heap-copy threshold (tests: {@code 0} forces the copy path). */
    NativeSgemm withCriticalMaxMacs(long macs) { return new NativeSgemm(name, description, threads, parallel, symbol, macs, zeroCForBetaZero); }

    /** The {@code cblas_sgemm} this calls. */
    MemorySegment symbol() { return symbol; }

    @Override public String name() { return name; }
    @Override public int threads() { return threads; }
    @Override public String description() { return description; }

    @Override
    void compute(Layout layout, Transpose transA, Transpose transB, int m, int n, int k,
                 float alpha, MemorySegment a, long aOffset, int lda,
                 MemorySegment b, long bOffset, int ldb,
                 float beta, MemorySegment c, long cOffset, int ldc) {
        boolean heap = !a.isNative() || !b.isNative() || !c.isNative();
        if (!heap || (long) m * n * k <= criticalMaxMacs) {
            MethodHandle h = heap ? sgemmCritical : sgemm;
            int parts = pool == null || (long) m * n * k < SPLIT_MIN_MACS || ThreadPool.isWorker() ? 1 : threads;
            if (layout == Layout.COL_MAJOR) {
                // column-major C (m×n) is row-major Cᵀ (n×m) = op(B)ᵀ·op(A)ᵀ: one code path for the split
                splitRowMajor(h, parts, transB, transA, n, m, k, alpha, b, bOffset, ldb, a, aOffset, lda, beta, c, cOffset, ldc);
            } else splitRowMajor(h, parts, transA, transB, m, n, k, alpha, a, aOffset, lda, b, bOffset, ldb, beta, c, cOffset, ldc);
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

    /**
     * Row-major {@code C = alpha·op(A)·op(B) + beta·C} in {@code parts} blocks of C's rows (or of its columns when C is
     * wider than tall), one library call per block, on the pool and the calling thread.
     */
    private void splitRowMajor(MethodHandle h, int parts, Transpose ta, Transpose tb, int m, int n, int k, float alpha,
                               MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                               float beta, MemorySegment c, long cOff, int ldc) {
        boolean byRows = m >= n;
        int extent = byRows ? m : n;
        int blocks = Math.min(parts, Math.max(1, extent / BLOCK_ALIGN));
        if (blocks <= 1) {
            call(h, Layout.ROW_MAJOR, ta, tb, m, n, k, alpha, slice(a, aOff), lda, slice(b, bOff), ldb, beta, slice(c, cOff), ldc);
            return;
        }
        pool.run(blocks, i -> {
            int from = align(extent * (long) i / blocks), to = i == blocks - 1 ? extent : align(extent * (long) (i + 1) / blocks);
            if (to <= from) return;
            if (byRows) {
                // rows [from, to) of C and of op(A): A stored M×K (row from·lda) or K×M (column from)
                long aAt = aOff + (ta == Transpose.NO ? (long) from * lda : from);
                call(h, Layout.ROW_MAJOR, ta, tb, to - from, n, k, alpha, at(a, aAt), lda, at(b, bOff), ldb, beta, at(c, cOff + (long) from * ldc), ldc);
            } else {
                // columns [from, to) of C and of op(B): B stored K×N (column from) or N×K (row from·ldb)
                long bAt = bOff + (tb == Transpose.NO ? from : (long) from * ldb);
                call(h, Layout.ROW_MAJOR, ta, tb, m, to - from, k, alpha, at(a, aOff), lda, at(b, bAt), ldb, beta, at(c, cOff + from), ldc);
            }
        });
    }

    /**
     * Operand at {@code offset} floats, passable from any thread: a native segment as its bare address (it may belong
     * to a confined arena; the caller keeps it alive, as it waits for every block), a heap segment as a slice.
     */
    private static MemorySegment at(MemorySegment seg, long offset) {
        if (!seg.isNative()) return slice(seg, offset);
        return MemorySegment.ofAddress(seg.address() + offset * Float.BYTES);
    }

    private static int align(long x) { return (int) (x / BLOCK_ALIGN * BLOCK_ALIGN); }

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

    private void call(MethodHandle h, Layout layout, Transpose transA, Transpose transB, int m, int n, int k,
                      float alpha, MemorySegment a, int lda, MemorySegment b, int ldb,
                      float beta, MemorySegment c, int ldc) {
        if (beta == 0f && zeroCForBetaZero) zero(c, layout == Layout.ROW_MAJOR ? m : n, layout == Layout.ROW_MAJOR ? n : m, ldc);
        try {
            h.invokeExact(layout.cblas, transA.cblas, transB.cblas, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        } catch (Throwable t) {
            throw new IllegalStateException("[sgemm] native cblas_sgemm failed: " + t, t);
        }
    }

    /** Zeros the {@code lines × width} elements of a matrix stored with leading dimension {@code ld}, and nothing else. */
    private static void zero(MemorySegment c, int lines, int width, int ld) {
        if (lines == 0 || width == 0) return;
        if (ld == width) c.asSlice(0, (long) lines * width * Float.BYTES).fill((byte) 0);
        else for (int i = 0; i < lines; i++) c.asSlice((long) i * ld * Float.BYTES, (long) width * Float.BYTES).fill((byte) 0);
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

    /** Calls {@code void symbol(int)} if the library has it; true if it did. */
    static boolean setThreads(SymbolLookup lookup, String symbol, int threads) {
        return lookup.find(symbol).map(s -> {
            try {
                Linker.nativeLinker().downcallHandle(s, FunctionDescriptor.ofVoid(JAVA_INT)).invokeExact(threads);
                return true;
            } catch (Throwable t) {
                return false;
            }
        }).orElse(false);
    }

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
