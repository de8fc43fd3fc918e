package ane4j.mil.grad;

import ane4j.mil.DType;
import ane4j.mil.Fp16;
import ane4j.mil.Op;
import ane4j.mil.Value;

import java.util.Map;

/**
 * Vector-Jacobian products of the elementwise ops. g is the upstream gradient (the output's shape), out the op's
 * output; a broadcast operand's gradient is summed back to its shape by {@link Vjp#give}. Formulas as PyTorch's
 * derivatives.yaml (tools/autograd/derivatives.yaml), which {@code tools/gen_grad_golden.py} checks them against.
 */
final class ElementwiseRules {
    private ElementwiseRules() {}

    static void register(Map<Op, Rule> t) {
        // z = x + y          dx = g              dy = g
        t.put(Op.ADD, c -> { c.give("x", c.g()); c.give("y", c.g()); });
        // z = x − y          dx = g              dy = −g
        t.put(Op.SUB, c -> { c.give("x", c.g()); if (c.needs("y")) c.give("y", c.neg(c.g())); });
        // z = x · y          dx = g · y          dy = g · x
        t.put(Op.MUL, c -> {
            if (c.needs("x")) c.give("x", c.mul(c.g(), c.x("y")));
            if (c.needs("y")) c.give("y", c.mul(c.g(), c.x("x")));
        });
        // z = x / y          dx = g / y          dy = −g · z / y
        t.put(Op.REAL_DIV, c -> {
            if (c.needs("x")) c.give("x", c.div(c.g(), c.x("y")));
            if (c.needs("y")) c.give("y", c.neg(c.div(c.mul(c.g(), c.out()), c.x("y"))));
        });
        // z = x ^ y          dx = g · y · x^(y−1)     dy = g · z · log(x)
        t.put(Op.POW, c -> {
            Value x = c.x("x"), y = c.x("y");
            if (c.needs("x")) c.give("x", c.mul(c.g(), c.mul(y, c.f.pow(x, c.add(y, -1)))));
            if (c.needs("y")) c.give("y", c.mul(c.mul(c.g(), c.out()), c.f.log(x)));
        });
        // y = 1/√(x + ε)     dx = g · (−½) · y³, multiplied left to right ((g·(−½y))·y)·y: y³ alone overflows fp16 from y ≈ 40
        t.put(Op.RSQRT, c -> {
            Value y = c.out();
            c.give("x", c.mul(c.mul(c.mul(c.g(), c.mul(y, -0.5)), y), y));
        });
        // y = √x             dx = g · ½ / y
        t.put(Op.SQRT, c -> c.give("x", c.div(c.mul(c.g(), 0.5), c.out())));
        // y = eˣ             dx = g · y
        t.put(Op.EXP, c -> c.give("x", c.mul(c.g(), c.out())));
        // y = log(x + ε)     dx = g / (x + ε)
        t.put(Op.LOG, c -> {
            Value x = c.x("x");
            float eps = c.lit("epsilon").floatValue();
            if (x.dtype() == DType.FP16) eps = Fp16.toFloat(Fp16.fromFloat(eps));   // 1e-45 is 0 in fp16
            c.give("x", c.div(c.g(), eps == 0 ? x : c.add(x, eps)));
        });
        // y = erf(x)         dx = g · 2/√π · e^(−x²)
        t.put(Op.ERF, c -> {
            Value x = c.x("x");
            c.give("x", c.mul(c.g(), c.mul(c.f.exp(c.neg(c.mul(x, x))), 2 / Math.sqrt(Math.PI))));
        });
        // y = σ(x)           dx = g · y · (1 − y)
        t.put(Op.SIGMOID, c -> c.give("x", c.mul(c.g(), c.mul(c.out(), c.rsub(1, c.out())))));
        // y = tanh(x)        dx = g · (1 − y²)
        t.put(Op.TANH, c -> c.give("x", c.mul(c.g(), c.rsub(1, c.mul(c.out(), c.out())))));
        // y = x · σ(x)       dx = g · σ(x) · (1 + x · (1 − σ(x)))
        t.put(Op.SILU, c -> {
            Value x = c.x("x"), s = c.f.sigmoid(x);
            c.give("x", c.mul(c.g(), c.mul(s, c.add(c.mul(x, c.rsub(1, s)), 1))));
        });
        // y = max(x, 0)      dx = g where x > 0, else 0
        t.put(Op.RELU, c -> {
            Value x = c.x("x");
            c.give("x", c.f.select(c.f.greater(x, c.c(x, 0)), c.g(), c.c(x, 0)));
        });
        // gelu, per mode (see the formulas in GELU below)
        t.put(Op.GELU, ElementwiseRules::gelu);
        // y = cast(x)        dx = cast(g) back to x's type (fp16 ↔ fp32)
        t.put(Op.CAST, c -> c.give("x", c.g()));
        // y = x              dx = g
        t.put(Op.IDENTITY, c -> c.give("x", c.g()));
        // y = cond ? a : b   da = cond ? g : 0     db = cond ? 0 : g
        t.put(Op.SELECT, c -> {
            Value zero = c.c(c.g(), 0), cond = c.x("cond");
            if (c.needs("a")) c.give("a", c.f.select(cond, c.g(), zero));
            if (c.needs("b")) c.give("b", c.f.select(cond, zero, c.g()));
        });
    }

    /**
     * gelu:
     * EXACT                 y = x·Φ(x)                      dx = g · (Φ(x) + x·φ(x)),  Φ = ½(1 + erf(x/√2)), φ = e^(−x²/2)/√(2π)
     * TANH_APPROXIMATION    y = ½x(1 + tanh u),  u = √(2/π)(x + 0.044715x³)
     *                                                       dx = g · (½(1 + t) + ½x(1 − t²) · √(2/π)(1 + 3·0.044715x²)),  t = tanh u
     * SIGMOID_APPROXIMATION y = x·σ(1.702x)                 dx = g · (s + 1.702·x·s(1 − s)),  s = σ(1.702x)
     */
    private static void gelu(Vjp c) {
        Value x = c.x("x"), g = c.g(), d;
        switch (c.lit("mode").stringValue()) {
            case "TANH_APPROXIMATION" -> {
                double k = Math.sqrt(2 / Math.PI);
                Value x2 = c.mul(x, x);
                Value t = c.f.tanh(c.mul(c.mul(x, c.add(c.mul(x2, 0.044715), 1)), k));
                Value left = c.mul(c.add(t, 1), 0.5);
                Value right = c.mul(c.mul(c.mul(x, c.rsub(1, c.mul(t, t))), 0.5 * k), c.add(c.mul(x2, 3 * 0.044715), 1));
                d = c.add(left, right);
            }
            case "SIGMOID_APPROXIMATION" -> {
                Value s = c.f.sigmoid(c.mul(x, 1.702));
                d = c.add(s, c.mul(c.mul(x, 1.702), c.mul(s, c.rsub(1, s))));
            }
            default -> {
                Value cdf = c.mul(c.add(c.f.erf(c.mul(x, 1 / Math.sqrt(2))), 1), 0.5);
                Value pdf = c.mul(c.f.exp(c.mul(c.mul(x, x), -0.5)), 1 / Math.sqrt(2 * Math.PI));
                d = c.add(cdf, c.mul(x, pdf));
            }
        }
        c.give("x", c.mul(g, d));
    }
}
