package ane4j.backend.ref;

import ane4j.mil.Literal;
import ane4j.mil.Op;
import ane4j.mil.Shapes;
import ane4j.mil.Value;

import java.lang.foreign.MemorySegment;

/**
 * linear, avg_pool, max_pool and tile: the ops small MLPs and CNNs (and their gradients) add to the transformer's set.
 * Plain loops in fp32 (these graphs are small); fp16 outputs are rounded once, as every op's.
 */
interface Layers extends OpContext {

    /** linear: y[r, o] = Σ_i x[r, i] · weight[o, i] + bias[o]; x (R, D_in) flattened over its leading dims, weight (D_out, D_in). */
    default void linear(Value out) {
        T x = contig(in("x")), w = contig(in("weight"));
        T b = in("bias") == null ? null : contig(in("bias"));
        int din = w.shape[1], dout = w.shape[0];
        long rows = x.count() / din;
        T o = newOut(out.shape(), out.dtype());
        addRounded(() -> {
            MemorySegment xs = x.st.seg, ws = w.st.seg, os = o.st.seg;
            for (long r = 0; r < rows; r++)
                for (int j = 0; j < dout; j++) {
                    float acc = b == null ? 0f : b.st.seg.getAtIndex(F, b.off + j);
                    for (int i = 0; i < din; i++) acc += xs.getAtIndex(F, x.off + r * din + i) * ws.getAtIndex(F, w.off + (long) j * din + i);
                    os.setAtIndex(F, o.off + r * dout + j, acc);
                }
        }, o);
        def(out, o);
    }

    /**
     * avg_pool: y[n, c, p] = mean over the window's elements (all k of it, padding counted as 0, or only those inside x
     * with exclude_padding_from_average); max_pool: y = max over the window's elements inside x (padding is −∞).
     * window of output p along a spatial dim: x positions p·stride − pad_before … + kernel − 1.
     */
    default void pool(Op op, Value out) {
        T x = contig(in("x"));
        int spatial = x.rank() - 2;
        int[] k = lit("kernel_sizes").toInts();
        Literal sl = lit("strides"), pl = lit("pad");
        int[] s = new int[spatial], in = new int[spatial];
        for (int i = 0; i < spatial; i++) { s[i] = sl == null ? 1 : sl.toInts()[i]; in[i] = x.shape[2 + i]; }
        int[] pads = Shapes.pads(lit("pad_type").stringValue(), pl == null ? new int[2 * spatial] : pl.toInts(), in, k, s);
        boolean exclude = op == Op.AVG_POOL && lit("exclude_padding_from_average").boolValue();
        // as 3 spatial dims (leading 1s), like conv
        int[] k3 = {1, 1, 1}, s3 = {1, 1, 1}, in3 = {1, 1, 1}, o3 = {1, 1, 1}, pb3 = {0, 0, 0};
        int[] outShape = out.shape();
        for (int i = 0; i < spatial; i++) {
            int j = 3 - spatial + i;
            k3[j] = k[i]; s3[j] = s[i]; in3[j] = in[i]; o3[j] = outShape[2 + i]; pb3[j] = pads[2 * i];
        }
        long planes = (long) x.shape[0] * x.shape[1];
        long inPlane = (long) in3[0] * in3[1] * in3[2], outPlane = (long) o3[0] * o3[1] * o3[2];
        T o = newOut(outShape, out.dtype());
        boolean max = op == Op.MAX_POOL;
        float window = k3[0] * k3[1] * k3[2];
        addRounded(() -> {
            MemorySegment xs = x.st.seg, os = o.st.seg;
            for (long pl2 = 0; pl2 < planes; pl2++)
                for (int od = 0; od < o3[0]; od++)
                    for (int oh = 0; oh < o3[1]; oh++)
                        for (int ow = 0; ow < o3[2]; ow++) {
                            float acc = max ? Float.NEGATIVE_INFINITY : 0f;
                            int inside = 0;
                            for (int kd = 0; kd < k3[0]; kd++) {
                                int id = od * s3[0] + kd - pb3[0];
                                if (id < 0 || id >= in3[0]) continue;
                                for (int kh = 0; kh < k3[1]; kh++) {
                                    int ih = oh * s3[1] + kh - pb3[1];
                                    if (ih < 0 || ih >= in3[1]) continue;
                                    for (int kw = 0; kw < k3[2]; kw++) {
                                        int iw = ow * s3[2] + kw - pb3[2];
                                        if (iw < 0 || iw >= in3[2]) continue;
                                        float v = xs.getAtIndex(F, x.off + pl2 * inPlane + ((long) id * in3[1] + ih) * in3[2] + iw);
                                        acc = max ? Math.max(acc, v) : acc + v;
                                        inside++;
                                    }
                                }
                            }
                            float r = max ? acc : acc / (exclude ? Math.max(inside, 1) : window);
                            os.setAtIndex(F, o.off + pl2 * outPlane + ((long) od * o3[1] + oh) * o3[2] + ow, r);
                        }
        }, o);
        def(out, o);
    }

    /**
     * tile: y[i₀, i₁, …] = x[i₀ mod d₀, i₁ mod d₁, …]. Row by row: each output row of the last axis is x's row (found
     * by the modulo of the leading indices) repeated reps[last] times, one block copy (or one fill for a width-1 row) each.
     */
    default void tile(Value out) {
        T x = contig(in("x"));
        int[] xs = x.shape, os = out.shape();
        int rank = os.length;
        long[] xStr = Shapes.strides(xs);
        int inner = rank == 0 ? 1 : xs[rank - 1], outInner = rank == 0 ? 1 : os[rank - 1];
        long rows = Shapes.count(os) / Math.max(1, outInner);
        T o = newOut(os, out.dtype());
        add(() -> {
            MemorySegment xseg = x.st.seg, oseg = o.st.seg;
            int[] idx = new int[Math.max(0, rank - 1)];
            for (long r = 0; r < rows; r++) {
                long src = x.off;
                for (int a = 0; a < rank - 1; a++) src += (idx[a] % xs[a]) * xStr[a];
                long dst = o.off + r * outInner;
                if (inner == 1) {
                    float v = xseg.getAtIndex(F, src);
                    for (int i = 0; i < outInner; i++) oseg.setAtIndex(F, dst + i, v);
                } else {
                    for (int k = 0; k < outInner; k += inner) MemorySegment.copy(xseg, src * 4, oseg, (dst + k) * 4, (long) inner * 4);
                }
                for (int a = rank - 2; a >= 0; a--) {
                    if (++idx[a] < os[a]) break;
                    idx[a] = 0;
                }
            }
        });
        def(out, o);
    }
}
