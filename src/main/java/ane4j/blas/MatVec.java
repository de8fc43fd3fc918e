package ane4j.blas;

/**
 * {@code y = W·x} for one vector (sgemv, no transpose): the matvecs of token-by-token generation, which read every weight
 * once per token and so are bound by memory bandwidth, not by arithmetic. Rows are split across the cores of
 * {@link Parallel}; each row is computed whole by one thread, so the split never changes a result.
 *
 * <p>The sum of a row has one fixed order on every machine, with or without the Vector API: 8 lanes, lane j
 * accumulating the products of columns c ≡ j (mod 8) with fused multiply-adds, columns in order; then
 * (l0+l4), (l1+l5), (l2+l6), (l3+l7) → ((s0+s2)+(s1+s3)); then the last cols mod 8 columns, in order, fused. (128-bit
 * vectors: SSE/AVX on x86, NEON on Apple silicon; a reduction of the Vector API's own, {@code reduceLanes(ADD)}, may
 * change order between the interpreter and C2.)
 */
public final class MatVec {
    private MatVec() {}

    /** The implementation behind {@link MatVec}: rows [from, to) of W (row-major, {@code cols} wide, from {@code wo}). */
    interface Impl {
        void rows(float[] y, float[] x, float[] w, int wo, int cols, int from, int to);
        String name();
    }

    private static final Impl SCALAR = new Impl() {
        @Override public void rows(float[] y, float[] x, float[] w, int wo, int cols, int from, int to) {
            for (int r = from; r < to; r++) y[r] = rowScalar(x, w, wo + (long) r * cols, cols);
        }
        @Override public String name() { return "scalar"; }
    };

    /** One row in the order of the class comment, lane by lane. */
    static float rowScalar(float[] x, float[] w, long start, int cols) {
        int base = Math.toIntExact(start);
        float l0 = 0f, l1 = 0f, l2 = 0f, l3 = 0f, l4 = 0f, l5 = 0f, l6 = 0f, l7 = 0f;
        int c = 0;
        for (int bound = cols & ~7; c < bound; c += 8) {
            l0 = Math.fma(w[base + c], x[c], l0);
            l1 = Math.fma(w[base + c + 1], x[c + 1], l1);
            l2 = Math.fma(w[base + c + 2], x[c + 2], l2);
            l3 = Math.fma(w[base + c + 3], x[c + 3], l3);
            l4 = Math.fma(w[base + c + 4], x[c + 4], l4);
            l5 = Math.fma(w[base + c + 5], x[c + 5], l5);
            l6 = Math.fma(w[base + c + 6], x[c + 6], l6);
            l7 = Math.fma(w[base + c + 7], x[c + 7], l7);
        }
        float s0 = l0 + l4, s1 = l1 + l5, s2 = l2 + l6, s3 = l3 + l7;
        float sum = (s0 + s2) + (s1 + s3);
        for (; c < cols; c++) sum = Math.fma(w[base + c], x[c], sum);
        return sum;
    }

    static final Impl IMPL = VectorClasses.load("ane4j.blas.MatVecSimd", Impl.class).orElse(SCALAR);

    private static final long PARALLEL_WORK = 1 << 16;   // multiply-adds below which waking the pool costs more than it saves

    /** {@code y[r] = Σ_c W[r][c]·x[c]} for r < rows, W row-major at {@code w[wo …]}; rows split across the cores when large. */
    public static void multiply(float[] y, float[] x, float[] w, int wo, int rows, int cols) {
        if (rows < 0 || cols < 0 || wo < 0 || y.length < rows || x.length < cols || (long) wo + (long) rows * cols > w.length)
            throw new IllegalArgumentException("[matvec] W of " + rows + "×" + cols + " at " + wo + " (of " + w.length + "), x of " + x.length
                    + ", y of " + y.length + " do not fit");
        int threads = Parallel.threads();
        if ((long) rows * cols < PARALLEL_WORK) {
            // small (a tiny model's every matvec): the scalar loop, the same bits; the Vector API's code costs more than
            // it saves here until C2 has compiled it (a 0.14M-parameter model generated 8× slower)
            SCALAR.rows(y, x, w, wo, cols, 0, rows);
            return;
        }
        if (threads == 1 || rows < 8) {
            IMPL.rows(y, x, w, wo, cols, 0, rows);
            return;
        }
        // two blocks per core (a core slowed by another process leaves its second block to the others), whole groups of 4 rows
        int blocks = Math.min(2 * threads, rows / 4);
        int per = (rows / blocks + 3) & ~3;
        Parallel.forEach(blocks, b -> IMPL.rows(y, x, w, wo, cols, Math.min(rows, b * per), b == blocks - 1 ? rows : Math.min(rows, (b + 1) * per)));
    }

    /** "vector" or "scalar". */
    public static String implementation() { return IMPL.name(); }
}
