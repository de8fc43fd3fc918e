package ane4j.backend.ref;

import ane4j.mil.DType;
import ane4j.mil.Shapes;

import java.util.Arrays;

/**
 * A strided fp32 view of a {@link Storage}: element (i0, i1, …) at {@code off + Σ ik·strides[k]} (in floats). Shapes are
 * static, so views (reshape, transpose, slice, split) are resolved once at compile time.
 */
final class T {
    final Storage st;
    final long off;
    final int[] shape;
    final long[] strides;
    final DType dtype;

    T(Storage st, long off, int[] shape, long[] strides, DType dtype) {
        this.st = st;
        this.off = off;
        this.shape = shape;
        this.strides = strides;
        this.dtype = dtype;
    }

    /** A dense row-major tensor at the start of {@code st}. */
    static T dense(Storage st, int[] shape, DType dtype) { return new T(st, 0, shape.clone(), Shapes.strides(shape), dtype); }

    long count() { return Shapes.count(shape); }

    int rank() { return shape.length; }

    boolean isContiguous() {
        long expect = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            if (shape[i] == 1) continue;
            if (strides[i] != expect) return false;
            expect *= shape[i];
        }
        return true;
    }

    T withShape(int[] s, long[] str) { return new T(st, off, s, str, dtype); }

    T withDType(DType t) { return new T(st, off, shape, strides, t); }

    T permute(int[] perm) {
        int[] s = new int[perm.length];
        long[] str = new long[perm.length];
        for (int i = 0; i < perm.length; i++) { s[i] = shape[perm[i]]; str[i] = strides[perm[i]]; }
        return withShape(s, str);
    }

    T slice(int[] begin, int[] size) {
        long o = off;
        for (int i = 0; i < shape.length; i++) o += begin[i] * strides[i];
        return new T(st, o, size.clone(), strides.clone(), dtype);
    }

    /** This view reshaped without copying, or null when the strides do not allow it (numpy's no-copy reshape rule). */
    T reshapeView(int[] newShape) {
        if (isContiguous()) return new T(st, off, newShape.clone(), Shapes.strides(newShape), dtype);
        // old dims without the 1s
        int[] od = new int[shape.length];
        long[] os = new long[shape.length];
        int on = 0;
        for (int i = 0; i < shape.length; i++) if (shape[i] != 1) { od[on] = shape[i]; os[on++] = strides[i]; }
        int nn = newShape.length;
        long[] ns = new long[nn];
        int oi = 0, oj = 1, ni = 0, nj = 1;
        while (ni < nn && oi < on) {
            long np = newShape[ni], op = od[oi];
            while (np != op) {
                if (np < op) np *= newShape[nj++];
                else op *= od[oj++];
            }
            for (int ok = oi; ok < oj - 1; ok++) if (os[ok] != od[ok + 1] * os[ok + 1]) return null;
            ns[nj - 1] = os[oj - 1];
            for (int nk = nj - 1; nk > ni; nk--) ns[nk - 1] = ns[nk] * newShape[nk];
            ni = nj++;
            oi = oj++;
        }
        for (int i = ni; i < nn; i++) ns[i] = 1;
        return new T(st, off, newShape.clone(), ns, dtype);
    }

    /** Strides of this view broadcast to {@code outShape} (right-aligned; 0 where this dimension is 1). */
    long[] broadcastStrides(int[] outShape) {
        long[] s = new long[outShape.length];
        int lead = outShape.length - shape.length;
        for (int i = 0; i < shape.length; i++) s[lead + i] = shape[i] == 1 ? 0 : strides[i];
        return s;
    }

    @Override public String toString() { return dtype + Shapes.str(shape) + "@" + off + Arrays.toString(strides); }
}
