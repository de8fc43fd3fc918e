package ane4j.blas;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;

/**
 * Pure-Java sgemm, blocked like GotoBLAS: B is packed in KC×NC panels of NR-wide strips, A (scaled by alpha) in
 * MC×KC blocks of MR-tall strips, and a {@link TileMultiplier} computes one MR×NR tile of C from a strip of each. Blocks of
 * MC rows run in parallel on the common pool. Column-major calls are turned into row-major ones by computing
 * Cᵀ = op(B)ᵀ·op(A)ᵀ.
 */
@SuppressWarnings("restricted") // reinterpret: aliasing a confined segment for the worker threads
final class JavaSgemm extends Sgemm {

    /** Computes one MR×NR tile: {@code C[rows×cols] += Σ_p ap[p*MR + i] * bp[p*NR + j]}. */
    interface TileMultiplier {
        int mr();

        int nr();

        String name();

        void tile(int kc, float[] ap, int apOff, float[] bp, int bpOff,
                  MemorySegment c, long cIdx, int ldc, int rows, int cols);
    }

    static final int KC = 256;
    /** Below this many multiply-adds a product runs on the calling thread only. */
    static final long PARALLEL_MIN_MACS = 1L << 20;

    private final TileMultiplier tiles;
    private final int mc, nc;

    JavaSgemm(TileMultiplier tiles) {
        this.tiles = tiles;
        this.mc = tiles.mr() * Math.max(1, 128 / tiles.mr());
        this.nc = tiles.nr() * Math.max(1, 2048 / tiles.nr());
    }

    @Override public String name() { return tiles.name(); }

    @Override public int threads() { return ForkJoinPool.getCommonPoolParallelism() + 1; }

    @Override
    public String description() {
        return "pure Java (" + tiles.name() + ", " + tiles.mr() + "×" + tiles.nr() + " tiles, " + threads() + " threads)";
    }

    @Override
    void compute(Layout layout, Transpose transA, Transpose transB, int m, int n, int k,
                 float alpha, MemorySegment a, long aOffset, int lda,
                 MemorySegment b, long bOffset, int ldb,
                 float beta, MemorySegment c, long cOffset, int ldc) {
        if (layout == Layout.COL_MAJOR) {
            // column-major C (m×n) is row-major Cᵀ (n×m) = op(B)ᵀ·op(A)ᵀ, and a column-major B read row-major is Bᵀ
            rowMajor(transB == Transpose.YES, transA == Transpose.YES, n, m, k, alpha,
                    b, bOffset, ldb, a, aOffset, lda, beta, c, cOffset, ldc);
        } else {
            rowMajor(transA == Transpose.YES, transB == Transpose.YES, m, n, k, alpha,
                    a, aOffset, lda, b, bOffset, ldb, beta, c, cOffset, ldc);
        }
    }

    private void rowMajor(boolean ta, boolean tb, int m, int n, int k, float alpha,
                          MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                          float beta, MemorySegment c, long cOff, int ldc) {
        scale(beta, m, n, c, cOff, ldc);
        if (k == 0 || alpha == 0f) return;
        int mr = tiles.mr(), nr = tiles.nr();
        int threads = threads();
        boolean parallel = (long) m * n * k >= PARALLEL_MIN_MACS && m > mr && threads > 1;
        if (parallel) {
            // a confined arena's segments are only accessible from its owner thread, which is blocked in this call
            // until the workers are done, so aliasing them for the workers cannot outlive the arena
            try {
                a = shareable(a);
                b = shareable(b);
                c = shareable(c);
            } catch (IllegalCallerException e) { // native access denied to this module: stay on the caller thread
                parallel = false;
            }
        }
        // row blocks of at most MC rows, as many as a multiple of the thread count so that no thread idles at the end
        int mBlocks = (m + mc - 1) / mc;
        if (parallel) mBlocks = threads * ((m + threads * mc - 1) / (threads * mc));
        int mcb0 = Math.min(mc, (((m + mBlocks - 1) / mBlocks) + mr - 1) / mr * mr);
        int nBlocks = (m + mcb0 - 1) / mcb0;
        float[] bp = new float[Math.min(KC, k) * ((Math.min(nc, n) + nr - 1) / nr * nr)];
        for (int jc = 0; jc < n; jc += nc) {
            int ncb = Math.min(nc, n - jc);
            for (int pc = 0; pc < k; pc += KC) {
                int kcb = Math.min(KC, k - pc);
                packB(tb, b, bOff, ldb, pc, jc, kcb, ncb, nr, bp);
                int jcf = jc, pcf = pc;
                MemorySegment af = a, cf = c;
                IntStream blocks = IntStream.range(0, nBlocks);
                (parallel ? blocks.parallel() : blocks).forEach(blk -> {
                    int ic = blk * mcb0, mcb = Math.min(mcb0, m - ic);
                    float[] ap = A_PANEL.get();
                    if (ap.length < mc * KC) A_PANEL.set(ap = new float[mc * KC]);
                    packA(ta, alpha, af, aOff, lda, ic, pcf, mcb, kcb, mr, ap);
                    for (int jr = 0; jr < ncb; jr += nr) {
                        int cols = Math.min(nr, ncb - jr);
                        for (int ir = 0; ir < mcb; ir += mr) {
                            int rows = Math.min(mr, mcb - ir);
                            long cIdx = cOff + (long) (ic + ir) * ldc + jcf + jr;
                            tiles.tile(kcb, ap, ir * kcb, bp, jr * kcb, cf, cIdx, ldc, rows, cols);
                        }
                    }
                });
            }
        }
    }

    /** Never started; only an identity that is not the caller, for {@link MemorySegment#isAccessibleBy}. */
    private static final Thread OTHER = Thread.ofPlatform().unstarted(() -> {});

    private static MemorySegment shareable(MemorySegment s) {
        if (s.isAccessibleBy(OTHER)) return s;
        return MemorySegment.ofAddress(s.address()).reinterpret(s.byteSize());
    }

    private static final ThreadLocal<float[]> A_PANEL = ThreadLocal.withInitial(() -> new float[0]);

    /** C[m×n] *= beta; beta == 0 overwrites (BLAS semantics: NaN/Inf in C do not survive). */
    private static void scale(float beta, int m, int n, MemorySegment c, long cOff, int ldc) {
        if (beta == 1f) return;
        for (int i = 0; i < m; i++) {
            long row = cOff + (long) i * ldc;
            if (beta == 0f) {
                c.asSlice(row * Float.BYTES, (long) n * Float.BYTES).fill((byte) 0);
            } else {
                for (int j = 0; j < n; j++) c.setAtIndex(FLOAT, row + j, beta * c.getAtIndex(FLOAT, row + j));
            }
        }
    }

    /**
     * Packs op(B)[pc:pc+kc, jc:jc+nc] into NR-wide strips: strip s holds bp[s*kc*NR + p*NR + j] = op(B)[pc+p, jc+s*NR+j],
     * zero beyond the last column.
     */
    private static void packB(boolean tb, MemorySegment b, long bOff, int ldb, int pc, int jc, int kc, int nc,
                              int nr, float[] bp) {
        float[] run = new float[Math.max(kc, nr)];
        for (int s = 0; s * nr < nc; s++) {
            int base = s * kc * nr, cols = Math.min(nr, nc - s * nr), j0 = jc + s * nr;
            if (!tb) {
                // op(B) = B: row p of the strip is contiguous
                for (int p = 0; p < kc; p++) {
                    MemorySegment.copy(b, FLOAT, (bOff + (long) (pc + p) * ldb + j0) * Float.BYTES, bp, base + p * nr, cols);
                    for (int j = cols; j < nr; j++) bp[base + p * nr + j] = 0f;
                }
            } else {
                // op(B) = Bᵀ: column j of the strip is row j0+j of B, contiguous in p
                for (int j = 0; j < nr; j++) {
                    if (j < cols) {
                        MemorySegment.copy(b, FLOAT, (bOff + (long) (j0 + j) * ldb + pc) * Float.BYTES, run, 0, kc);
                        for (int p = 0; p < kc; p++) bp[base + p * nr + j] = run[p];
                    } else {
                        for (int p = 0; p < kc; p++) bp[base + p * nr + j] = 0f;
                    }
                }
            }
        }
    }

    /**
     * Packs alpha·op(A)[ic:ic+mc, pc:pc+kc] into MR-tall strips: strip r holds ap[r*kc*MR + p*MR + i] =
     * alpha·op(A)[ic+r*MR+i, pc+p], zero below the last row.
     */
    private static void packA(boolean ta, float alpha, MemorySegment a, long aOff, int lda, int ic, int pc, int mc,
                              int kc, int mr, float[] ap) {
        float[] run = new float[Math.max(kc, mr)];
        for (int r = 0; r * mr < mc; r++) {
            int base = r * kc * mr, rows = Math.min(mr, mc - r * mr), i0 = ic + r * mr;
            if (!ta) {
                // op(A) = A: row i of the strip is contiguous in p
                for (int i = 0; i < mr; i++) {
                    if (i < rows) {
                        MemorySegment.copy(a, FLOAT, (aOff + (long) (i0 + i) * lda + pc) * Float.BYTES, run, 0, kc);
                        for (int p = 0; p < kc; p++) ap[base + p * mr + i] = alpha * run[p];
                    } else {
                        for (int p = 0; p < kc; p++) ap[base + p * mr + i] = 0f;
                    }
                }
            } else {
                // op(A) = Aᵀ: for each p the strip's rows are contiguous in row pc+p of A
                for (int p = 0; p < kc; p++) {
                    MemorySegment.copy(a, FLOAT, (aOff + (long) (pc + p) * lda + i0) * Float.BYTES, run, 0, rows);
                    for (int i = 0; i < mr; i++) ap[base + p * mr + i] = i < rows ? alpha * run[i] : 0f;
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------------

    /** The blocked scalar tile multiplier (4×16 tiles); C2 may vectorise its inner loop on its own. */
    static final class ScalarTileMultiplier implements TileMultiplier {
        static final int MR = 4, NR = 16;

        @Override public int mr() { return MR; }
        @Override public int nr() { return NR; }
        @Override public String name() { return "java-scalar"; }

        @Override
        public void tile(int kc, float[] ap, int apOff, float[] bp, int bpOff,
                         MemorySegment c, long cIdx, int ldc, int rows, int cols) {
            float[] acc = new float[MR * NR];
            for (int p = 0; p < kc; p++) {
                int ao = apOff + p * MR, bo = bpOff + p * NR;
                for (int i = 0; i < MR; i++) {
                    float ai = ap[ao + i];
                    for (int j = 0; j < NR; j++) acc[i * NR + j] += ai * bp[bo + j];
                }
            }
            for (int i = 0; i < rows; i++) {
                long row = cIdx + (long) i * ldc;
                for (int j = 0; j < cols; j++) c.setAtIndex(FLOAT, row + j, c.getAtIndex(FLOAT, row + j) + acc[i * NR + j]);
            }
        }
    }
}
