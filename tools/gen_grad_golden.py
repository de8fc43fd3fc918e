#!/usr/bin/python3
"""Gradient goldens for ane4j's reverse-mode MIL differentiation (ane4j.mil.grad, `ane4j mil grad`).

Writes src/test/resources/golden/grad/grad.json: one case per rule (and a few small networks), each in fp32 and in
fp16 storage. A case is a MIL program (text, written here, ios18 dialect), the name of its loss output, the inputs to
differentiate (wrt), input values, and PyTorch autograd's loss value and gradients. GradGoldenTest parses each
program, differentiates it with Mil.grad, runs the gradient program on the reference backend and compares.

Run from the repository root:  /usr/bin/python3 tools/gen_grad_golden.py   (Debian's python3-torch 1.13 + numpy)
Deterministic: fixed seeds, no timestamps; a rerun rewrites a byte-identical file.

How the expected values are computed: every op is evaluated here in float64 by PyTorch on the inputs as stored (fp16
cases: inputs rounded to fp16 first) and torch.autograd gives the gradients; the results are rounded once to float32.
The ops' semantics are MIL's (coremltools ops/defs/iOS15): conv/pool padding as pad_type custom, same, same_lower;
gelu's three modes; log(x + epsilon); rsqrt 1/sqrt(x + epsilon). Tolerances (checked as
|actual - expected| <= atol + rtol * max|expected| per tensor): fp32 storage 1e-4 relative to the tensor's largest
value (fp32 accumulation order against float64), fp16 storage 2e-2 (every op's result is rounded to fp16 on the
reference backend, as on the ANE, and a backward chains several).
"""
import json
import os

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "test", "resources", "golden", "grad", "grad.json")
TOL = {"fp32": [1e-5, 1e-4], "fp16": [1e-3, 2e-2]}


def fmt(v):
    return repr(float(v))


class V:
    def __init__(self, name, t, dtype):
        self.name, self.t, self.dtype = name, t, dtype

    @property
    def shape(self):
        return list(self.t.shape)


class G:
    """Builds MIL text and evaluates it in float64 with autograd at the same time."""

    def __init__(self, dt, seed):
        self.dt = dt
        self.lines, self.ins, self.feeds = [], [], {}
        self.n = 0
        self.gen = torch.Generator().manual_seed(seed)

    def _name(self, p):
        self.n += 1
        return "%s_%d" % (p, self.n)

    @staticmethod
    def ty(dtype, shape):
        return "tensor<%s, [%s]>" % (dtype, ", ".join(str(d) for d in shape)) if len(shape) else dtype

    def rnd(self, shape, lo=-1.0, hi=1.0):
        return torch.rand(shape, generator=self.gen, dtype=torch.float64) * (hi - lo) + lo

    def store(self, t, dtype=None):
        dtype = dtype or self.dt
        if dtype == "fp16":
            return t.to(torch.float16).to(torch.float64)
        if dtype == "fp32":
            return t.to(torch.float32).to(torch.float64)
        return t

    def input(self, name, shape, lo=-1.0, hi=1.0, grad=True, dtype=None):
        dtype = dtype or self.dt
        t = self.store(self.rnd(shape, lo, hi), dtype).requires_grad_(grad)
        self.ins.append("%s %s" % (self.ty(dtype, shape), name))
        self.feeds[name] = (dtype, t)
        return V(name, t, dtype)

    def int_input(self, name, values):
        t = torch.tensor(values, dtype=torch.int64)
        self.ins.append("%s %s" % (self.ty("int32", list(t.shape)), name))
        self.feeds[name] = ("int32", t)
        return V(name, t, "int32")

    def _const(self, ty, val):
        n = self._name("c")
        self.lines.append('%s %s = const()[name = string("%s"), val = %s(%s)];' % (ty, n, n, ty, val))
        return n

    def ints(self, v):
        return self._const(self.ty("int32", [len(v)]), "[%s]" % ", ".join(str(int(x)) for x in v))

    def int32(self, v):
        return self._const("int32", str(int(v)))

    def boolean(self, v):
        return self._const("bool", "true" if v else "false")

    def string(self, v):
        return self._const("string", '"%s"' % v)

    def scalar(self, v, dtype=None):
        dtype = dtype or self.dt
        n = self._const(dtype, fmt(v))
        return V(n, self.store(torch.tensor(float(v), dtype=torch.float64), dtype), dtype)

    def tensor(self, t, dtype=None):
        dtype = dtype or self.dt
        t = self.store(t, dtype)
        n = self._const(self.ty(dtype, list(t.shape)), "[%s]" % ", ".join(fmt(x) for x in t.flatten().tolist()))
        return V(n, t, dtype)

    def op(self, op, out, odt=None, name=None, **args):
        dtype = odt or self.dt
        name = name or self._name(op)
        a = ", ".join("%s = %s" % (k, (v.name if isinstance(v, V) else "(%s)" % ", ".join(x.name for x in v) if isinstance(v, (list, tuple)) else v))
                      for k, v in sorted(args.items()))
        self.lines.append('%s %s = %s(%s)[name = string("%s")];' % (self.ty(dtype, list(out.shape)), name, op, a, name))
        return V(name, out, dtype)

    def text(self, outputs):
        body = "\n".join("        " + l for l in self.lines)
        return ("program(1.3)\n[buildInfo = dict<string, string>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n"
                "    func main<ios18>(%s) {\n%s\n    } -> (%s);\n}\n") % (", ".join(self.ins), body, ", ".join(o.name for o in outputs))

    # -- ops (MIL name, MIL parameters, the float64 reference) --------------------------------------------------
    def bin(self, op, x, y, f):
        return self.op(op, f(x.t, y.t), x=x, y=y)

    def add(self, x, y): return self.bin("add", x, y, torch.add)
    def sub(self, x, y): return self.bin("sub", x, y, torch.sub)
    def mul(self, x, y): return self.bin("mul", x, y, torch.mul)
    def div(self, x, y): return self.bin("real_div", x, y, torch.div)
    def pow(self, x, y): return self.bin("pow", x, y, torch.pow)

    def un(self, op, x, f, **extra):
        return self.op(op, f(x.t), x=x, **extra)

    def reduce(self, op, x, axes, keep, f):
        return self.op(op, f(x.t, axes, keep), x=x, axes=self.ints(axes), keep_dims=self.boolean(keep))

    def matmul(self, x, y, tx=False, ty=False):
        a = x.t.transpose(-1, -2) if tx and x.t.dim() > 1 else x.t
        b = y.t.transpose(-1, -2) if ty and y.t.dim() > 1 else y.t
        return self.op("matmul", torch.matmul(a, b), x=x, y=y, transpose_x=self.boolean(tx), transpose_y=self.boolean(ty))

    def softmax(self, x, axis):
        return self.op("softmax", torch.softmax(x.t, axis), x=x, axis=self.int32(axis))

    def reshape(self, x, shape):
        return self.op("reshape", x.t.reshape(shape), x=x, shape=self.ints(shape))

    def transpose(self, x, perm):
        return self.op("transpose", x.t.permute(perm), x=x, perm=self.ints(perm))

    def slice(self, x, begin, size):
        idx = tuple(slice(b, b + s) for b, s in zip(begin, size))
        return self.op("slice_by_size", x.t[idx], x=x, begin=self.ints(begin), size=self.ints(size))

    def conv(self, x, w, b=None, strides=None, pad_type="valid", pad=None, dil=None, groups=1):
        sp = x.t.dim() - 2
        strides, dil = strides or [1] * sp, dil or [1] * sp
        pad = pad or [0] * (2 * sp)
        k = list(w.t.shape[2:])
        pads = mil_pads(pad_type, pad, list(x.t.shape[2:]), [d * (kk - 1) + 1 for d, kk in zip(dil, k)], strides)
        xp = F.pad(x.t, torch_pad(pads))
        conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[sp]
        out = conv(xp, w.t, b.t if b is not None else None, stride=strides, dilation=dil, groups=groups)
        args = dict(x=x, weight=w, strides=self.ints(strides), pad_type=self.string(pad_type), pad=self.ints(pad),
                    dilations=self.ints(dil), groups=self.int32(groups))
        if b is not None:
            args["bias"] = b
        return self.op("conv", out, **args)

    def pool(self, op, x, k, s, pad_type="valid", pad=None, exclude=False):
        sp = x.t.dim() - 2
        pad = pad or [0] * (2 * sp)
        pads = mil_pads(pad_type, pad, list(x.t.shape[2:]), k, s)
        if op == "max_pool":
            xp = F.pad(x.t, torch_pad(pads), value=float("-inf"))
            out = {1: F.max_pool1d, 2: F.max_pool2d}[sp](xp, k, s)
            extra = {}
        else:
            xp = F.pad(x.t, torch_pad(pads))
            out = {1: F.avg_pool1d, 2: F.avg_pool2d}[sp](xp, k, s)
            if exclude:
                ones = F.pad(torch.ones_like(x.t), torch_pad(pads))
                out = {1: F.avg_pool1d, 2: F.avg_pool2d}[sp](xp, k, s) / {1: F.avg_pool1d, 2: F.avg_pool2d}[sp](ones, k, s)
            extra = {"exclude_padding_from_average": self.boolean(exclude)}
        return self.op(op, out, x=x, kernel_sizes=self.ints(k), strides=self.ints(s), pad_type=self.string(pad_type),
                       pad=self.ints(pad), ceil_mode=self.boolean(False), **extra)


def mil_pads(pad_type, pad, inp, kernel, strides):
    """conv/pool padding per spatial dim as [before0, after0, ...], as Shapes.pads and coremltools."""
    out = []
    for i, n in enumerate(inp):
        if pad_type == "custom":
            out += [pad[2 * i], pad[2 * i + 1]]
        elif pad_type in ("same", "same_lower"):
            o = (n + strides[i] - 1) // strides[i]
            total = max(0, (o - 1) * strides[i] + kernel[i] - n)
            before = total // 2 if pad_type == "same" else total - total // 2
            out += [before, total - before]
        else:
            out += [0, 0]
    return out


def torch_pad(pads):
    # F.pad takes the last dim first
    res = []
    for i in reversed(range(len(pads) // 2)):
        res += [pads[2 * i], pads[2 * i + 1]]
    return res


# ---------------------------------------------------------------------------------------------------------------------
# the cases: each returns (graph, loss value, wrt names); a loss with more than one element gets a random upstream
# gradient d_<loss> as an extra input

def unary(op, f, lo=-2.0, hi=2.0, **extra):
    def case(g):
        x = g.input("x", [3, 5], lo, hi)
        kw = {}
        for k, v in extra.items():
            kw[k] = g.string(v) if isinstance(v, str) else g.scalar(v).name
        return g.un(op, x, f, **kw), ["x"]
    return case


def gelu_ref(mode):
    if mode == "EXACT":
        return lambda t: F.gelu(t)
    if mode == "TANH_APPROXIMATION":
        return lambda t: F.gelu(t, approximate="tanh")
    return lambda t: t * torch.sigmoid(1.702 * t)


def binary(op, fn, xs, ys, ylo=-1.0, yhi=1.0, xlo=-1.0, xhi=1.0):
    def case(g):
        x = g.input("x", xs, xlo, xhi)
        y = g.input("y", ys, ylo, yhi)
        return fn(g)(x, y), ["x", "y"]
    return case


def c_pow_const(g):
    x = g.input("x", [3, 4], 0.5, 2.0)
    return g.pow(x, g.scalar(3.0)), ["x"]


def c_reduce(op, axes, keep, f, shape=(2, 3, 4)):
    def case(g):
        x = g.input("x", list(shape))
        return g.reduce(op, x, axes, keep, f), ["x"]
    return case


def c_softmax(axis):
    def case(g):
        x = g.input("x", [2, 3, 5], -2, 2)
        return g.softmax(x, axis), ["x"]
    return case


def c_layer_norm(g):
    x = g.input("x", [2, 3, 6], -2, 2)
    gamma = g.store(g.rnd([6], 0.5, 1.5))
    beta = g.store(g.rnd([6]))
    cg, cb = g.tensor(gamma), g.tensor(beta)
    out = F.layer_norm(x.t, [6], gamma, beta, 1e-5)
    return g.op("layer_norm", out, x=x, axes=g.ints([-1]), gamma=cg, beta=cb, epsilon=g.scalar(1e-5).name), ["x"]


def c_layer_norm_middle(g):
    x = g.input("x", [2, 4, 3], -2, 2)
    mu = x.t.mean(dim=1, keepdim=True)
    var = ((x.t - mu) ** 2).mean(dim=1, keepdim=True)
    out = (x.t - mu) / torch.sqrt(var + 1e-5)
    return g.op("layer_norm", out, x=x, axes=g.ints([1]), epsilon=g.scalar(1e-5).name), ["x"]


def c_rmsnorm(g):
    # the RMSNorm pattern: x · rsqrt(mean(x²) + ε) · w
    x = g.input("x", [2, 8], -2, 2)
    w = g.input("w", [8], 0.5, 1.5)
    ms = g.reduce("reduce_mean", g.mul(x, x), [-1], True, lambda t, a, k: t.mean(dim=tuple(a), keepdim=k))
    eps = g.scalar(1e-5)
    r = g.un("rsqrt", g.add(ms, eps), lambda t: 1 / torch.sqrt(t + 1e-12))
    return g.mul(g.mul(x, r), w), ["x", "w"]


def c_matmul(xs, ys, tx, ty):
    def case(g):
        x, y = g.input("x", xs), g.input("y", ys)
        return g.matmul(x, y, tx, ty), ["x", "y"]
    return case


def c_linear(bias):
    def case(g):
        x, w = g.input("x", [2, 3, 5]), g.input("weight", [4, 5])
        args = dict(x=x, weight=w)
        out = F.linear(x.t, w.t)
        wrt = ["x", "weight"]
        if bias:
            b = g.input("bias", [4])
            args["bias"] = b
            out = F.linear(x.t, w.t, b.t)
            wrt.append("bias")
        return g.op("linear", out, **args), wrt
    return case


def c_conv(xs, ws, bias=False, **kw):
    def case(g):
        x, w = g.input("x", xs), g.input("weight", ws)
        b = g.input("bias", [ws[0]]) if bias else None
        return g.conv(x, w, b, **kw), ["x", "weight"] + (["bias"] if bias else [])
    return case


def c_pool(op, xs, k, s, **kw):
    def case(g):
        x = g.input("x", xs, -2, 2)
        return g.pool(op, x, k, s, **kw), ["x"]
    return case


def c_reshape(g):
    x = g.input("x", [2, 3, 4])
    return g.reshape(g.un("identity", g.mul(x, x), lambda t: t), [4, 6]), ["x"]


def c_transpose(g):
    x = g.input("x", [2, 3, 4])
    return g.transpose(g.mul(x, x), [2, 0, 1]), ["x"]


def c_slice(g):
    x = g.input("x", [3, 5, 4])
    return g.slice(x, [1, 1, 0], [2, 3, 4]), ["x"]


def c_concat(interleave):
    def case(g):
        x, y = g.input("x", [2, 3, 2]), g.input("y", [2, 3, 2])
        yy = g.mul(y, y)
        if not interleave:
            out = torch.cat([x.t, yy.t], dim=2)
        else:
            out = torch.stack([x.t, yy.t], dim=3).reshape(2, 3, 4)
        return g.op("concat", out, values=[x, yy], axis=g.int32(2), interleave=g.boolean(interleave)), ["x", "y"]
    return case


def c_split(g):
    x = g.input("x", [2, 6])
    parts = torch.split(x.t, [2, 4], dim=1)
    a = V("sp_1", parts[0], g.dt)
    b = V("sp_1_1", parts[1], g.dt)
    g.lines.append('%s sp_1, %s sp_1_1 = split(axis = %s, split_sizes = %s, x = x)[name = string("sp_1")];'
                   % (g.ty(g.dt, [2, 2]), g.ty(g.dt, [2, 4]), g.int32(1), g.ints([2, 4])))
    # only the second part reaches the loss: the first gets a zero gradient
    return g.mul(b, b), ["x"]


def c_tile(g):
    x = g.input("x", [2, 1, 3])
    return g.op("tile", x.t.repeat(2, 3, 2), x=x, reps=g.ints([2, 3, 2])), ["x"]


def c_select(g):
    c = g.input("c", [3, 4], grad=False)
    a, b = g.input("a", [3, 4]), g.input("b", [4])
    zero = g.scalar(0.0)
    cond = g.op("greater", c.t > 0, odt="bool", x=c, y=zero)
    return g.op("select", torch.where(cond.t, a.t, b.t), cond=cond, a=a, b=b), ["a", "b"]


def c_gather(axis):
    def case(g):
        if axis == 0:
            x = g.input("x", [7, 5])
            idx = g.int_input("indices", [[1, 6, 3], [3, 0, 1]])
            out = x.t[idx.t]
        else:
            x = g.input("x", [2, 6, 3])
            idx = g.int_input("indices", [5, 0, 5, 2])
            out = x.t[:, idx.t, :]
        return g.op("gather", out, x=x, indices=idx, axis=g.int32(axis), batch_dims=g.int32(0), validate_indices=g.boolean(False)), ["x"]
    return case


def c_cast(g):
    # fp16 ↔ fp32 casts on the path: the gradient is cast back
    x = g.input("x", [3, 4])
    other = "fp16" if g.dt == "fp32" else "fp32"
    c = g.op("cast", g.store(x.t, other), odt=other, x=x, dtype=g.string(other))
    sq = g.op("mul", g.store(c.t * c.t, other), odt=other, x=c, y=c)
    return g.op("cast", g.store(sq.t), x=sq, dtype=g.string(g.dt)), ["x"]


def log_softmax_ce(g, logits, onehot_t, onehot_v):
    """The cross-entropy composition FunctionBuilder.crossEntropy emits."""
    n = logits.shape[0]
    m = g.reduce("reduce_max", logits, [-1], True, lambda t, a, k: t.amax(dim=tuple(a), keepdim=k))
    # FunctionBuilder.stopGradient: an identity named stop_gradient_<n> (detach)
    m = g.op("identity", m.t.detach(), x=m, name="stop_gradient_%d" % g.n)
    z = g.sub(logits, m)
    lse = g.un("log", g.reduce("reduce_sum", g.un("exp", z, torch.exp), [-1], True, lambda t, a, k: t.sum(dim=tuple(a), keepdim=k)),
               lambda t: torch.log(t), epsilon=g.scalar(1e-45 if g.dt == "fp32" else 0.0).name)
    lp = g.sub(z, lse)
    picked = g.reduce("reduce_sum", g.mul(onehot_v, lp), [0, 1], True, lambda t, a, k: t.sum(dim=tuple(a), keepdim=k))
    return g.mul(g.reshape(picked, [1]), g.scalar(-1.0 / n))


def c_cross_entropy(g):
    logits = g.input("logits", [4, 5], -3, 3)
    labels = g.int_input("labels", [1, 4, 0, 4])
    cls = g._const(g.ty("int32", [1, 5]), "[[0, 1, 2, 3, 4]]")
    eq = g.op("equal", labels.t.reshape(4, 1) == torch.arange(5).reshape(1, 5), odt="bool",
              x=g.op("reshape", labels.t.reshape(4, 1), odt="int32", x=labels, shape=g.ints([4, 1])), y=cls)
    hot = g.op("cast", g.store(eq.t.double()), x=eq, dtype=g.string(g.dt))
    loss = log_softmax_ce(g, logits, hot.t, hot)
    ref = F.cross_entropy(logits.t, labels.t)
    assert abs(float(ref) - float(loss.t)) < 1e-9
    return loss, ["logits"]


def c_mlp(g):
    x = g.input("x", [6, 8], grad=False)
    w1, b1 = g.input("w1", [16, 8], -0.5, 0.5), g.input("b1", [16], -0.1, 0.1)
    w2, b2 = g.input("w2", [4, 16], -0.5, 0.5), g.input("b2", [4], -0.1, 0.1)
    t = g.input("t", [6, 4], 0, 1, grad=False)
    h = g.un("relu", g.op("linear", F.linear(x.t, w1.t, b1.t), x=x, weight=w1, bias=b1), torch.relu)
    logits = g.op("linear", F.linear(h.t, w2.t, b2.t), x=h, weight=w2, bias=b2)
    return log_softmax_ce(g, logits, t.t, t), ["w1", "b1", "w2", "b2"]


def c_cnn(g):
    x = g.input("x", [2, 1, 8, 8], 0, 1, grad=False)
    w1 = g.input("w1", [4, 1, 3, 3], -0.5, 0.5)
    b1 = g.input("b1", [4], -0.1, 0.1)
    h = g.un("relu", g.conv(x, w1, b1, pad_type="same"), torch.relu)
    p = g.pool("max_pool", h, [2, 2], [2, 2])
    f = g.reshape(p, [2, 64])
    w2 = g.input("w2", [3, 64], -0.2, 0.2)
    logits = g.op("linear", F.linear(f.t, w2.t), x=f, weight=w2)
    t = g.input("t", [2, 3], 0, 1, grad=False)
    return log_softmax_ce(g, logits, t.t, t), ["w1", "b1", "w2"]


def c_attention(g):
    # one causal attention head from matmul, softmax and a constant mask
    q, k, v = g.input("q", [1, 4, 8]), g.input("k", [1, 4, 8]), g.input("v", [1, 4, 8])
    s = g.matmul(q, k, False, True)
    s = g.mul(s, g.scalar(1 / np.sqrt(8)))
    mask = torch.triu(torch.full((4, 4), -1e4, dtype=torch.float64), 1).reshape(1, 4, 4)
    s = g.add(s, g.tensor(mask))
    p = g.softmax(s, -1)
    return g.matmul(p, v), ["q", "k", "v"]


CASES = {
    "add_broadcast": binary("add", lambda g: g.add, [2, 3, 4], [3, 1]),
    "sub_broadcast": binary("sub", lambda g: g.sub, [3, 4], [4]),
    "mul_broadcast": binary("mul", lambda g: g.mul, [2, 3, 4], [1, 3, 1]),
    "real_div": binary("real_div", lambda g: g.div, [3, 4], [3, 4], 0.5, 2.0),
    "pow_tensor": binary("pow", lambda g: g.pow, [3, 4], [3, 4], 0.5, 2.0, 0.5, 2.0),
    "pow_const": c_pow_const,
    "rsqrt": unary("rsqrt", lambda t: 1 / torch.sqrt(t + 1e-12), 0.5, 2.0),
    "sqrt": unary("sqrt", torch.sqrt, 0.5, 2.0),
    "exp": unary("exp", torch.exp),
    "log": unary("log", lambda t: torch.log(t), 0.5, 2.0),
    "erf": unary("erf", torch.erf),
    "sigmoid": unary("sigmoid", torch.sigmoid),
    "tanh": unary("tanh", torch.tanh),
    "silu": unary("silu", F.silu),
    "relu": unary("relu", torch.relu),
    "gelu_exact": unary("gelu", gelu_ref("EXACT"), mode="EXACT"),
    "gelu_tanh": unary("gelu", gelu_ref("TANH_APPROXIMATION"), mode="TANH_APPROXIMATION"),
    "gelu_sigmoid": unary("gelu", gelu_ref("SIGMOID_APPROXIMATION"), mode="SIGMOID_APPROXIMATION"),
    "softmax_last": c_softmax(-1),
    "softmax_axis1": c_softmax(1),
    "reduce_sum": c_reduce("reduce_sum", [1], False, lambda t, a, k: t.sum(dim=tuple(a), keepdim=k)),
    "reduce_mean": c_reduce("reduce_mean", [0, 2], True, lambda t, a, k: t.mean(dim=tuple(a), keepdim=k)),
    "reduce_max": c_reduce("reduce_max", [-1], False, lambda t, a, k: t.amax(dim=tuple(a), keepdim=k)),
    "layer_norm": c_layer_norm,
    "layer_norm_middle_axis": c_layer_norm_middle,
    "rmsnorm_pattern": c_rmsnorm,
    "matmul": c_matmul([3, 4], [4, 5], False, False),
    "matmul_transpose_x": c_matmul([4, 3], [4, 5], True, False),
    "matmul_transpose_y": c_matmul([3, 4], [5, 4], False, True),
    "matmul_transpose_both": c_matmul([2, 4, 3], [2, 5, 4], True, True),
    "matmul_batch_broadcast": c_matmul([2, 3, 4], [4, 5], False, False),
    "matmul_vector": c_matmul([2, 3, 4], [4], False, False),
    "linear": c_linear(False),
    "linear_bias": c_linear(True),
    "conv2d": c_conv([2, 3, 6, 6], [4, 3, 3, 3], bias=True),
    "conv2d_pad_stride": c_conv([1, 2, 7, 6], [3, 2, 3, 3], strides=[2, 2], pad_type="custom", pad=[1, 1, 1, 0]),
    "conv2d_dilation": c_conv([1, 2, 8, 8], [2, 2, 3, 3], dil=[2, 2], pad_type="same"),
    "conv2d_groups": c_conv([2, 4, 5, 5], [6, 2, 3, 3], bias=True, groups=2, pad_type="same_lower", strides=[2, 1]),
    "conv1d": c_conv([2, 3, 9], [2, 3, 4], strides=[2], pad_type="custom", pad=[2, 1]),
    "avg_pool": c_pool("avg_pool", [2, 2, 6, 6], [2, 2], [2, 2]),
    "avg_pool_pad": c_pool("avg_pool", [1, 2, 5, 5], [3, 3], [1, 1], pad_type="custom", pad=[1, 1, 1, 1]),
    "avg_pool_exclude_pad": c_pool("avg_pool", [1, 2, 5, 5], [3, 3], [2, 2], pad_type="custom", pad=[1, 1, 1, 1], exclude=True),
    "max_pool": c_pool("max_pool", [2, 2, 6, 6], [2, 2], [2, 2]),
    "max_pool_overlap_pad": c_pool("max_pool", [1, 2, 7, 6], [3, 3], [2, 2], pad_type="custom", pad=[1, 1, 1, 0]),
    "reshape": c_reshape,
    "transpose": c_transpose,
    "slice_by_size": c_slice,
    "concat": c_concat(False),
    "concat_interleave": c_concat(True),
    "split": c_split,
    "tile": c_tile,
    "select": c_select,
    "gather_embedding": c_gather(0),
    "gather_axis1": c_gather(1),
    "cast": c_cast,
    "cross_entropy": c_cross_entropy,
    "mlp": c_mlp,
    "cnn": c_cnn,
    "attention": c_attention,
    # conv weight gradients on the CPU (GraphStepConvTest): every geometry parameter at once, and three spatial dims
    "conv2d_all": c_conv([2, 6, 9, 8], [4, 3, 3, 2], bias=True, strides=[2, 3], dil=[2, 1], groups=2, pad_type="custom", pad=[2, 1, 0, 3]),
    "conv3d": c_conv([1, 2, 4, 5, 4], [3, 2, 2, 3, 2], strides=[1, 2, 1], dil=[1, 1, 2], pad_type="same"),
}


def tensor_json(dtype, t):
    t = t.detach()
    data = t.flatten().tolist() if dtype == "int32" else [float(np.float32(v)) for v in t.flatten().tolist()]
    return {"dtype": dtype, "shape": list(t.shape), "data": data}


def run(name, case, dt, seed):
    g = G(dt, seed)
    loss, wrt = case(g)
    text = g.text([loss])
    feeds = dict(g.feeds)
    if loss.t.numel() > 1:
        up = g.store(g.rnd(list(loss.t.shape)))
        feeds["d_" + loss.name] = (dt, up)
        total = (loss.t * up).sum()
    else:
        total = loss.t.sum()
    leaves = [g.feeds[w][1] for w in wrt]
    grads = torch.autograd.grad(total, leaves)
    return {
        "id": name + "." + dt, "dtype": dt, "mil": text, "loss": loss.name, "wrt": wrt,
        "inputs": {k: tensor_json(d, t) for k, (d, t) in feeds.items()},
        "expect": dict([(loss.name, tensor_json("fp32", loss.t))] + [("d_" + w, tensor_json("fp32", gr)) for w, gr in zip(wrt, grads)]),
        "tol": TOL[dt],
    }


def main():
    cases = []
    for i, (name, case) in enumerate(CASES.items()):
        for dt in ("fp32", "fp16"):
            cases.append(run(name, case, dt, 1000 + i))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"generator": "tools/gen_grad_golden.py", "torch": torch.__version__, "cases": cases}, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print("wrote %d cases to %s" % (len(cases), os.path.relpath(OUT)))


if __name__ == "__main__":
    main()
