package ane4j.backend.ref;

import ane4j.chip.Chip;
import ane4j.chip.Rule;
import ane4j.mil.DType;
import ane4j.mil.Operation;
import ane4j.mil.Value;

import java.util.List;

/**
 * The view ops: identity, reshape, transpose, slice_by_size, split and concat. All but concat cost nothing when the
 * strides allow (they return a view of their input); otherwise the planner adds a dense copy.
 */
interface Views extends OpContext {
    /** identity: y = x (a view; the dtype is the output's). */
    default void identity(Value out) { def(out, in("x").withDType(out.dtype())); }

    /** transpose: y[j_0, …, j_{r−1}] = x[i] with i_{perm[k]} = j_k, y.shape[k] = x.shape[perm[k]] (a view with permuted strides). */
    default void transpose(Value out) { def(out, in("x").permute(Planner.axes(lit("perm").toInts(), out.rank()))); }

    /** reshape: y = x with shape {@code shape} (same elements in row-major order; a view when the strides allow). */
    default void reshape(Value out) {
        T x = in("x");
        T v = x.reshapeView(out.shape());
        if (v == null) v = contig(x).reshapeView(out.shape());
        def(out, v);
    }

    /** slice_by_size: y[i] = x[begin + i] for 0 ≤ i < size (a view; negative begin counts from the end). */
    default void sliceBySize(Value out) {
        T x = in("x");
        int[] begin = lit("begin").toInts();
        for (int i = 0; i < begin.length; i++) if (begin[i] < 0) begin[i] += x.shape[i];
        T view = x.slice(begin, out.shape());
        float clamp = sliceClamp();
        if (clamp > 0 && begin.length > 0 && begin[begin.length - 1] != 0 && out.dtype() == DType.FP16) {
            // chip emulation: the pre-A16 crop-DMA of a width-offset slice saturates |v| > 4094 to ±inf (ANEForge
            // aneforge/_targets.py FP16_SLICE_SAT; PRs #145/#148, M1 and M2 Pro), so the slice is a copy that clamps
            T d = newOut(out.shape(), out.dtype());
            Iter it = Iter.of(d.shape, d, view);
            add(() -> { Planner.copy(it, d.st.seg, view.st.seg); Planner.saturate(d.st.seg, d.st.floats, clamp, false); });
            def(out, d);
            return;
        }
        def(out, view);
    }

    /** The emulated chip's slice clamp (4094 on M1–M3), or 0. */
    private float sliceClamp() {
        Chip c = opt().chip();
        return c == null || !Rule.SLICE_CLAMP.appliesTo(c) ? 0 : Rule.SLICE_CLAMP.limit(c);
    }

    /** split: y_k = x[…, o_k : o_k + n_k, …] along axis, o_k = n_0 + … + n_{k−1} (views). */
    default void split(Operation o) {
        T x = in("x");
        int axis = axis("axis", x.rank());
        int pos = 0;
        for (Value v : o.outputs()) {
            int[] begin = new int[x.rank()];
            begin[axis] = pos;
            def(v, x.slice(begin, v.shape()));
            pos += v.shape()[axis];
        }
    }

    /** Whether two views address the same elements in the same order. */
    private static boolean sameView(T a, T b) {
        if (a.st != b.st || a.off != b.off || !java.util.Arrays.equals(a.shape, b.shape)) return false;
        for (int i = 0; i < a.rank(); i++) if (a.shape[i] > 1 && a.strides[i] != b.strides[i]) return false;
        return true;
    }

    /** concat: y = [x_0; x_1; …] along axis; interleave: y[…, j·n + k, …] = x_k[…, j, …]. */
    default void concat(Value out) {
        List<T> xs = cur().values("values").stream().map(this::get).toList();
        int axis = axis("axis", out.rank());
        boolean interleave = lit("interleave").boolValue();
        T o = interleave ? newOut(out.shape(), out.dtype()) : concatOutput(out);
        int pos = 0;
        for (int k = 0; k < xs.size(); k++) {
            T x = xs.get(k);
            if (!interleave && sameView(x, Planner.concatSlot(o, cur(), k))) {
                // its op wrote it in place (Planner.placed)
                pos += x.shape[axis];
                continue;
            }
            long[] str = o.strides.clone();
            long off;
            if (interleave) {
                // element j of value k along the axis goes to position j·n + k
                off = k * o.strides[axis];
                str[axis] = o.strides[axis] * xs.size();
            } else {
                off = pos * o.strides[axis];
                pos += x.shape[axis];
            }
            copyStep(x, new T(o.st, off, x.shape, str, o.dtype));
        }
        def(out, o);
    }
}
