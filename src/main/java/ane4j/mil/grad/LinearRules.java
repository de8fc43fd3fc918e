package ane4j.mil.grad;

import ane4j.mil.Literal;
import ane4j.mil.Op;
import ane4j.mil.Shapes;
import ane4j.mil.Value;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Vector-Jacobian products of matmul, linear and conv. A, B are matmul's operands after its transposes (z = A·B);
 * batch dimensions that were broadcast are summed back by {@link Vjp#give}.
 */
final class LinearRules {
    private LinearRules() {}

    static void register(Map<Op, Rule> t) {
        t.put(Op.MATMUL, LinearRules::matmul);
        // y = x · Wᵀ + b     dx = g · W     dW = Σ_rows gᵀ · x     db = Σ_rows g
        t.put(Op.LINEAR, c -> {
            Value x = c.x("x"), w = c.x("weight"), g = c.g();
            int din = w.shape()[1], dout = w.shape()[0];
            if (c.needs("x")) c.give("x", c.f.matmul(g, w));
            int rows = (int) (x.type().count() / din);
            Value g2 = g.rank() == 2 ? g : c.f.reshape(g, rows, dout);
            if (c.needs("weight")) c.give("weight", c.f.matmul(g2, x.rank() == 2 ? x : c.f.reshape(x, rows, din), true, false));
            if (c.needs("bias")) c.give("bias", c.f.reshape(c.f.reduceSum(g2, true, 0), dout));
        });
        t.put(Op.CONV, LinearRules::conv);
    }

    /**
     * z = A · B with A = xᵀ if transpose_x else x, B = yᵀ if transpose_y else y:
     *   dA = g · Bᵀ   →  dx = matmul(g, y, tY = !transpose_y)        or, transposed, dx = matmul(y, g, transpose_y, true)
     *   dB = Aᵀ · g   →  dy = matmul(x, g, tX = !transpose_x)        or, transposed, dy = matmul(g, x, true, transpose_x)
     * A rank-1 operand is a [1, K] row (x) or a [K, 1] column (y), as numpy; g gets the dropped dimension back.
     */
    private static void matmul(Vjp c) {
        Value x = c.x("x"), y = c.x("y"), g = c.g();
        boolean tx = c.lit("transpose_x").boolValue(), ty = c.lit("transpose_y").boolValue();
        Value x2 = x.rank() == 1 ? c.f.reshape(x, 1, x.shape()[0]) : x;
        Value y2 = y.rank() == 1 ? c.f.reshape(y, y.shape()[0], 1) : y;
        if (x.rank() == 1 || y.rank() == 1) {
            // g without the dims numpy dropped: [..., M, N] with M = 1 for a rank-1 x, N = 1 for a rank-1 y
            int[] gs = g.shape();
            List<Integer> s = new ArrayList<>();
            for (int d : gs) s.add(d);
            if (x.rank() == 1) s.add(y.rank() == 1 ? s.size() : s.size() - 1, 1);
            if (y.rank() == 1) s.add(1);
            g = c.f.reshape(g, s.stream().mapToInt(Integer::intValue).toArray());
        }
        if (c.needs("x")) {
            Value dx = tx ? c.f.matmul(y2, g, ty, true) : c.f.matmul(g, y2, false, !ty);
            c.give("x", x.rank() == 1 ? c.f.reshape(c.unbroadcast(dx, x2.shape()), x.shape()) : dx);
        }
        if (c.needs("y")) {
            Value dy = ty ? c.f.matmul(g, x2, true, tx) : c.f.matmul(x2, g, !tx, false);
            c.give("y", y.rank() == 1 ? c.f.reshape(c.unbroadcast(dy, y2.shape()), y.shape()) : dy);
        }
    }

    /**
     * conv, per spatial dim: y[n, o, p] = Σ_{c,k} W[o, c, k] · x[n, c, p·s + k·d − pb] (+ b[o]), G groups.
     *   dx = conv(spread(g), flip(W) with in/out channels swapped per group, dilation d):
     *        g spread so element p lands at p·s + (K−1)·d − pb of a length H + (K−1)·d signal, then a valid conv
     *   dW = per group, conv(xᵀ, weight = gᵀ, stride d, dilation s) over the padded x, cut to K and transposed back
     *        (the batch plays the channels, the channels the batch)
     *   db = Σ_{n,p} g[n, o, p]
     */
    private static void conv(Vjp c) {
        Value x = c.x("x"), w = c.x("weight"), g = c.g();
        int spatial = x.rank() - 2;
        int groups = c.lit("groups").intValue();
        int[] k = new int[spatial], in = new int[spatial], eff = new int[spatial], s = ones(c.ints("strides"), spatial), d = ones(c.ints("dilations"), spatial);
        for (int i = 0; i < spatial; i++) {
            k[i] = w.shape()[2 + i];
            in[i] = x.shape()[2 + i];
            eff[i] = d[i] * (k[i] - 1) + 1;
        }
        Literal pl = c.lit("pad");
        int[] pads = Shapes.pads(c.lit("pad_type").stringValue(), pl == null ? new int[2 * spatial] : pl.toInts(), in, eff, s);
        int cin = x.shape()[1], cout = w.shape()[0], cinG = cin / groups, coutG = cout / groups;
        int[] ones = new int[spatial], valid = new int[2 * spatial];
        Arrays.fill(ones, 1);

        if (c.needs("x")) {
            Value gs = g;
            for (int i = 0; i < spatial; i++) gs = c.spread(gs, 2 + i, s[i], eff[i] - 1 - pads[2 * i], in[i] + eff[i] - 1);
            Value wf = w;
            for (int i = 0; i < spatial; i++) wf = c.reverse(wf, 2 + i);
            Value wt;
            if (groups == 1) wt = c.swap01(wf);
            else {
                // [G·Cout/G, Cin/G, K…] → [G, Cout/G, Cin/G, ΠK] → [G, Cin/G, Cout/G, ΠK] → [Cin, Cout/G, K…]
                int kp = Vjp.prod(k, 0, spatial);
                Value r = c.f.transpose(c.f.reshape(wf, groups, coutG, cinG, kp), 0, 2, 1, 3);
                int[] back = new int[2 + spatial];
                back[0] = cin;
                back[1] = coutG;
                System.arraycopy(k, 0, back, 2, spatial);
                wt = c.f.reshape(r, back);
            }
            c.give("x", c.f.conv(gs, wt, null, ones, "valid", valid, d, groups));
        }
        if (c.needs("weight")) {
            Value xp = x;
            for (int i = 0; i < spatial; i++) {
                int o = g.shape()[2 + i];
                int needed = (o - 1) * s[i] + eff[i];                   // the padded length the forward read
                xp = c.padOrCrop(xp, 2 + i, pads[2 * i], needed - in[i] - pads[2 * i], 0);
            }
            List<Value> parts = new ArrayList<>();
            for (int gi = 0; gi < groups; gi++) {
                Value xg = groups == 1 ? xp : c.slice(xp, 1, gi * cinG, cinG);
                Value gg = groups == 1 ? g : c.slice(g, 1, gi * coutG, coutG);
                // [Cin/G, N, Hp…] conv [Cout/G, N, O…] → [Cin/G, Cout/G, K…] (stride d, dilation s)
                Value r = c.f.conv(c.swap01(xg), c.swap01(gg), null, d, "valid", valid, s, 1);
                int[] begin = new int[r.rank()], size = r.shape();
                for (int i = 0; i < spatial; i++) size[2 + i] = k[i];
                if (!Arrays.equals(size, r.shape())) r = c.f.sliceBySize(r, begin, size);
                parts.add(c.swap01(r));
            }
            c.give("weight", parts.size() == 1 ? parts.get(0) : c.f.concat(0, parts.toArray(Value[]::new)));
        }
        if (c.needs("bias")) {
            int[] axes = new int[1 + spatial];
            for (int i = 1; i < axes.length; i++) axes[i] = i + 1;
            c.give("bias", c.f.reshape(c.f.reduceSum(g, true, axes), cout));
        }
    }

    private static int[] ones(int[] v, int n) {
        if (v != null) return v;
        int[] o = new int[n];
        Arrays.fill(o, 1);
        return o;
    }
}
