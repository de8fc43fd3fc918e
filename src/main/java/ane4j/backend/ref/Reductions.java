package ane4j.backend.ref;

import ane4j.blas.Parallel;
import ane4j.blas.VectorMath;
import ane4j.mil.Literal;
import ane4j.mil.Op;
import ane4j.mil.Shapes;
import ane4j.mil.Value;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/** The reductions and normalisations: reduce_sum/mean/max, softmax, layer_norm (a fixed summation order, see {@link #sum8}). */
interface Reductions extends OpContext {

    /** reduce_sum y = Σ x, reduce_mean y = Σ x / n, reduce_max y = max x over {@code axes} (all axes when absent). */
    default void reduce(Op op, Value out) {
        T x = in("x");
        int rank = x.rank();
        Literal al = lit("axes");
        boolean[] red = new boolean[rank];
        if (al == null) Arrays.fill(red, true);
        else for (int a : Planner.axes(al.toInts(), rank)) red[a] = true;
        int[] keep = x.shape.clone();
        long n = 1;
        for (int i = 0; i < rank; i++) if (red[i]) { keep[i] = 1; n *= x.shape[i]; }
        T o = newOut(out.shape(), out.dtype());
        // the output seen with x's rank: stride 0 along reduced axes
        long[] ks = Shapes.strides(keep);
        for (int i = 0; i < rank; i++) if (red[i]) ks[i] = 0;
        Iter it = new Iter(x.shape, new long[][] {ks, x.strides}, new long[] {0, x.off});
        float init = op == Op.REDUCE_MAX ? Float.NEGATIVE_INFINITY : 0f;
        float scale = op == Op.REDUCE_MEAN ? 1f / n : 1f;
        addRounded(() -> {
            MemorySegment os = o.st.seg, xs = x.st.seg;
            long cnt = o.count();
            for (long i = 0; i < cnt; i++) os.setAtIndex(F, i, init);
            long oi = it.inner[0], xi = it.inner[1];
            it.run((f, len) -> {
                if (oi == 0 && xi == 1 && len <= CHUNK) {
                    // a contiguous row reduced into one output element: through a heap chunk, 8 partial accumulators
                    float[] row = SCRATCH.get()[0];
                    MemorySegment.copy(xs, F, f[1] * 4, row, 0, len);
                    float acc = os.getAtIndex(F, f[0]);
                    acc = op == Op.REDUCE_MAX ? Math.max(acc, max8(row, len)) : acc + sum8(row, len);
                    os.setAtIndex(F, f[0], acc);
                } else if (oi == 0) {
                    // the row is reduced into one output element
                    float acc = os.getAtIndex(F, f[0]);
                    if (op == Op.REDUCE_MAX) for (int i = 0; i < len; i++) acc = Math.max(acc, xs.getAtIndex(F, f[1] + i * xi));
                    else for (int i = 0; i < len; i++) acc += xs.getAtIndex(F, f[1] + i * xi);
                    os.setAtIndex(F, f[0], acc);
                } else if (op == Op.REDUCE_MAX) {
                    for (int i = 0; i < len; i++) os.setAtIndex(F, f[0] + i * oi, Math.max(os.getAtIndex(F, f[0] + i * oi), xs.getAtIndex(F, f[1] + i * xi)));
                } else {
                    for (int i = 0; i < len; i++) os.setAtIndex(F, f[0] + i * oi, os.getAtIndex(F, f[0] + i * oi) + xs.getAtIndex(F, f[1] + i * xi));
                }
            });
            if (scale != 1f) for (long i = 0; i < cnt; i++) os.setAtIndex(F, i, os.getAtIndex(F, i) * scale);
        }, o);
        def(out, o);
    }

    /** softmax: y = exp(x − max x) / Σ exp(x − max x) along axis. */
    default void softmax(Value out) {
        T x = contig(in("x"));
        int axis = axis("axis", x.rank());
        T o = newOut(out.shape(), out.dtype());
        long outer = 1, inner = 1;
        for (int i = 0; i < axis; i++) outer *= x.shape[i];
        for (int i = axis + 1; i < x.rank(); i++) inner *= x.shape[i];
        int len = x.shape[axis];
        long fo = outer, fi = inner;
        if (fi == 1 && len <= 1 << 16) {
            boolean round = rounds(out.dtype());
            add(() -> softmaxRows(x.st.seg, x.off, o.st.seg, 0, fo, len, fi, round));
        } else addRounded(() -> softmaxRows(x.st.seg, x.off, o.st.seg, 0, fo, len, fi, false), o);
        def(out, o);
    }

    /** softmax over {@code len} elements at stride {@code inner}, for outer × inner rows: max-subtract, exp, normalise. */
    static void softmaxRows(MemorySegment xs, long xoff, MemorySegment os, long ooff, long outer, int len, long inner, boolean round) {
        if (outer >= 2 && outer * len * inner >= Iter.PARALLEL_MIN) {
            // rows are independent: disjoint ranges of the outer index in parallel
            int pieces = (int) Math.min(outer, 8);
            Parallel.forEach(pieces, p -> {
                long a0 = outer * p / pieces, a1 = outer * (p + 1) / pieces;
                softmaxSequential(xs, xoff + a0 * len * inner, os, ooff + a0 * len * inner, a1 - a0, len, inner, round);
            });
            return;
        }
        softmaxSequential(xs, xoff, os, ooff, outer, len, inner, round);
    }

    private static void softmaxSequential(MemorySegment xs, long xoff, MemorySegment os, long ooff, long outer, int len, long inner, boolean round) {
        if (inner == 1 && len <= 1 << 16) {
            // contiguous rows (softmax over the last axis): each row through a heap array; max and sum with 8 partial
            // accumulators (independent chains; the sum's order is fixed)
            float[] row = new float[len];
            for (long a = 0; a < outer; a++) {
                long base = a * len;
                MemorySegment.copy(xs, F, (xoff + base) * 4, row, 0, len);
                float max = max8(row, len);
                for (int i = 0; i < len; i++) row[i] -= max;
                VectorMath.expInPlace(row, len);
                float inv = 1f / sum8(row, len);
                for (int i = 0; i < len; i++) row[i] *= inv;
                if (round) Planner.round16(row, len);
                MemorySegment.copy(row, 0, os, F, (ooff + base) * 4, len);
            }
            return;
        }
        for (long a = 0; a < outer; a++) {
            for (long b = 0; b < inner; b++) {
                long base = a * len * inner + b;
                float max = Float.NEGATIVE_INFINITY;
                for (int i = 0; i < len; i++) max = Math.max(max, xs.getAtIndex(F, xoff + base + i * inner));
                float sum = 0;
                for (int i = 0; i < len; i++) {
                    float e = (float) Math.exp(xs.getAtIndex(F, xoff + base + i * inner) - max);
                    os.setAtIndex(F, ooff + base + i * inner, e);
                    sum += e;
                }
                float inv = 1f / sum;
                for (int i = 0; i < len; i++) os.setAtIndex(F, ooff + base + i * inner, os.getAtIndex(F, ooff + base + i * inner) * inv);
            }
        }
    }

    /** The largest of a[0..n) (NaN if any is NaN): {@link VectorMath#max}, exact in any lane order. */
    static float max8(float[] a, int n) { return VectorMath.max(a, 0, n); }

    /** Σ a[0..n) as 8 interleaved partial sums, combined pairwise: a fixed order, independent of threads and JIT. */
    static float sum8(float[] a, int n) { return sum8(a, 0, n); }

    /** {@link #sum8(float[], int)} of a[off..off+n): the same order relative to the run. */
    static float sum8(float[] a, int off, int n) {
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
        int i = off, end = off + n;
        for (; i + 8 <= end; i += 8) {
            s0 += a[i]; s1 += a[i + 1]; s2 += a[i + 2]; s3 += a[i + 3];
            s4 += a[i + 4]; s5 += a[i + 5]; s6 += a[i + 6]; s7 += a[i + 7];
        }
        for (; i < end; i++) s0 += a[i];
        return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    }

    /** layer_norm: (x − mean) / sqrt(var + epsilon) · gamma + beta over {@code axes} (biased variance, as PyTorch). */
    default void layerNorm(Value out) {
        T x = in("x");
        int rank = x.rank();
        Literal al = lit("axes");
        int[] ax;
        if (al == null) { ax = new int[rank]; for (int i = 0; i < rank; i++) ax[i] = i; } else ax = Planner.axes(al.toInts(), rank);
        float eps = lit("epsilon").floatValue();
        Literal gl = lit("gamma"), bl = lit("beta");
        T gamma = gl == null ? null : constant(gl, "gamma"), beta = bl == null ? null : constant(bl, "beta");
        boolean[] red = new boolean[rank];
        long n = 1;
        for (int a : ax) { red[a] = true; n *= x.shape[a]; }
        int[] keep = x.shape.clone();
        for (int a : ax) keep[a] = 1;
        long[] ks = Shapes.strides(keep);
        for (int i = 0; i < rank; i++) if (red[i]) ks[i] = 0;
        // gamma/beta have the normalized shape (dims of axes, in axes order): strides over x's dims
        long[] gs = new long[rank], bs = new long[rank];
        if (gamma != null) { long[] s = gamma.strides; for (int i = 0; i < ax.length; i++) gs[ax[i]] = s[i]; }
        if (beta != null) { long[] s = beta.strides; for (int i = 0; i < ax.length; i++) bs[ax[i]] = s[i]; }
        T o = newOut(out.shape(), out.dtype());
        long[] os0 = o.strides;
        long groups = Shapes.count(keep);
        Iter stats = new Iter(x.shape, new long[][] {ks, x.strides}, new long[] {0, x.off});
        Iter norm = new Iter(x.shape, new long[][] {os0, x.strides, ks, gs, bs}, new long[] {0, x.off, 0, 0, 0});
        long fn = n;
        addRounded(() -> {
            double[] sum = new double[(int) groups], sq = new double[(int) groups];
            MemorySegment xs = x.st.seg, osg = o.st.seg;
            long xi = stats.inner[1], ki = stats.inner[0];
            stats.run((f, len) -> {
                for (int i = 0; i < len; i++) {
                    double v = xs.getAtIndex(F, f[1] + i * xi);
                    int g = (int) (f[0] + i * ki);
                    sum[g] += v;
                    sq[g] += v * v;
                }
            });
            float[] mean = new float[(int) groups], inv = new float[(int) groups];
            for (int g = 0; g < groups; g++) {
                double m = sum[g] / fn;
                double var = Math.max(0, sq[g] / fn - m * m);
                mean[g] = (float) m;
                inv[g] = (float) (1.0 / Math.sqrt(var + eps));
            }
            MemorySegment gseg = gamma == null ? null : gamma.st.seg, bseg = beta == null ? null : beta.st.seg;
            long oi = norm.inner[0], xi2 = norm.inner[1], gi2 = norm.inner[2], gmi = norm.inner[3], bti = norm.inner[4];
            norm.run((f, len) -> {
                for (int i = 0; i < len; i++) {
                    int g = (int) (f[2] + i * gi2);
                    float v = (xs.getAtIndex(F, f[1] + i * xi2) - mean[g]) * inv[g];
                    if (gseg != null) v *= gseg.getAtIndex(F, f[3] + i * gmi);
                    if (bseg != null) v += bseg.getAtIndex(F, f[4] + i * bti);
                    osg.setAtIndex(F, f[0] + i * oi, v);
                }
            });
        }, o);
        def(out, o);
    }
}
