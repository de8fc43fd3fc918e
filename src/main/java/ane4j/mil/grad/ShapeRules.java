package ane4j.mil.grad;

import ane4j.mil.DType;
import ane4j.mil.Literal;
import ane4j.mil.Op;
import ane4j.mil.TensorType;
import ane4j.mil.Value;

import java.util.List;
import java.util.Map;

/** Vector-Jacobian products of the ops that move values: each sends g back to where the values came from. */
final class ShapeRules {
    private ShapeRules() {}

    static void register(Map<Op, Rule> t) {
        // y = reshape(x)           dx = reshape(g, shape of x)
        t.put(Op.RESHAPE, c -> c.give("x", c.f.reshape(c.g(), c.x("x").shape())));
        // y = transpose(x, p)      dx = transpose(g, p⁻¹)
        t.put(Op.TRANSPOSE, c -> {
            int[] p = c.ints("perm"), inv = new int[p.length];
            for (int i = 0; i < p.length; i++) inv[p[i] < 0 ? p[i] + p.length : p[i]] = i;
            c.give("x", c.f.transpose(c.g(), inv));
        });
        // y = x[b : b + s]         dx = g placed at b, zeros elsewhere
        t.put(Op.SLICE_BY_SIZE, c -> {
            Value x = c.x("x"), d = c.g();
            int[] xs = x.shape(), ys = c.out().shape(), begin = c.ints("begin");
            for (int a = 0; a < xs.length; a++) {
                int b = begin[a] < 0 ? begin[a] + xs[a] : begin[a];
                if (ys[a] != xs[a]) d = c.padOrCrop(d, a, b, xs[a] - b - ys[a], 0);
            }
            c.give("x", d);
        });
        // y = concat(x₀, x₁, …)    dxₖ = g[offsetₖ : offsetₖ + sizeₖ] along the axis
        //   interleave: y[j·n + k] = xₖ[j], so dxₖ = g viewed as [..., m, n, ...] at k
        t.put(Op.CONCAT, c -> {
            List<Value> xs = c.xs("values");
            int rank = xs.get(0).rank(), axis = c.lit("axis").intValue();
            if (axis < 0) axis += rank;
            boolean interleave = c.lit("interleave").boolValue();
            int off = 0, n = xs.size();
            for (int k = 0; k < n; k++) {
                int size = xs.get(k).shape()[axis];
                if (c.needs("values", k)) {
                    if (!interleave) c.give("values", k, c.slice(c.g(), axis, off, size));
                    else {
                        int[] s = c.g().shape();
                        int pre = Vjp.prod(s, 0, axis), post = Vjp.prod(s, axis + 1, s.length);
                        Value r = c.f.reshape(c.g(), pre, size, n, post);
                        c.give("values", k, c.f.reshape(c.slice(r, 2, k, 1), xs.get(k).shape()));
                    }
                }
                off += size;
            }
        });
        // (y₀, y₁, …) = split(x)   dx = concat(g₀, g₁, …), zeros for outputs that do not reach the loss
        t.put(Op.SPLIT, c -> {
            int n = c.op.outputs().size(), axis = c.lit("axis").intValue();
            Value[] parts = new Value[n];
            for (int i = 0; i < n; i++) parts[i] = c.g(i) != null ? c.g(i) : c.zeros(c.out(i).type());
            c.give("x", c.f.concat(axis, parts));
        });
        // y = tile(x, r)           dx = Σ over the r copies, one axis at a time ([pre, r, d, post] summed over r)
        t.put(Op.TILE, c -> {
            Value x = c.x("x"), d = c.g();
            int[] reps = c.ints("reps"), xs = x.shape();
            for (int a = 0; a < reps.length; a++) {
                if (reps[a] == 1) continue;
                int[] s = d.shape();
                int pre = Vjp.prod(s, 0, a), post = Vjp.prod(s, a + 1, s.length);
                Value r = c.f.reduceSum(c.f.reshape(d, pre, reps[a], xs[a], post), false, 1);
                int[] back = s.clone();
                back[a] = xs[a];
                d = c.f.reshape(r, back);
            }
            c.give("x", d);
        });
        t.put(Op.GATHER, ShapeRules::gather);
    }

    /**
     * y = gather(x, idx) along axis a (batch_dims 0), x [P, V, Q] as three blocks, y [P, J, Q]:
     *   dx[p, v, q] = Σ_j [idx_j = v] · g[p, j, q]  =  (onehot(idx)ᵀ · g as [J, P·Q]) as [V, P, Q], moved back to [P, V, Q]
     * with onehot(idx) [J, V] = cast(equal(idx as [J, 1], [0 … V−1])). Indices must be in 0..V−1 (negative ones would
     * count from the end in the forward, not here).
     */
    private static void gather(Vjp c) {
        Value x = c.x("x"), idx = c.x("indices"), g = c.g();
        if (c.lit("batch_dims").intValue() != 0)
            throw new Vjp.Refusal("gather with batch_dims " + c.lit("batch_dims").intValue() + " has no gradient rule; use batch_dims 0");
        int[] xs = x.shape();
        int axis = c.lit("axis").intValue();
        if (axis < 0) axis += xs.length;
        int p = Vjp.prod(xs, 0, axis), v = xs[axis], q = Vjp.prod(xs, axis + 1, xs.length);
        int j = (int) idx.type().count();
        Value ids = idx.dtype() == DType.INT32 ? idx : c.f.cast(idx, DType.INT32);
        int[] classes = Vjp.range(0, v);
        Value hot = c.f.cast(c.f.equal(c.f.reshape(ids, j, 1), c.f.constant(Literal.of(TensorType.of(DType.INT32, 1, v), classes))), x.dtype());
        Value gj = c.f.reshape(c.f.transpose(c.f.reshape(g, p, j, q), 1, 0, 2), j, p * q);      // [J, P·Q]
        Value dv = c.f.matmul(hot, gj, true, false);                                            // [V, P·Q]
        Value dx = c.f.transpose(c.f.reshape(dv, v, p, q), 1, 0, 2);                             // [P, V, Q]
        c.give("x", c.f.reshape(dx, xs));
    }
}
