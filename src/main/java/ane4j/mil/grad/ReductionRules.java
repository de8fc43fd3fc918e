package ane4j.mil.grad;

import ane4j.mil.Literal;
import ane4j.mil.Op;
import ane4j.mil.TensorType;
import ane4j.mil.Value;

import java.util.Arrays;
import java.util.Map;

/**
 * Vector-Jacobian products of the reductions, softmax and layer_norm. gₖ is the upstream gradient reshaped to the
 * keep_dims shape of the reduction (so it broadcasts against x); n the number of elements reduced.
 */
final class ReductionRules {
    private ReductionRules() {}

    static void register(Map<Op, Rule> t) {
        // y = Σ x            dx = gₖ broadcast to x
        t.put(Op.REDUCE_SUM, c -> c.give("x", c.expand(keptGrad(c), c.x("x").shape())));
        // y = Σ x / n        dx = gₖ / n broadcast to x
        t.put(Op.REDUCE_MEAN, c -> {
            Value x = c.x("x");
            long n = x.type().count() / c.out().type().count();
            c.give("x", c.expand(c.mul(keptGrad(c), 1.0 / n), x.shape()));
        });
        // y = max x          dx = gₖ · [x = yₖ] / #{x = yₖ}   (ties share the gradient, as torch.amax)
        t.put(Op.REDUCE_MAX, c -> {
            Value x = c.x("x");
            int[] axes = axes(c);
            Value yk = kept(c, c.out());
            Value mask = c.asFloat(c.f.equal(x, yk), x.dtype());
            Value count = c.f.reduceSum(mask, true, axes);
            c.give("x", c.mul(mask, c.div(keptGrad(c), count)));
        });
        // y = softmax(x)     dx = y · (g − Σₐ g·y)   along the softmax axis a
        t.put(Op.SOFTMAX, c -> {
            Value y = c.out(), g = c.g();
            int axis = c.lit("axis").intValue();
            c.give("x", c.mul(y, c.sub(g, c.f.reduceSum(c.mul(g, y), true, axis))));
        });
        t.put(Op.LAYER_NORM, ReductionRules::layerNorm);
    }

    /**
     * layer_norm over axes A (γ, β constants): x̂ = (x − μ) · r,  r = 1/√(σ² + ε),  y = x̂ · γ + β
     * dx = r · (d − mean_A(d) − x̂ · mean_A(d · x̂)),  d = g · γ
     */
    private static void layerNorm(Vjp c) {
        Value x = c.x("x");
        int rank = x.rank();
        int[] axes = c.ints("axes");
        if (axes == null) axes = Vjp.range(0, rank);
        axes = Arrays.stream(axes).map(a -> a < 0 ? a + rank : a).toArray();
        float eps = c.lit("epsilon").floatValue();
        Value mu = c.f.reduceMean(x, true, axes);
        Value xc = c.sub(x, mu);
        Value var = c.f.reduceMean(c.mul(xc, xc), true, axes);
        Value r = c.f.rsqrt(c.add(var, eps));
        Value xhat = c.mul(xc, r);
        Value d = c.g();
        Literal gamma = c.lit("gamma");
        if (gamma != null) {
            // γ has the normalized shape; as a constant of x's rank (1 on the other axes) it broadcasts against g
            int[] s = new int[rank];
            Arrays.fill(s, 1);
            int[] gs = gamma.type().shape();
            for (int i = 0; i < axes.length; i++) s[axes[i]] = gs[i];
            d = c.mul(d, c.f.constant(Literal.ofFloats(TensorType.of(x.dtype(), s), gamma.toFloats())));
        }
        Value meanD = c.f.reduceMean(d, true, axes);
        Value meanDx = c.f.reduceMean(c.mul(d, xhat), true, axes);
        c.give("x", c.mul(r, c.sub(c.sub(d, meanD), c.mul(xhat, meanDx))));
    }

    /** The reduced axes (null: all) as non-negative ints. */
    static int[] axes(Vjp c) {
        int rank = c.x("x").rank();
        int[] axes = c.ints("axes");
        if (axes == null) return Vjp.range(0, rank);
        return Arrays.stream(axes).map(a -> a < 0 ? a + rank : a).toArray();
    }

    /** v (an output-shaped value) reshaped to the keep_dims shape. */
    static Value kept(Vjp c, Value v) {
        int[] k = Vjp.kept(c.x("x").shape(), axes(c));
        return Arrays.equals(v.shape(), k) ? v : c.f.reshape(v, k);
    }

    static Value keptGrad(Vjp c) { return kept(c, c.g()); }
}
