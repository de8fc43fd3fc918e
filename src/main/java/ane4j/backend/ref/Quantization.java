package ane4j.backend.ref;

import ane4j.mil.DType;
import ane4j.mil.Literal;
import ane4j.mil.Value;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/** constexpr_affine_dequantize, quantize and dequantize (per tensor or per axis). */
interface Quantization extends OpContext {

    /** A per-tensor or per-axis quantization parameter as a view broadcast over {@code shape}. */
    private T perAxis(Literal l, String name, int[] shape, Integer axis, float dflt) {
        if (l == null) {
            Storage s = new Storage(1, Storage.Kind.CONSTANT, new float[] {dflt}, -1);
            s.lastUse = Integer.MAX_VALUE;
            addStorage(s);
            return new T(s, 0, new int[0], new long[0], DType.FP32);
        }
        T c = constant(l, name);
        if (l.type().isScalar()) return c;
        int[] sh = new int[shape.length];
        Arrays.fill(sh, 1);
        sh[axis] = shape[axis];
        long[] st = new long[shape.length];
        st[axis] = 1;
        return new T(c.st, 0, sh, st, c.dtype);
    }

    /** constexpr_affine_dequantize: (quantized_data − zero_point) · scale, decoded once at compile time. */
    default void affineDequantize(Value out) {
        Literal q = lit("quantized_data");
        float[] data = decode(q, "quantized_data");
        int[] shape = q.type().shape();
        int axis = axis("axis", shape.length);
        float[] scale = lit("scale").toFloats(), zp = lit("zero_point").toFloats();
        long inner = 1;
        for (int i = axis + 1; i < shape.length; i++) inner *= shape[i];
        boolean fp16 = out.dtype() == DType.FP16 && !opt().fp32Storage();
        for (int i = 0; i < data.length; i++) {
            int c = (int) ((i / inner) % shape[axis]);
            float v = (data[i] - zp[zp.length == 1 ? 0 : c]) * scale[scale.length == 1 ? 0 : c];
            data[i] = fp16 ? ane4j.mil.Fp16.round(v) : v;
        }
        Storage s = new Storage(data.length, Storage.Kind.CONSTANT, data, -1);
        s.lastUse = Integer.MAX_VALUE;
        addStorage(s);
        def(out, T.dense(s, shape, out.dtype()));
    }

    /** quantize (iOS17): clip(round_half_even(input / scale) + zero_point, type min, type max), as coremltools. */
    default void quantize(Value out) {
        T x = in("input");
        Integer axis = cur().inputs().containsKey("axis") ? axis("axis", x.rank()) : null;
        T sc = perAxis(lit("scale"), "scale", x.shape, axis, 1f), zp = perAxis(lit("zero_point"), "zero_point", x.shape, axis, 0f);
        float lo = out.dtype() == DType.INT8 ? -128 : 0, hi = out.dtype() == DType.INT8 ? 127 : 255;
        T o = newOut(out.shape(), out.dtype());
        Iter it = Iter.of(o.shape, o, x, sc, zp);
        add(() -> {
            MemorySegment os = o.st.seg, xs = x.st.seg, ss = sc.st.seg, zs = zp.st.seg;
            long oi = it.inner[0], xi = it.inner[1], si = it.inner[2], zi = it.inner[3];
            it.runParallel((f, n) -> {
                for (int i = 0; i < n; i++) {
                    float v = (float) Math.rint(xs.getAtIndex(F, f[1] + i * xi) / ss.getAtIndex(F, f[2] + i * si)) + zs.getAtIndex(F, f[3] + i * zi);
                    os.setAtIndex(F, f[0] + i * oi, Math.max(lo, Math.min(hi, v)));
                }
            });
        });
        def(out, o);
    }

    /** dequantize (iOS17): scale · (input − zero_point). */
    default void dequantize(Value out) {
        T x = in("input");
        Integer axis = cur().inputs().containsKey("axis") ? axis("axis", x.rank()) : null;
        T sc = perAxis(lit("scale"), "scale", x.shape, axis, 1f), zp = perAxis(lit("zero_point"), "zero_point", x.shape, axis, 0f);
        T o = newOut(out.shape(), out.dtype());
        Iter it = Iter.of(o.shape, o, x, sc, zp);
        addRounded(() -> {
            MemorySegment os = o.st.seg, xs = x.st.seg, ss = sc.st.seg, zs = zp.st.seg;
            long oi = it.inner[0], xi = it.inner[1], si = it.inner[2], zi = it.inner[3];
            it.runParallel((f, n) -> {
                for (int i = 0; i < n; i++)
                    os.setAtIndex(F, f[0] + i * oi, ss.getAtIndex(F, f[2] + i * si) * (xs.getAtIndex(F, f[1] + i * xi) - zs.getAtIndex(F, f[3] + i * zi)));
            });
        }, o);
        def(out, o);
    }
}
