package ane4j.backend.ref;

import ane4j.blas.Parallel;
import ane4j.chip.Rule;
import ane4j.mil.DType;
import ane4j.mil.Literal;
import ane4j.mil.Shapes;
import ane4j.mil.Value;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/** matmul (one GEMM per batch, operands read in place when their strides allow) and conv (im2col then GEMM). */
interface MatmulConv extends OpContext {

    /** A matrix operand for GEMM: segment offset, leading dimension and whether it is stored transposed. */
    record Mat(boolean trans, int ld) {}

    /** How a [rows, cols] view with these strides can be handed to GEMM, or null when it needs a copy. */
    private static Mat mat(int rows, int cols, long sr, long sc) {
        if (cols == 1 && rows == 1) return new Mat(false, 1);
        if (sc == 1 || cols == 1) {
            long ld = rows == 1 ? cols : sr;
            if (ld >= cols && ld <= Integer.MAX_VALUE) return new Mat(false, (int) ld);
        }
        if (sr == 1 || rows == 1) {
            long ld = cols == 1 ? rows : sc;
            if (ld >= rows && ld <= Integer.MAX_VALUE) return new Mat(true, (int) ld);
        }
        return null;
    }

    /** Views x as [..., M, K] honouring transpose and rank-1 rules; returns the view (batch dims first). */
    private static T asMatrix(T t, boolean transpose, boolean isY) {
        T m = t;
        if (t.rank() == 1) {
            // numpy: rank-1 x is [1,K], rank-1 y is [K,1]
            m = isY ? t.withShape(new int[] {t.shape[0], 1}, new long[] {t.strides[0], 1})
                    : t.withShape(new int[] {1, t.shape[0]}, new long[] {1, t.strides[0]});
        } else if (transpose) {
            int r = t.rank();
            int[] perm = new int[r];
            for (int i = 0; i < r; i++) perm[i] = i;
            perm[r - 2] = r - 1;
            perm[r - 1] = r - 2;
            m = t.permute(perm);
        }
        return m;
    }

    /** matmul: z[b] = op(x[b]) · op(y[b]), op = transpose when transpose_x/_y, batch dims broadcast (rank 1: a vector). */
    default void matmul(Value out) {
        T x = asMatrix(in("x"), lit("transpose_x").boolValue(), false);
        T y = asMatrix(in("y"), lit("transpose_y").boolValue(), true);
        int m = x.shape[x.rank() - 2], k = x.shape[x.rank() - 1], n = y.shape[y.rank() - 1];
        if (mat(m, k, x.strides[x.rank() - 2], x.strides[x.rank() - 1]) == null) x = contig(x);
        if (mat(k, n, y.strides[y.rank() - 2], y.strides[y.rank() - 1]) == null) y = contig(y);
        int[] batch = Shapes.broadcast(Arrays.copyOf(x.shape, x.rank() - 2), Arrays.copyOf(y.shape, y.rank() - 2));
        int[] full = Arrays.copyOf(batch, batch.length + 2);
        full[batch.length] = m;
        full[batch.length + 1] = n;
        // write C transposed when the only consumer is a last-two-axes transpose (the dynamic-weights pattern)
        boolean natural = out.rank() >= 2 && transposesLastTwo(out);
        // written where a concat takes it (Planner.placed) when that place is dense, or dense with the last two axes
        // swapped, and in the layout other readers would see anyway (a strided operand can change an op's arithmetic)
        T dest = Arrays.equals(out.shape(), full) ? placed(out) : null;
        boolean destTransposed = dest != null && !dest.isContiguous() && dest.permute(swapLastTwo(full.length)).isContiguous();
        if (dest != null && ((!dest.isContiguous() && !destTransposed) || (destTransposed != natural && !onlyInConcat(out)))) dest = null;
        boolean transOut = dest != null ? destTransposed : natural;
        Storage st = dest != null ? dest.st : temp(Shapes.count(full));
        long base = dest != null ? dest.off : 0;
        long[] cs = Shapes.strides(full);
        if (transOut) {
            int[] stored = full.clone();
            stored[batch.length] = n;
            stored[batch.length + 1] = m;
            long[] ss = Shapes.strides(stored);
            cs = ss.clone();
            cs[batch.length] = ss[batch.length + 1];
            cs[batch.length + 1] = ss[batch.length];
        }
        T c = new T(st, base, full, cs, out.dtype());
        T fx = x, fy = y;
        long[] xb = batchStrides(x, batch), yb = batchStrides(y, batch), cb = Arrays.copyOf(cs, batch.length);
        Mat ma = mat(m, k, x.strides[x.rank() - 2], x.strides[x.rank() - 1]);
        Mat mb = mat(k, n, y.strides[y.rank() - 2], y.strides[y.rank() - 1]);
        long batches = Shapes.count(batch);
        label(" [" + (batches > 1 ? batches + "×" : "") + m + "×" + k + "·" + k + "×" + n + (ma.trans() ? " Aᵀ" : "") + (mb.trans() ? " Bᵀ" : "") + (transOut ? " Cᵀ" : "") + "]");
        // chip emulation: an fp16 matmul output that rounds above 32752 (fp16 max / 2) is ±inf on the ANE, for every
        // contraction size (ANEForge issue #115 on M5, PR #145 on M2 Pro)
        float saturation = opt().chip() != null && out.dtype() == DType.FP16 ? Rule.MATMUL_SATURATION.limit(opt().chip()) : 0;
        // several products (attention heads): one product per thread, each in one piece, rather than each split in two
        // (one hand-off per matmul instead of one per head; a split GEMM computes every element as the whole one does)
        boolean perThread = batchParallel() && batches > 1 && Parallel.threads() > 1 && batches * m * n * k >= BATCH_PARALLEL_MIN_MACS;
        addRounded(() -> {
            MemorySegment xs = fx.st.seg, ys = fy.st.seg, csg = st.seg;
            java.util.function.LongConsumer product = bt -> {
                long xo = fx.off, yo = fy.off, co = base, rest = bt;
                for (int i = batch.length - 1; i >= 0; i--) {
                    long at = rest % batch[i];
                    rest /= batch[i];
                    xo += at * xb[i];
                    yo += at * yb[i];
                    co += at * cb[i];
                }
                if (transOut) {
                    // Cᵀ[n×m] = op(B)ᵀ · op(A)ᵀ
                    Gemm.gemm(!mb.trans(), !ma.trans(), n, m, k, ys, yo, mb.ld(), xs, xo, ma.ld(), 0f, csg, co, m);
                } else {
                    Gemm.gemm(ma.trans(), mb.trans(), m, n, k, xs, xo, ma.ld(), ys, yo, mb.ld(), 0f, csg, co, n);
                }
            };
            if (perThread) Parallel.forEach((int) batches, bt -> product.accept(bt));
            else for (long bt = 0; bt < batches; bt++) product.accept(bt);
            if (saturation > 0) Planner.saturate(csg, base, c.count(), saturation, true);
        }, c);
        // drop the dims numpy adds for rank-1 operands
        T result = c;
        if (!Arrays.equals(out.shape(), full)) result = c.reshapeView(out.shape());
        def(out, result);
    }

    /** Batched products from this many multiply-adds in all run one per thread (below, one thread does them all). */
    long BATCH_PARALLEL_MIN_MACS = 1L << 20;

    private static int[] swapLastTwo(int rank) {
        int[] perm = new int[rank];
        for (int i = 0; i < rank; i++) perm[i] = i;
        perm[rank - 2] = rank - 1;
        perm[rank - 1] = rank - 2;
        return perm;
    }

    private static long[] batchStrides(T t, int[] batch) {
        long[] s = new long[batch.length];
        int lead = batch.length - (t.rank() - 2);
        for (int i = 0; i < t.rank() - 2; i++) s[lead + i] = t.shape[i] == 1 ? 0 : t.strides[i];
        return s;
    }

    /**
     * conv: y[n, g·Cout/G + o, p] = Σ_{c,k} w[g·Cout/G + o, c, k] · x[n, g·Cin/G + c, p·stride + k·dilation − pad] (+ bias).
     * Over 1–3 spatial dims: per batch and group, im2col then GEMM (a 1×1 conv with stride 1 and no padding is a
     * GEMM on x directly). weight is [Cout, Cin/groups, *kernel]; pads per pad_type (same: extra padding at the end;
     * same_lower: at the start).
     */
    default void conv(Value out) {
        T x = contig(in("x")), w = contig(in("weight"));
        T bias = in("bias");
        if (bias != null) bias = contig(bias);
        int sp = x.rank() - 2;
        int groups = lit("groups").intValue();
        Literal sl = lit("strides"), dl = lit("dilations"), pl = lit("pad");
        String padType = lit("pad_type").stringValue();
        int[] in3 = {1, 1, 1}, k3 = {1, 1, 1}, s3 = {1, 1, 1}, d3 = {1, 1, 1}, o3 = {1, 1, 1}, pb3 = new int[3];
        int[] outShape = out.shape();
        for (int i = 0; i < sp; i++) {
            int j = 3 - sp + i;
            in3[j] = x.shape[2 + i];
            k3[j] = w.shape[2 + i];
            s3[j] = sl == null ? 1 : sl.toInts()[i];
            d3[j] = dl == null ? 1 : dl.toInts()[i];
            o3[j] = outShape[2 + i];
            int eff = d3[j] * (k3[j] - 1) + 1;
            pb3[j] = switch (padType) {
                case "valid" -> 0;
                case "custom" -> pl == null ? 0 : pl.toInts()[2 * i];
                case "same", "same_lower" -> {
                    int total = Math.max(0, (o3[j] - 1) * s3[j] + eff - in3[j]);
                    yield padType.equals("same") ? total / 2 : total - total / 2;
                }
                default -> throw err("pad_type '%s' is not one of valid, same, same_lower, custom", padType);
            };
        }
        int nb = x.shape[0], cin = x.shape[1], cout = w.shape[0];
        int cinG = cin / groups, coutG = cout / groups;
        int kProd = k3[0] * k3[1] * k3[2], oProd = o3[0] * o3[1] * o3[2], inProd = in3[0] * in3[1] * in3[2];
        boolean direct = kProd == 1 && Arrays.equals(s3, new int[] {1, 1, 1}) && pb3[0] == 0 && pb3[1] == 0 && pb3[2] == 0 && oProd == inProd;
        Storage cols = direct ? null : temp((long) cinG * kProd * oProd);
        T o = newOut(outShape, out.dtype());
        T fb = bias;
        addRounded(() -> {
            MemorySegment xs = x.st.seg, ws = w.st.seg, os = o.st.seg;
            for (int b = 0; b < nb; b++) {
                for (int g = 0; g < groups; g++) {
                    long xo = x.off + ((long) b * cin + (long) g * cinG) * inProd;
                    long wo = w.off + (long) g * coutG * cinG * kProd;
                    long oo = ((long) b * cout + (long) g * coutG) * oProd;
                    if (direct) {
                        // out[g] (coutG × HW) = W[g] (coutG × cinG) · x[g] (cinG × HW)
                        Gemm.gemm(false, false, coutG, oProd, cinG, ws, wo, cinG, xs, xo, inProd, 0f, os, oo, oProd);
                    } else {
                        im2col(xs, xo, cinG, in3, k3, s3, d3, pb3, o3, cols.seg);
                        Gemm.gemm(false, false, coutG, oProd, cinG * kProd, ws, wo, cinG * kProd, cols.seg, 0, oProd, 0f, os, oo, oProd);
                    }
                }
                if (fb != null)
                    for (int c = 0; c < cout; c++) {
                        float bv = fb.st.seg.getAtIndex(F, fb.off + (long) c * fb.strides[0]);
                        long base = ((long) b * cout + c) * oProd;
                        for (int i = 0; i < oProd; i++) os.setAtIndex(F, base + i, os.getAtIndex(F, base + i) + bv);
                    }
            }
        }, o);
        def(out, o);
    }

    /** cols[(c·K + kk), (od·OH + oh)·OW + ow] = x[c, id, ih, iw] (0 outside the padded input). */
    private static void im2col(MemorySegment xs, long xo, int cinG, int[] in3, int[] k3, int[] s3, int[] d3, int[] pb3, int[] o3, MemorySegment cols) {
        long oProd = (long) o3[0] * o3[1] * o3[2];
        long row = 0;
        for (int c = 0; c < cinG; c++)
            for (int kd = 0; kd < k3[0]; kd++)
                for (int kh = 0; kh < k3[1]; kh++)
                    for (int kw = 0; kw < k3[2]; kw++, row++) {
                        long dst = row * oProd;
                        for (int od = 0; od < o3[0]; od++) {
                            int id = od * s3[0] - pb3[0] + kd * d3[0];
                            for (int oh = 0; oh < o3[1]; oh++) {
                                int ih = oh * s3[1] - pb3[1] + kh * d3[1];
                                for (int ow = 0; ow < o3[2]; ow++, dst++) {
                                    int iw = ow * s3[2] - pb3[2] + kw * d3[2];
                                    boolean inside = id >= 0 && id < in3[0] && ih >= 0 && ih < in3[1] && iw >= 0 && iw < in3[2];
                                    cols.setAtIndex(F, dst, inside ? xs.getAtIndex(F, xo + (((long) c * in3[0] + id) * in3[1] + ih) * in3[2] + iw) : 0f);
                                }
                            }
                        }
                    }
    }
}
