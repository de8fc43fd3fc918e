package ane4j.mil.grad;

import ane4j.mil.Literal;
import ane4j.mil.Op;
import ane4j.mil.Shapes;
import ane4j.mil.Value;

import java.util.Map;

/**
 * Vector-Jacobian products of avg_pool and max_pool, one kernel offset κ at a time (kernels are small): output p of
 * a spatial dim reads x[p·s + κ − pb], so the gradient of that window element is spread back to the same place.
 *   avg_pool  dx = Σ_κ spread_κ(g / |window|)            (|window| = ΠK, or the elements inside x with exclude_padding)
 *   max_pool  dx = Σ_κ spread_κ(g · m_κ / Σ_κ' m_κ'),   m_κ = [x_κ = y] (ties share the gradient, as torch.amax)
 */
final class PoolRules {
    private PoolRules() {}

    static void register(Map<Op, Rule> t) {
        t.put(Op.AVG_POOL, c -> pool(c, false));
        t.put(Op.MAX_POOL, c -> pool(c, true));
    }

    private static void pool(Vjp c, boolean max) {
        Value x = c.x("x"), y = c.out(), g = c.g();
        int spatial = x.rank() - 2;
        int[] k = c.ints("kernel_sizes"), s = c.ints("strides"), in = new int[spatial], o = new int[spatial];
        if (s == null) { s = new int[spatial]; java.util.Arrays.fill(s, 1); }
        for (int i = 0; i < spatial; i++) { in[i] = x.shape()[2 + i]; o[i] = y.shape()[2 + i]; }
        Literal pl = c.lit("pad");
        int[] pads = Shapes.pads(c.lit("pad_type").stringValue(), pl == null ? new int[2 * spatial] : pl.toInts(), in, k, s);
        int windows = Vjp.prod(k, 0, spatial);

        // the scale of each output's gradient: 1/|window| (avg), or m_κ / count (max)
        Value[] masks = new Value[windows];
        Value scale;
        if (max) {
            Value count = null;
            for (int w = 0; w < windows; w++) {
                int[] kappa = offset(w, k);
                Value xk = x;
                for (int i = 0; i < spatial; i++) xk = c.gatherStrided(xk, 2 + i, s[i], kappa[i] - pads[2 * i], o[i], Double.NEGATIVE_INFINITY);
                masks[w] = c.asFloat(c.f.equal(xk, y), x.dtype());
                count = count == null ? masks[w] : c.add(count, masks[w]);
            }
            scale = c.div(g, count);
        } else if (c.lit("exclude_padding_from_average").boolValue()) {
            scale = c.div(g, insideCounts(c, y, k, s, in, o, pads));
        } else scale = c.mul(g, 1.0 / windows);

        Value dx = null;
        for (int w = 0; w < windows; w++) {
            int[] kappa = offset(w, k);
            Value part = max ? c.mul(scale, masks[w]) : scale;
            for (int i = 0; i < spatial; i++) part = c.spread(part, 2 + i, s[i], kappa[i] - pads[2 * i], in[i]);
            dx = dx == null ? part : c.add(dx, part);
        }
        c.give("x", dx);
    }

    /** Kernel offset number w as per-dim offsets (row-major over the kernel). */
    private static int[] offset(int w, int[] k) {
        int[] kappa = new int[k.length];
        for (int i = k.length - 1; i >= 0; i--) { kappa[i] = w % k[i]; w /= k[i]; }
        return kappa;
    }

    /** How many elements of each output's window lie inside x, as a [1, 1, O…] constant. */
    private static Value insideCounts(Vjp c, Value y, int[] k, int[] s, int[] in, int[] o, int[] pads) {
        int spatial = k.length, n = Vjp.prod(o, 0, spatial);
        float[] counts = new float[n];
        for (int e = 0; e < n; e++) {
            int rem = e, prod = 1;
            for (int i = spatial - 1; i >= 0; i--) {
                int p = rem % o[i];
                rem /= o[i];
                int lo = Math.max(0, p * s[i] - pads[2 * i]), hi = Math.min(in[i], p * s[i] - pads[2 * i] + k[i]);
                prod *= Math.max(0, hi - lo);
            }
            counts[e] = Math.max(prod, 1);
        }
        int[] shape = new int[2 + spatial];
        shape[0] = 1;
        shape[1] = 1;
        System.arraycopy(o, 0, shape, 2, spatial);
        return c.f.constant(Literal.ofFloats(y.type().withShape(shape), counts));
    }
}
