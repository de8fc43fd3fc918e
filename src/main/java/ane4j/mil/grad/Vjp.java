package ane4j.mil.grad;

import ane4j.mil.Arg;
import ane4j.mil.DType;
import ane4j.mil.FunctionBuilder;
import ane4j.mil.Literal;
import ane4j.mil.Operation;
import ane4j.mil.Shapes;
import ane4j.mil.TensorType;
import ane4j.mil.Value;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * What a {@link Rule} sees of one forward op: its inputs and outputs (as values of the gradient function, where the
 * forward is replayed), the upstream gradients, and the builder to emit the backward ops into; plus the helpers the
 * rules share (unbroadcast, expand, zeros, pad-or-crop, strided spread and gather along an axis).
 */
final class Vjp {
    final FunctionBuilder f;
    final Operation op;
    private final Map<String, Value> replayed;
    private final List<Value> upstream;
    private final Grad.Sink sink;

    Vjp(FunctionBuilder f, Operation op, Map<String, Value> replayed, List<Value> upstream, Grad.Sink sink) {
        this.f = f;
        this.op = op;
        this.replayed = replayed;
        this.upstream = upstream;
        this.sink = sink;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // the op

    /** The (replayed) value bound to tensor parameter {@code param}, or null when absent. */
    Value x(String param) {
        Value v = op.value(param);
        return v == null ? null : replayed.get(v.name());
    }

    /** The (replayed) values of tuple parameter {@code param}. */
    List<Value> xs(String param) { return op.values(param).stream().map(v -> replayed.get(v.name())).toList(); }

    /** The op's (replayed) single output. */
    Value out() { return replayed.get(op.output().name()); }

    /** The (replayed) output {@code i}. */
    Value out(int i) { return replayed.get(op.outputs().get(i).name()); }

    /** The upstream gradient of the op's single output. */
    Value g() { return upstream.get(0); }

    /** The upstream gradient of output {@code i}, or null when that output does not reach the loss. */
    Value g(int i) { return upstream.get(i); }

    Literal lit(String param) { return op.literal(param); }

    int[] ints(String param) { Literal l = lit(param); return l == null ? null : l.toInts(); }

    /** Parameters of this op whose gradient is formed elsewhere (a weight gradient computed on the CPU). */
    java.util.Set<String> elsewhere = java.util.Set.of();

    /** Whether the input bound to {@code param} needs a gradient (it depends on a wrt input). */
    boolean needs(String param) {
        Value v = op.value(param);
        return v != null && sink.needs(v) && !elsewhere.contains(param);
    }

    /** Whether element {@code k} of tuple parameter {@code param} needs a gradient. */
    boolean needs(String param, int k) { return sink.needs(op.values(param).get(k)); }

    /** Adds {@code grad} to the gradient of the input bound to {@code param}; a broadcast gradient is summed back to its shape. */
    void give(String param, Value grad) {
        if (needs(param)) sink.add(op, op.value(param), grad);
    }

    void give(String param, int k, Value grad) {
        if (needs(param, k)) sink.add(op, op.values(param).get(k), grad);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // emitting helpers

    /** A scalar of {@code like}'s float type. */
    Value c(Value like, double v) { return f.scalar(like, (float) v); }

    Value mul(Value a, Value b) { return f.mul(a, b); }
    Value mul(Value a, double k) { return f.mul(a, c(a, k)); }
    Value add(Value a, Value b) { return f.add(a, b); }
    Value add(Value a, double k) { return f.add(a, c(a, k)); }
    Value sub(Value a, Value b) { return f.sub(a, b); }
    Value div(Value a, Value b) { return f.realDiv(a, b); }
    /** k − a */
    Value rsub(double k, Value a) { return f.sub(c(a, k), a); }
    Value neg(Value a) { return mul(a, -1); }

    /** A tensor of {@code type} filled with {@code v}: a [1,…,1] constant tiled (no large constant in the program). */
    Value filled(TensorType type, double v) {
        int[] shape = type.shape();
        int[] ones = new int[shape.length];
        Arrays.fill(ones, 1);
        float[] one = {(float) v};
        Value unit = f.constant(Literal.ofFloats(type.withShape(ones), one));
        return Arrays.equals(shape, ones) ? unit : f.tile(unit, shape);
    }

    Value zeros(TensorType type) { return filled(type, 0); }

    /** {@code v} broadcast (tiled) to {@code shape}; {@code v}'s shape broadcasts to it. */
    Value expand(Value v, int[] shape) {
        if (Arrays.equals(v.shape(), shape)) return v;
        Value w = v;
        if (w.rank() < shape.length) {
            int[] s = new int[shape.length];
            Arrays.fill(s, 1);
            System.arraycopy(w.shape(), 0, s, shape.length - w.rank(), w.rank());
            w = f.reshape(w, s);
        }
        int[] reps = new int[shape.length];
        for (int i = 0; i < shape.length; i++) reps[i] = shape[i] / w.shape()[i];
        return f.tile(w, reps);
    }

    /** {@code g} summed over the axes along which a value of {@code shape} was broadcast to g's shape, reshaped to {@code shape}. */
    Value unbroadcast(Value g, int[] shape) {
        int[] gs = g.shape();
        if (Arrays.equals(gs, shape)) return g;
        int lead = gs.length - shape.length;
        List<Integer> axes = new ArrayList<>();
        for (int i = 0; i < gs.length; i++) {
            int d = i < lead ? 1 : shape[i - lead];
            if (i < lead || (d == 1 && gs[i] != 1)) axes.add(i);
        }
        Value s = axes.isEmpty() ? g : f.reduceSum(g, true, axes.stream().mapToInt(Integer::intValue).toArray());
        return Arrays.equals(s.shape(), shape) ? s : f.reshape(s, shape);
    }

    /** The shape of reducing {@code shape} over {@code axes} (null: all) with keep_dims. */
    static int[] kept(int[] shape, int[] axes) {
        int[] k = shape.clone();
        if (axes == null) Arrays.fill(k, 1);
        else for (int a : axes) k[a < 0 ? a + shape.length : a] = 1;
        return k;
    }

    /** {@code v} with {@code before} elements added (or, if negative, removed) at the start of {@code axis} and {@code after} at its end. */
    Value padOrCrop(Value v, int axis, int before, int after, double fill) {
        int[] s = v.shape();
        if (before < 0 || after < 0) {
            int b = Math.max(0, -before), e = Math.max(0, -after);
            int[] begin = new int[s.length], size = s.clone();
            begin[axis] = b;
            size[axis] = s[axis] - b - e;
            v = f.sliceBySize(v, begin, size);
            s = v.shape();
        }
        List<Value> parts = new ArrayList<>();
        if (before > 0) { int[] p = s.clone(); p[axis] = before; parts.add(filled(v.type().withShape(p), fill)); }
        parts.add(v);
        if (after > 0) { int[] p = s.clone(); p[axis] = after; parts.add(filled(v.type().withShape(p), fill)); }
        return parts.size() == 1 ? v : f.concat(axis, parts.toArray(Value[]::new));
    }

    /**
     * Along {@code axis}: out[p·stride + offset] = v[p] for every p, zeros elsewhere, out of length {@code length}
     * (positions outside 0..length−1 dropped). The scatter of a strided window back onto its input.
     */
    Value spread(Value v, int axis, int stride, int offset, int length) {
        int[] s = v.shape();
        int n = s[axis];
        Value w = v;
        if (stride > 1) {
            // [pre, n, post] → [pre, n, 1, post] ++ zeros [pre, n, stride−1, post] → [pre, n·stride, post]: element p at p·stride
            int pre = prod(s, 0, axis), post = prod(s, axis + 1, s.length);
            Value r = f.reshape(w, pre, n, 1, post);
            Value z = zeros(r.type().withShape(pre, n, stride - 1, post));
            int[] back = s.clone();
            back[axis] = n * stride;
            w = f.reshape(f.concat(2, r, z), back);
        }
        return padOrCrop(w, axis, offset, length - offset - w.shape()[axis], 0);
    }

    /**
     * Along {@code axis}: out[p] = v[p·stride + offset] for p in 0..count−1, {@code fill} where that index is outside v
     * (padding). The strided window of an input, as seen by output positions.
     */
    Value gatherStrided(Value v, int axis, int stride, int offset, int count, double fill) {
        int len = v.shape()[axis];
        Value w = padOrCrop(v, axis, -offset, count * stride + offset - len, fill);   // w[j] = v[j + offset], length count·stride
        if (stride == 1) return w;
        int[] s = w.shape();
        int pre = prod(s, 0, axis), post = prod(s, axis + 1, s.length);
        Value r = f.sliceBySize(f.reshape(w, pre, count, stride, post), new int[] {0, 0, 0, 0}, new int[] {pre, count, 1, post});
        int[] back = s.clone();
        back[axis] = count;
        return f.reshape(r, back);
    }

    /** The values of {@code v} reversed along {@code axis} (slices and a concat: kernels are small). */
    Value reverse(Value v, int axis) {
        int[] s = v.shape();
        int n = s[axis];
        if (n == 1) return v;
        Value[] parts = new Value[n];
        for (int i = 0; i < n; i++) {
            int[] begin = new int[s.length], size = s.clone();
            begin[axis] = n - 1 - i;
            size[axis] = 1;
            parts[i] = f.sliceBySize(v, begin, size);
        }
        return f.concat(axis, parts);
    }

    /** v with axes 0 and 1 swapped. */
    Value swap01(Value v) {
        int[] perm = new int[v.rank()];
        for (int i = 0; i < perm.length; i++) perm[i] = i;
        perm[0] = 1;
        perm[1] = 0;
        return f.transpose(v, perm);
    }

    Value slice(Value v, int axis, int begin, int size) {
        int[] s = v.shape(), b = new int[s.length];
        b[axis] = begin;
        s[axis] = size;
        return f.sliceBySize(v, b, s);
    }

    Value asFloat(Value mask, DType t) { return f.cast(mask, t); }

    static int prod(int[] s, int from, int to) {
        int p = 1;
        for (int i = from; i < to; i++) p *= s[i];
        return p;
    }

    static int[] range(int from, int to) {
        int[] r = new int[Math.max(0, to - from)];
        for (int i = 0; i < r.length; i++) r[i] = from + i;
        return r;
    }

    /** Argument map helper for raw op calls. */
    static Map<String, Arg> refs(Object... kv) {
        Map<String, Arg> m = new java.util.LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], Arg.of((Value) kv[i + 1]));
        return m;
    }

    static String shape(Value v) { return Shapes.str(v.shape()); }

    /** A rule that cannot handle this use of its op; {@link Grad} reports it with the op's line:col. */
    static final class Refusal extends RuntimeException {
        Refusal(String message) { super(message, null, false, false); }
    }
}
