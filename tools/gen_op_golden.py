#!/usr/bin/python3
"""Per-op golden vectors for the MIL reference interpreter (ane4j.backend.ref).

Writes src/test/resources/golden/ops/<op>.json, one file per MIL op; format in tools/README.md.
Run from the repository root:  /usr/bin/python3 tools/gen_op_golden.py   (numpy + Debian's python3-torch)
Deterministic: fixed seeds, no timestamps; a rerun rewrites byte-identical files.

Semantics emulated (what the interpreter implements, like the ANE):
  - every fp16 tensor is stored as fp16 after each op: round-to-nearest-even, overflow -> +-inf, subnormals kept;
  - inside an op, fp16 inputs are widened and the op computes in fp32; the result is rounded to fp16 once.
How the expected outputs are computed here:
  - exact ops (add, sub, mul, real_div, sqrt, relu, data movement, cast, select, gather, (de)quantize):
    numpy float32 arithmetic on the widened inputs, then .astype(float16). For + - * / sqrt, fp32 has
    24 >= 2*11+2 bits, so rounding through fp32 then fp16 equals one correct rounding: tolerance 0 (bit exact
    up to -0/+0 and NaN payloads).
  - transcendental elementwise ops (exp, pow, rsqrt, sigmoid, silu, tanh): float64, rounded once to the output
    dtype; tolerance 1 fp16 ulp (rtol 1e-3, atol 6e-8 = one subnormal step).
  - reductions, matmul, conv, softmax, layer_norm, scaled_dot_product_attention: float64 accumulation,
    rounded once to the output dtype; looser tolerances stated per case.
The semantics of each op follow coremltools' MIL op definitions (apple/coremltools, read at commit e0e2f42b):
the file is recorded in each JSON's "source" and the individual choices are commented below.
"""
import json
import os
import sys
import warnings
import zlib

import numpy as np
import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", message="Using padding=.same.")

CT = "coremltools/converters/mil/mil/ops/defs/"
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "test", "resources", "golden", "ops")

F16, F32, I32, I8, U8, BOOL = np.float16, np.float32, np.int32, np.int8, np.uint8, np.bool_

# tolerances: (atol, rtol); a value passes when |actual - expected| <= atol + rtol * |expected|
EXACT = (0.0, 0.0)
F16_ULP = (6e-8, 1e-3)      # one fp16 ulp (2^-10 relative at worst, 2^-24 absolute for subnormals)
F32_ULP = (1e-30, 1e-6)     # a few fp32 ulps
F16_ACC = (2e-3, 2e-3)      # fp32 accumulation vs float64 reference, 1-2 fp16 ulps
F32_ACC = (1e-5, 1e-5)
F32_MM = (1e-4, 1e-4)       # fp32 matmul/conv accumulation order

MIN_SUB = 2.0 ** -24        # smallest fp16 subnormal, 5.96e-8
MIN_NORM = 2.0 ** -14       # smallest fp16 normal, 6.10e-5


# ---------------------------------------------------------------------------------------------------------------
# tensor encoding

MIL_DTYPE = {np.dtype(F16): "fp16", np.dtype(F32): "fp32", np.dtype(I32): "int32", np.dtype(I8): "int8",
             np.dtype(U8): "uint8", np.dtype(BOOL): "bool"}


def enc(a):
    """numpy array (or python str) -> {"dtype","shape","data"}; fp16/fp32 as hex bit patterns, NaN canonical."""
    if isinstance(a, str):
        return {"dtype": "string", "shape": [], "data": [a]}
    a = np.asarray(a)
    dt = MIL_DTYPE[a.dtype]
    flat = a.ravel()
    if dt == "fp16":
        bits = flat.view(np.uint16).copy()
        bits[np.isnan(flat)] = 0x7E00
        data = ["%04x" % int(b) for b in bits]
    elif dt == "fp32":
        bits = flat.view(np.uint32).copy()
        bits[np.isnan(flat)] = 0x7FC00000
        data = ["%08x" % int(b) for b in bits]
    elif dt == "bool":
        data = [bool(v) for v in flat]
    else:
        data = [int(v) for v in flat]
    return {"dtype": dt, "shape": [int(d) for d in a.shape], "data": data}


def i32(v):
    return np.array(v, dtype=I32)


def b(v):
    return np.array(v, dtype=BOOL)


def f16(v):
    return np.array(v, dtype=np.float64).astype(F16) if not isinstance(v, np.ndarray) else v.astype(F16)


def f32(v):
    return np.array(v, dtype=np.float64).astype(F32) if not isinstance(v, np.ndarray) else v.astype(F32)


def wide(a, exact):
    """The in-op compute type: fp32 for exact ops (what the interpreter does), float64 for the reference of
    transcendental/accumulating ops."""
    if a.dtype in (np.dtype(F16), np.dtype(F32)):
        return a.astype(F32 if exact else np.float64)
    return a


class Cases:
    def __init__(self, op):
        self.op = op
        self.rng = np.random.default_rng(zlib.crc32(op.encode()))
        self.cases = []

    def randn(self, shape, dtype, scale=1.0):
        return (self.rng.standard_normal(shape) * scale).astype(dtype)

    def uniform(self, shape, dtype, lo, hi):
        return self.rng.uniform(lo, hi, shape).astype(dtype)

    def add(self, name, inputs, expected, tol, note=""):
        assert name not in [c["name"] for c in self.cases], name
        ins = {}
        for k, v in inputs.items():
            if v is None:
                continue
            ins[k] = [enc(t) for t in v] if isinstance(v, (list, tuple)) else enc(v)
        exp = [enc(e) for e in (expected if isinstance(expected, (list, tuple)) else [expected])]
        case = {"name": name, "inputs": ins, "expected": exp, "atol": tol[0], "rtol": tol[1]}
        if note:
            case["note"] = note
        self.cases.append(case)


OPS = {}


def op(name, source):
    def deco(fn):
        OPS[name] = (source, fn)
        return fn
    return deco


def out_cast(r, like):
    """Round the wide result to the output dtype (numpy astype: RNE, overflow to inf, subnormals kept)."""
    return np.asarray(r).astype(like)


# ---------------------------------------------------------------------------------------------------------------
# elementwise binary: x, y with numpy broadcasting, T in fp16/fp32/int32 (iOS15/elementwise_binary.py)

def binary_ref(fn, x, y, exact):
    with np.errstate(all="ignore"):
        return out_cast(fn(wide(x, exact), wide(y, exact)), x.dtype)


def binary_common(c, fn, exact, tol16, tol32):
    rng = c
    x = rng.randn((1, 4, 1, 8), F16); y = rng.randn((1, 4, 1, 8), F16)
    c.add("fp16_same_shape", {"x": x, "y": y}, binary_ref(fn, x, y, exact), tol16)
    x = rng.randn((1, 4, 1, 8), F32); y = rng.randn((1, 4, 1, 1), F32)
    c.add("fp32_bcast_C11_C1S", {"x": x, "y": y}, binary_ref(fn, x, y, exact), tol32,
          "y [1,C,1,1] broadcast over the sequence axis")
    x = rng.randn((1, 3, 1, 1), F16); y = rng.randn((1, 1, 2, 5), F16)
    c.add("fp16_bcast_both_sides", {"x": x, "y": y}, binary_ref(fn, x, y, exact), tol16,
          "[1,3,1,1] op [1,1,2,5] -> [1,3,2,5]")
    x = rng.randn((1, 2, 3, 4), F16); y = rng.randn((4,), F16)
    c.add("fp16_rank_mismatch", {"x": x, "y": y}, binary_ref(fn, x, y, exact), tol16,
          "y rank 1 aligned to the last axis (numpy rules)")
    x = rng.randn((1, 4, 1, 6), F16); y = f16(0.75)
    c.add("fp16_scalar_y", {"x": x, "y": y}, binary_ref(fn, x, y, exact), tol16, "y is a rank-0 fp16 scalar")
    x = f16(1.5); y = rng.randn((2, 3), F16)
    c.add("fp16_scalar_x", {"x": x, "y": y}, binary_ref(fn, x, y, exact), tol16, "x is a rank-0 fp16 scalar")


def binary_source():
    return CT + "iOS15/elementwise_binary.py"


@op("add", binary_source())
def gen_add(c):
    fn = np.add
    binary_common(c, fn, True, EXACT, EXACT)
    x = f16([65504, -65504, 65504, 65504, 60000, 1, 2048, 2050, MIN_SUB, MIN_SUB])
    y = f16([65504, -65504, 8, 16, 10000, 2.0 ** -11, 1, 1, MIN_SUB, -MIN_SUB])
    c.add("fp16_overflow_and_rounding", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT,
          "65504+65504=inf, -65504-65504=-inf, 65504+8=65512 rounds to 65504, 65504+16=65520 ties to inf (even), "
          "60000+10000=inf, 1+2^-11 ties to 1, 2048+1 ties to 2048, 2050+1 ties to 2052, subnormal sums exact")
    x = f16([MIN_SUB, 3 * MIN_SUB, MIN_NORM, -MIN_NORM]); y = f16([MIN_SUB, -MIN_SUB, -MIN_SUB, MIN_SUB])
    c.add("fp16_subnormal", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT,
          "subnormal results are kept, not flushed to zero")
    x = f16([np.inf, -np.inf, np.inf, 1]); y = f16([1, -1, -np.inf, np.nan])
    c.add("fp16_inf_nan", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT, "inf + -inf = nan")
    x = i32([[1, -2, 3], [100000, -7, 0]]); y = i32([10, 20, -30])
    c.add("int32_bcast", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT)


@op("sub", binary_source())
def gen_sub(c):
    fn = np.subtract
    binary_common(c, fn, True, EXACT, EXACT)
    x = f16([-65504, 65504, 1, 1, MIN_NORM, 0]); y = f16([65504, -65504, 1, 2.0 ** -11, MIN_SUB, MIN_SUB])
    c.add("fp16_overflow_cancel_subnormal", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT,
          "-65504-65504=-inf, exact cancellation, 1-2^-11 exact, normal-subnormal stays subnormal")
    x = f16(1.0); y = c.randn((1, 3, 1, 4), F16)
    c.add("fp16_one_minus_tensor", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT,
          "scalar - tensor (sub(x=one, y=sig) in the sigmoid backward)")
    x = i32([5, -5, 0]); y = i32(7)
    c.add("int32_scalar", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT)


@op("mul", binary_source())
def gen_mul(c):
    fn = np.multiply
    binary_common(c, fn, True, EXACT, EXACT)
    x = f16([300, -300, 256, 1e-4, MIN_NORM, MIN_NORM, 0.5, 2.0 ** -12])
    y = f16([300, 300, 256, 1e-4, 0.5, 2.0 ** -11, MIN_SUB, 2.0 ** -12])
    c.add("fp16_overflow_underflow", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT,
          "300*300=inf, 256*256=inf, 1e-4*1e-4 underflows to 0, 2^-14*0.5 subnormal, 2^-14*2^-11 = 2^-25 and "
          "2^-24*0.5 tie to 0, 2^-12*2^-12 = 2^-24")
    x = c.randn((1, 8, 1, 4), F16); y = c.randn((1, 1, 1, 4), F16)
    c.add("fp16_bcast_11S", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT, "RMSNorm x * rrms [1,1,1,S]")
    x = f16([np.inf, 0, -np.inf]); y = f16([0, np.inf, -2])
    c.add("fp16_inf_times_zero", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT, "inf*0 = nan")
    x = i32([[3, -4], [5, 6]]); y = i32([[2], [-3]])
    c.add("int32_bcast", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT)


@op("real_div", binary_source())
def gen_real_div(c):
    fn = np.true_divide
    x = c.randn((1, 4, 1, 8), F16); y = c.uniform((1, 4, 1, 8), F16, 0.5, 2.0)
    c.add("fp16_same_shape", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT)
    x = c.randn((1, 4, 1, 8), F32); y = c.uniform((1, 4, 1, 1), F32, 0.5, 2.0)
    c.add("fp32_bcast_C11_C1S", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT)
    x = c.randn((2, 3, 4), F16); y = f16(768.0)
    c.add("fp16_scalar_y", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT)
    x = f16(1.0); y = c.uniform((1, 1, 1, 6), F16, 0.1, 4.0)
    c.add("fp16_scalar_x_reciprocal", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT)
    x = f16([1, -1, 0, 65504, 1e-4, 1, 3, 1]); y = f16([0, 0, 0, 0.5, 1000, 65504, 3, 3])
    c.add("fp16_edges", {"x": x, "y": y}, binary_ref(fn, x, y, True), EXACT,
          "1/0=inf, -1/0=-inf, 0/0=nan, 65504/0.5=inf, 1e-4/1000 subnormal, 1/65504 subnormal, 1/3 rounded once")


@op("pow", binary_source())
def gen_pow(c):
    fn = np.power
    x = c.uniform((1, 4, 1, 8), F16, 0.1, 4.0); y = c.uniform((1, 4, 1, 8), F16, -2.0, 2.0)
    c.add("fp16_same_shape", {"x": x, "y": y}, binary_ref(fn, x, y, False), F16_ULP)
    x = c.uniform((1, 1, 1, 16), F16, 1e-3, 10.0); y = f16(-0.5)
    c.add("fp16_rrms_pow_minus_half", {"x": x, "y": y}, binary_ref(fn, x, y, False), F16_ULP,
          "pow(ss, -0.5) as in the RMSNorm of ane-facts A9")
    x = c.uniform((2, 3), F32, 0.1, 3.0); y = f32([2.0, 0.5, -1.0])
    c.add("fp32_bcast", {"x": x, "y": y}, binary_ref(fn, x, y, False), F32_ULP)
    x = f16([0, 2, -2, -1, 0, 10, MIN_NORM, 256]); y = f16([-0.5, 20, 3, 0.5, 0, 5, 2, 2])
    c.add("fp16_edges", {"x": x, "y": y}, binary_ref(fn, x, y, False), F16_ULP,
          "0^-0.5=inf, 2^20=inf (fp16 overflow), (-2)^3=-8, (-1)^0.5=nan, 0^0=1, 10^5=inf, MIN_NORM^2 underflows to 0, "
          "256^2=inf")


# ---------------------------------------------------------------------------------------------------------------
# elementwise unary (iOS15/elementwise_unary.py, iOS15/activation.py)

def unary_ref(fn, x, exact):
    with np.errstate(all="ignore"):
        return out_cast(fn(wide(x, exact)), x.dtype)


def unary_common(c, fn, exact, tol16, tol32, lo=-4.0, hi=4.0):
    x = c.uniform((1, 8, 1, 16), F16, lo, hi)
    c.add("fp16_rank4", {"x": x}, unary_ref(fn, x, exact), tol16)
    x = c.uniform((2, 3, 5), F32, lo, hi)
    c.add("fp32_rank3", {"x": x}, unary_ref(fn, x, exact), tol32)
    x = c.uniform((7,), F16, lo, hi)
    c.add("fp16_rank1", {"x": x}, unary_ref(fn, x, exact), tol16)


def rsqrt_fn(eps):
    return lambda v: 1.0 / np.sqrt(v + eps)


@op("rsqrt", CT + "iOS15/elementwise_unary.py, " + CT + "iOS17/elementwise_unary.py")
def gen_rsqrt(c):
    # y = 1/sqrt(x + epsilon), epsilon optional, default 1e-12 (iOS15 rsqrt.default_inputs); iOS17 lets epsilon
    # have its own dtype U. When absent the reference uses 1e-12 in float64 (fp16(1e-12) would be 0: same results
    # here, since x + 1e-12 only matters for x = 0, where both give inf after rounding to fp16).
    x = c.uniform((1, 8, 1, 16), F16, 0.01, 8.0)
    c.add("fp16_default_eps", {"x": x}, unary_ref(rsqrt_fn(1e-12), x, False), F16_ULP, "epsilon absent: 1e-12")
    x = c.uniform((2, 3, 5), F32, 0.01, 8.0)
    c.add("fp32_default_eps", {"x": x}, unary_ref(rsqrt_fn(1e-12), x, False), F32_ULP, "epsilon absent: 1e-12")
    x = c.uniform((1, 4, 1, 4), F16, 0.0, 2.0); eps = f16(1e-3)
    c.add("fp16_eps_1e-3", {"x": x, "epsilon": eps},
          unary_ref(rsqrt_fn(float(eps.astype(np.float64))), x, False), F16_ULP, "epsilon fp16(1e-3)")
    x = c.uniform((1, 4, 1, 4), F32, 0.0, 2.0); eps = f32(1e-5)
    c.add("fp32_eps_1e-5", {"x": x, "epsilon": eps},
          unary_ref(rsqrt_fn(float(eps.astype(np.float64))), x, False), F32_ULP)
    x = f16([0, MIN_SUB, MIN_NORM, 65504, np.inf, -1, 2.0 ** -20])
    c.add("fp16_edges", {"x": x}, unary_ref(rsqrt_fn(1e-12), x, False), F16_ULP,
          "rsqrt(0)=inf (1e6 overflows fp16), rsqrt(2^-24)=4096, rsqrt(65504)~0.0039, rsqrt(inf)=0, rsqrt(-1)=nan")


@op("sqrt", CT + "iOS15/elementwise_unary.py")
def gen_sqrt(c):
    unary_common(c, np.sqrt, True, EXACT, EXACT, 0.0, 9.0)
    x = f16([0, -0.0, MIN_SUB, 4 * MIN_SUB, 65504, np.inf, -1, 2])
    c.add("fp16_edges", {"x": x}, unary_ref(np.sqrt, x, True), EXACT,
          "sqrt of subnormals is normal (2^-12, 2^-11), sqrt(-1)=nan, sqrt(inf)=inf, sqrt(-0)=-0")


@op("exp", CT + "iOS15/elementwise_unary.py")
def gen_exp(c):
    unary_common(c, np.exp, False, F16_ULP, F32_ULP)
    x = f16([11.0, 11.09375, 11.1, 12, -10, -16, -16.64, -17.5, -18, -np.inf, np.inf, 0])
    c.add("fp16_overflow_subnormal_underflow", {"x": x}, unary_ref(np.exp, x, False), F16_ULP,
          "exp(11)=59874, exp(11.1)=inf, exp(-10)=4.5e-5 subnormal, exp(-16.64) = 1 subnormal step, exp(-18) -> 0")
    x = f32([88.0, 89.0, -103.0, -104.0])
    c.add("fp32_edges", {"x": x}, unary_ref(np.exp, x, False), (1e-45, 1e-6),
          "exp(89) overflows fp32, exp(-103) subnormal fp32")


def sigmoid64(v):
    return 1.0 / (1.0 + np.exp(-v))


@op("sigmoid", CT + "iOS15/activation.py")
def gen_sigmoid(c):
    unary_common(c, sigmoid64, False, F16_ULP, F32_ULP, -8.0, 8.0)
    x = f16([-10, -16, -17, -20, 8, 20, -np.inf, np.inf, 0, -65504, 65504])
    c.add("fp16_edges", {"x": x}, unary_ref(sigmoid64, x, False), F16_ULP,
          "sigmoid(-10)=4.5e-5 subnormal, sigmoid(-17)=4.1e-8 rounds to 2^-24, sigmoid(-20) -> 0, sigmoid(20) -> 1")


@op("silu", CT + "iOS15/activation.py")
def gen_silu(c):
    fn = lambda v: v * sigmoid64(v)
    unary_common(c, fn, False, F16_ULP, F32_ULP, -8.0, 8.0)
    x = f16([-10, -15, -20, 20, 60000, 65504, -65504, 0, MIN_SUB])
    c.add("fp16_edges", {"x": x}, unary_ref(fn, x, False), F16_ULP,
          "silu(-10)=-4.5e-4, silu(-20)=-4.1e-8 -> -2^-24, large x passes through, silu(-65504) -> -0")


@op("relu", CT + "iOS15/activation.py")
def gen_relu(c):
    fn = lambda v: np.maximum(v, 0)
    unary_common(c, fn, True, EXACT, EXACT)
    x = f16([-65504, 65504, -MIN_SUB, MIN_SUB, np.inf, -np.inf, 0])
    c.add("fp16_edges", {"x": x}, unary_ref(fn, x, True), EXACT)


@op("tanh", CT + "iOS15/elementwise_unary.py")
def gen_tanh(c):
    unary_common(c, np.tanh, False, F16_ULP, F32_ULP)
    x = f16([MIN_SUB, -MIN_SUB, 1e-3, 10, -10, np.inf, -np.inf, 0, 65504])
    c.add("fp16_edges", {"x": x}, unary_ref(np.tanh, x, False), F16_ULP,
          "tanh of a subnormal is itself, tanh(+-10) rounds to +-1")


# ---------------------------------------------------------------------------------------------------------------
# reductions: x, axes (optional, default all), keep_dims (optional, default false) (iOS15/reduction.py)

def reduce_ref(fn, x, axes, keep_dims):
    ax = tuple(range(x.ndim)) if axes is None else tuple(int(a) for a in np.atleast_1d(axes))
    if x.dtype == np.dtype(I32):
        return np.asarray(fn(x.astype(np.int64), axis=ax, keepdims=keep_dims)).astype(I32)
    with np.errstate(all="ignore"):
        return out_cast(fn(x.astype(np.float64), axis=ax, keepdims=keep_dims), x.dtype)


def reduce_cases(c, fn, name):
    tol = {F16: F16_ACC, F32: F32_ACC}
    for (label, shape, dt, axes, kd) in [
        ("fp16_axis1_keep", (1, 16, 1, 8), F16, [1], True),
        ("fp16_axis-1_keep", (1, 4, 1, 32), F16, [-1], True),
        ("fp32_axis-1_drop", (2, 3, 10), F32, [-1], False),
        ("fp16_axes_1_3_keep", (1, 6, 2, 5), F16, [1, 3], True),
        ("fp32_neg_axes_drop", (2, 3, 4, 5), F32, [-1, -3], False),
    ]:
        x = c.randn(shape, dt)
        c.add(label, {"x": x, "axes": i32(axes), "keep_dims": b(kd)}, reduce_ref(fn, x, axes, kd), tol[dt])
    x = c.randn((2, 3, 4), F16)
    c.add("fp16_axes_absent", {"x": x}, reduce_ref(fn, x, None, False), F16_ACC,
          "axes and keep_dims absent: reduce over all axes to a rank-0 scalar")
    x = c.randn((1, 3, 1, 4), F32)
    c.add("fp32_axes_absent_keep", {"x": x, "keep_dims": b(True)}, reduce_ref(fn, x, None, True), F32_ACC,
          "axes absent, keep_dims true: shape [1,1,1,1]")


@op("reduce_sum", CT + "iOS15/reduction.py")
def gen_reduce_sum(c):
    reduce_cases(c, np.sum, "sum")
    x = f16([[30000, 30000, 30000, 30000], [60000, 60000, -60000, -59968], [MIN_SUB, MIN_SUB, MIN_SUB, -MIN_SUB]])
    c.add("fp16_overflow_and_fp32_accumulation", {"x": x, "axes": i32([-1]), "keep_dims": b(False)},
          reduce_ref(np.sum, x, [-1], False), EXACT,
          "row 0: 120000 -> inf; row 1: partial sums exceed 65504 but fp32 accumulation gives 32 exactly; "
          "row 2: subnormal sum 2^-23")
    x = i32([[1, 2, 3], [-4, 5, 100000]])
    c.add("int32_axis0", {"x": x, "axes": i32([0]), "keep_dims": b(False)}, reduce_ref(np.sum, x, [0], False),
          EXACT)


@op("reduce_mean", CT + "iOS15/reduction.py")
def gen_reduce_mean(c):
    reduce_cases(c, np.mean, "mean")
    x = f16([[60000, 60000, 60000, 60000], [65504, 65504, -65504, 65504]])
    c.add("fp16_large_no_overflow", {"x": x, "axes": i32([1]), "keep_dims": b(True)},
          reduce_ref(np.mean, x, [1], True), EXACT,
          "mean of 60000s is 60000: the fp32 sum (240000) must not be rounded to fp16 before dividing")


@op("reduce_max", CT + "iOS15/reduction.py")
def gen_reduce_max(c):
    reduce_cases(c, np.max, "max")
    x = f16([[-np.inf, -65504, -3], [-np.inf, -np.inf, -np.inf], [MIN_SUB, 0, -0.0]])
    c.add("fp16_inf", {"x": x, "axes": i32([-1]), "keep_dims": b(False)}, reduce_ref(np.max, x, [-1], False),
          EXACT, "all -inf row gives -inf")
    x = i32([[1, -7, 3], [-4, -5, -6]])
    c.add("int32_axis1", {"x": x, "axes": i32([1]), "keep_dims": b(True)}, reduce_ref(np.max, x, [1], True), EXACT)


# ---------------------------------------------------------------------------------------------------------------
# softmax: x, axis (optional, default -1); exp(x - max) / sum (iOS15/activation.py softmax.value_inference)

def softmax_ref(x, axis):
    v = x.astype(np.float64)
    m = np.max(v, axis=axis, keepdims=True)
    e = np.exp(v - m)
    return out_cast(e / np.sum(e, axis=axis, keepdims=True), x.dtype)


@op("softmax", CT + "iOS15/activation.py")
def gen_softmax(c):
    x = c.randn((1, 2, 8, 8), F16, 2.0)
    c.add("fp16_axis-1", {"x": x, "axis": i32(-1)}, softmax_ref(x, -1), F16_ACC, "attention scores")
    x = c.randn((1, 32, 1, 4), F16, 2.0)
    c.add("fp16_axis1", {"x": x, "axis": i32(1)}, softmax_ref(x, 1), F16_ACC, "vocab softmax over channels")
    x = c.randn((3, 5), F32)
    c.add("fp32_axis_absent", {"x": x}, softmax_ref(x, -1), F32_ACC, "axis absent: default -1")
    x = c.randn((2, 6, 3), F32)
    c.add("fp32_axis-2", {"x": x, "axis": i32(-2)}, softmax_ref(x, -2), F32_ACC)
    x = f16([[1000, 1001, 1002, 999], [60000, 59968, -65504, -np.inf], [-65504, -65504, 0, -np.inf]])
    c.add("fp16_large_and_masked", {"x": x, "axis": i32(-1)}, softmax_ref(x, -1), F16_ACC,
          "needs the max subtraction (exp(1000) overflows fp32); -65504 and -inf entries give 0")


# ---------------------------------------------------------------------------------------------------------------
# matmul: x, y, transpose_x, transpose_y (default false); numpy matmul batching (iOS15/linear.py)

def matmul_ref(x, y, tx=False, ty=False):
    if x.dtype == np.dtype(I32):
        xv, yv = x.astype(np.int64), y.astype(np.int64)
    else:
        xv, yv = x.astype(np.float64), y.astype(np.float64)
    if tx:
        xv = np.swapaxes(xv, -1, -2)
    if ty:
        yv = np.swapaxes(yv, -1, -2)
    with np.errstate(all="ignore"):
        return out_cast(np.matmul(xv, yv), x.dtype)


@op("matmul", CT + "iOS15/linear.py")
def gen_matmul(c):
    x = c.randn((1, 2, 8, 16), F16); y = c.randn((1, 2, 16, 8), F16)
    c.add("fp16_rank4_defaults", {"x": x, "y": y}, matmul_ref(x, y), F16_ACC, "transpose_x/y absent (false)")
    x = c.randn((1, 2, 8, 16), F16); y = c.randn((1, 2, 8, 16), F16)
    c.add("fp16_transpose_y", {"x": x, "y": y, "transpose_x": b(False), "transpose_y": b(True)},
          matmul_ref(x, y, False, True), F16_ACC, "q . k^T")
    x = c.randn((1, 1, 16, 8), F16); y = c.randn((1, 1, 16, 4), F16)
    c.add("fp16_transpose_x", {"x": x, "y": y, "transpose_x": b(True), "transpose_y": b(False)},
          matmul_ref(x, y, True, False), F16_ACC, "probs^T . da")
    x = c.randn((2, 5, 6), F32); y = c.randn((2, 7, 5), F32)
    c.add("fp32_rank3_both_transposed", {"x": x, "y": y, "transpose_x": b(True), "transpose_y": b(True)},
          matmul_ref(x, y, True, True), F32_MM)
    x = c.randn((2, 1, 4, 8), F32); y = c.randn((1, 3, 8, 5), F32)
    c.add("fp32_broadcast_batch", {"x": x, "y": y}, matmul_ref(x, y), F32_MM, "[2,1,4,8] x [1,3,8,5] -> [2,3,4,5]")
    x = c.randn((3, 4, 8), F16); y = c.randn((8, 5), F16)
    c.add("fp16_rank_mismatch", {"x": x, "y": y}, matmul_ref(x, y), F16_ACC, "[3,4,8] x [8,5] -> [3,4,5]")
    x = c.randn((1, 24, 40), F16, 0.5); y = c.randn((1, 40, 16), F16, 0.5)
    c.add("fp16_rank3_classifier", {"x": x, "y": y}, matmul_ref(x, y), F16_ACC, "rank-3 as in ane-facts A10")
    x = c.randn((1, 1, 16, 64), F16); y = c.randn((1, 1, 64, 32), F16)
    c.add("fp16_k64_dynamic_weight_layout", {"x": x, "y": y}, matmul_ref(x, y), F16_ACC,
          "A4 shape [1,1,SEQ,IC] x [1,1,IC,OC]")
    x = f16([[[[250, 240, 250, 236], [300, 300, 0, 0], [1, 1, 1, 1]]]])
    y = f16([[[[240], [250], [-240], [-250]]]])
    c.add("fp16_fp32_accumulation", {"x": x, "y": y}, matmul_ref(x, y), EXACT,
          "row 0: products 60000,60000,-60000,-59000: partial sums overflow fp16 but the fp32 sum is 1000; "
          "row 1: 147000 -> inf")
    x = i32([[1, 2, 3], [4, 5, 6]]); y = i32([[1, -1], [0, 2], [3, 1]])
    c.add("int32_2d", {"x": x, "y": y}, matmul_ref(x, y), EXACT)
    x = c.randn((8,), F32); y = c.randn((2, 8, 3), F32)
    c.add("fp32_rank1_x", {"x": x, "y": y}, matmul_ref(x, y), F32_MM,
          "1-D x is promoted to [1,8] and the inserted axis removed: [8] x [2,8,3] -> [2,3]")


# ---------------------------------------------------------------------------------------------------------------
# conv: x [N,Cin,*D], weight [Cout,Cin/groups,*K], bias [Cout] optional, strides, pad_type (valid|same|custom|
# same_lower), pad [before0,after0,before1,after1], dilations, groups (iOS15/conv.py). For "same" the total pad per
# spatial axis is max(0, (ceil(d/s)-1)*s + (K-1)*dil + 1 - d) (_utils.aggregated_pad); "same" puts the odd extra
# element after (bottom/right: the NN backend maps it to BOTTOM_RIGHT_HEAVY, backend/nn/op_mapping.py), same_lower
# before.

def conv_ref(x, w, bias, strides, pad_type, pad, dilations, groups):
    nsp = x.ndim - 2
    strides = list(strides) if strides is not None else [1] * nsp
    dilations = list(dilations) if dilations is not None else [1] * nsp
    pads = []
    for i in range(nsp):
        d, k, s, dl = x.shape[2 + i], w.shape[2 + i], strides[i], dilations[i]
        if pad_type == "valid":
            pads.append((0, 0))
        elif pad_type == "custom":
            pads.append((int(pad[2 * i]), int(pad[2 * i + 1])))
        else:
            out = -(-d // s)
            total = max(0, (out - 1) * s + (k - 1) * dl + 1 - d)
            small, big = total // 2, total - total // 2
            pads.append((small, big) if pad_type == "same" else (big, small))
    xt = torch.from_numpy(x.astype(np.float64))
    # F.pad takes the last axis first
    flat = []
    for lo, hi in reversed(pads):
        flat += [lo, hi]
    xt = F.pad(xt, flat)
    wt = torch.from_numpy(w.astype(np.float64))
    bt = None if bias is None else torch.from_numpy(bias.astype(np.float64))
    convf = F.conv1d if nsp == 1 else F.conv2d
    y = convf(xt, wt, bt, stride=strides, padding=0, dilation=dilations, groups=groups).numpy()
    return out_cast(y, x.dtype)


def conv_case(c, name, x, w, bias=None, strides=None, pad_type="valid", pad=None, dilations=None, groups=None,
              tol=None, note=""):
    inputs = {"x": x, "weight": w, "bias": bias,
              "strides": None if strides is None else i32(strides),
              "pad_type": pad_type,
              "pad": None if pad is None else i32(pad),
              "dilations": None if dilations is None else i32(dilations),
              "groups": None if groups is None else i32(groups)}
    y = conv_ref(x, w, bias, strides, pad_type, pad, dilations, 1 if groups is None else groups)
    c.add(name, inputs, y, tol if tol else (F16_ACC if x.dtype == np.dtype(F16) else F32_MM), note)


@op("conv", CT + "iOS15/conv.py, " + CT + "_utils.py (aggregated_pad)")
def gen_conv(c):
    x = c.randn((1, 32, 1, 8), F16); w = c.randn((16, 32, 1, 1), F16, 0.25)
    conv_case(c, "fp16_1x1_linear_full_params", x, w, strides=[1, 1], pad=[0, 0, 0, 0], dilations=[1, 1], groups=1,
              note="1x1 conv = linear layer, the CONV_CONST parameter block of ane-facts 4.2, no bias")
    x = c.randn((1, 8, 1, 4), F32); w = c.randn((8, 8, 1, 1), F32); bias = c.randn((8,), F32)
    conv_case(c, "fp32_1x1_bias_defaults", x, w, bias=bias, note="strides/pad/dilations/groups absent")
    x = c.randn((1, 3, 7, 6), F16); w = c.randn((4, 3, 3, 3), F16, 0.3)
    conv_case(c, "fp16_3x3_same_stride1", x, w, strides=[1, 1], pad_type="same")
    x = c.randn((1, 2, 7, 8), F32); w = c.randn((3, 2, 3, 2), F32)
    conv_case(c, "fp32_same_stride2_asymmetric", x, w, strides=[2, 2], pad_type="same",
              note="total pad H: 2 -> (1,1); W (kernel 2): 0 -> none; out [1,3,4,4]")
    x = c.randn((1, 2, 6, 6), F32); w = c.randn((2, 2, 2, 2), F32)
    conv_case(c, "fp32_same_even_kernel", x, w, pad_type="same",
              note="kernel 2, stride 1: total pad 1 per axis, placed after (bottom/right)")
    x = c.randn((1, 2, 6, 6), F32); w = c.randn((2, 2, 2, 2), F32)
    conv_case(c, "fp32_same_lower_even_kernel", x, w, pad_type="same_lower",
              note="same_lower: the extra pad goes before (top/left)")
    x = c.randn((1, 4, 6, 7), F16); w = c.randn((6, 2, 3, 3), F16, 0.3); bias = c.randn((6,), F16)
    conv_case(c, "fp16_groups2_custom_pad_stride", x, w, bias=bias, strides=[2, 1], pad_type="custom",
              pad=[1, 0, 2, 1], groups=2, note="pad = [top, bottom, left, right]")
    x = c.randn((1, 4, 9, 9), F32); w = c.randn((4, 1, 3, 3), F32)
    conv_case(c, "fp32_depthwise_dilation2", x, w, pad_type="custom", pad=[2, 2, 2, 2], dilations=[2, 2], groups=4)
    x = c.randn((2, 3, 5, 5), F16); w = c.randn((2, 3, 3, 3), F16, 0.3)
    conv_case(c, "fp16_batch2_valid", x, w, pad_type="valid")
    x = c.randn((1, 4, 10), F32); w = c.randn((3, 4, 3), F32)
    conv_case(c, "fp32_conv1d_rank3", x, w, strides=[2], pad_type="custom", pad=[1, 1], dilations=[1],
              note="1-D conv (rank-3 x); MIL allows 1-3 spatial dims")
    x = f16(np.full((1, 2, 1, 2), 200.0)); w = f16(np.array([[[[200.0]], [[200.0]]], [[[1.0]], [[-1.0]]]]))
    conv_case(c, "fp16_output_overflow", x, w, pad_type="valid", tol=EXACT,
              note="channel 0 = 200*200*2 = 80000 -> inf; channel 1 = 0")


# ---------------------------------------------------------------------------------------------------------------
# data movement (iOS15/tensor_transformation.py, iOS15/tensor_operation.py, iOS17/tensor_transformation.py)

def reshape_ref_shape(xshape, shape, ios17=True):
    shape = list(shape)
    if 0 in shape:
        if ios17:
            # iOS17: each 0 copies the x dim aligned from the right; out of range -> 1
            n, r = len(shape), len(xshape)
            shape = [s if s != 0 else (xshape[r - (n - i)] if r - (n - i) >= 0 else 1) for i, s in enumerate(shape)]
        else:
            shape = [s if s != 0 else xshape[i] for i, s in enumerate(shape)]
    if -1 in shape:
        k = shape.index(-1)
        rest = int(np.prod([s for i, s in enumerate(shape) if i != k]))
        shape[k] = int(np.prod(xshape)) // rest
    return shape


@op("reshape", CT + "iOS15/tensor_transformation.py, " + CT + "iOS17/tensor_transformation.py")
def gen_reshape(c):
    for name, x, shape, note in [
        ("fp16_rank4_to_heads", c.randn((1, 16, 1, 6), F16), [1, 4, 4, 6], "[1,C,1,S] -> [1,H,D,S]"),
        ("fp32_rank4_to_rank3", c.randn((1, 6, 1, 4), F32), [1, 6, 4], ""),
        ("fp16_minus_one", c.randn((2, 3, 4), F16), [4, -1], "-1 inferred: [4,6]"),
        ("fp16_zero_same_rank", c.randn((1, 3, 2, 4), F16), [0, 0, 8, 1], "0 copies the dim (len(shape)==rank)"),
        ("fp32_zero_from_right_ios17", c.randn((2, 6), F32), [1, 0, -1, 0],
         "iOS17 semantics: 0s align with x.shape from the right, out of range -> 1: [1,1,2,6]"),
        ("int32", i32(np.arange(12).reshape(3, 4)), [2, 2, 3], ""),
        ("bool", b(np.arange(6) % 4 == 1), [1, 3, 2], ""),
        ("fp16_to_scalar_like", c.randn((1, 1, 1, 1), F16), [1], ""),
    ]:
        out_shape = reshape_ref_shape(list(x.shape), shape)
        c.add(name, {"x": x, "shape": i32(shape)}, x.reshape(out_shape), EXACT, note)


@op("transpose", CT + "iOS15/tensor_transformation.py")
def gen_transpose(c):
    for name, x, perm, note in [
        ("fp16_swap_last_two", c.randn((1, 2, 3, 5), F16), [0, 1, 3, 2], "the only perm ane-facts uses"),
        ("fp32_heads", c.randn((1, 3, 4, 2), F32), [0, 2, 1, 3], ""),
        ("fp16_rank3", c.randn((2, 3, 4), F16), [2, 0, 1], ""),
        ("fp16_rank5", c.randn((1, 2, 3, 2, 2), F16), [4, 3, 0, 2, 1], ""),
        ("int32_rank2", i32(np.arange(6).reshape(2, 3)), [1, 0], ""),
        ("fp32_negative_perm", c.randn((2, 3, 4, 5), F32), [0, 1, -1, -2],
         "perm entries may be negative (-rank <= perm[i] < rank): same as [0,1,3,2]"),
    ]:
        c.add(name, {"x": x, "perm": i32(perm)}, np.transpose(x, [p % x.ndim for p in perm]), EXACT, note)


def slice_ref(x, begin, size):
    # slice_by_size.value_inference: negative begin += dim; size -1 (any size <= 0 there) = to the end
    sl = []
    for i in range(x.ndim):
        bg = begin[i] + (x.shape[i] if begin[i] < 0 else 0)
        sl.append(slice(bg, bg + size[i]) if size[i] > 0 else slice(bg, None))
    return x[tuple(sl)]


@op("slice_by_size", CT + "iOS15/tensor_transformation.py")
def gen_slice_by_size(c):
    for name, x, begin, size, note in [
        ("fp16_channels_A4_act", c.randn((1, 8, 1, 12), F16), [0, 0, 0, 0], [1, 8, 1, 5], "activation part"),
        ("fp16_spatial_A4_weight", c.randn((1, 8, 1, 12), F16), [0, 0, 0, 5], [1, 8, 1, 7], "weight part"),
        ("fp32_channel_offset", c.randn((1, 12, 1, 4), F32), [0, 4, 0, 0], [1, 4, 1, 4], ""),
        ("fp16_size_minus_one", c.randn((2, 5, 6), F16), [1, 2, 3], [-1, -1, 2], "size -1: to the end of the axis"),
        ("fp32_negative_begin", c.randn((3, 6), F32), [-2, -4], [1, 3], "begin < 0 counts from the end"),
        ("int32", i32(np.arange(24).reshape(2, 3, 4)), [0, 1, 1], [2, 2, 2], ""),
        ("bool", b(np.arange(10) % 3 == 0), [2], [5], ""),
    ]:
        c.add(name, {"x": x, "begin": i32(begin), "size": i32(size)}, slice_ref(x, begin, size), EXACT, note)


def concat_ref(values, axis, interleave):
    if not interleave:
        return np.concatenate(values, axis=axis)
    # interleave: out[..., i*n + j, ...] = values[j][..., i, ...] (docstring: output[0::2] = in1, output[1::2] = in2)
    ax = axis % values[0].ndim
    st = np.stack(values, axis=ax + 1)
    shape = list(values[0].shape)
    shape[ax] *= len(values)
    return st.reshape(shape)


@op("concat", CT + "iOS15/tensor_operation.py")
def gen_concat(c):
    vs = [c.randn((1, 3, 1, 4), F16), c.randn((1, 5, 1, 4), F16), c.randn((1, 2, 1, 4), F16)]
    c.add("fp16_axis1_three", {"values": vs, "axis": i32(1), "interleave": b(False)}, concat_ref(vs, 1, False), EXACT)
    vs = [c.randn((2, 3, 2), F32), c.randn((2, 3, 4), F32)]
    c.add("fp32_axis-1", {"values": vs, "axis": i32(-1), "interleave": b(False)}, concat_ref(vs, -1, False), EXACT)
    vs = [c.randn((1, 2, 1, 3), F16), c.randn((1, 2, 1, 3), F16)]
    c.add("fp16_interleave_axis1", {"values": vs, "axis": i32(1), "interleave": b(True)}, concat_ref(vs, 1, True),
          EXACT, "channels a0,b0,a1,b1")
    vs = [f32(np.arange(6).reshape(3, 2) + 1), f32(np.arange(6).reshape(3, 2) + 7)]
    c.add("fp32_interleave_doc_example", {"values": vs, "axis": i32(0), "interleave": b(True)},
          concat_ref(vs, 0, True), EXACT, "the coremltools docstring example: rows 1,2 / 7,8 / 3,4 / 9,10 / ...")
    vs = [c.randn((1, 2, 2, 2), F16) for _ in range(3)]
    c.add("fp16_interleave_three_axis-1", {"values": vs, "axis": i32(-1), "interleave": b(True)},
          concat_ref(vs, -1, True), EXACT)
    vs = [c.randn((1, 4, 1, 3), F16)]
    c.add("fp16_single_value_interleave_absent", {"values": vs, "axis": i32(3)}, concat_ref(vs, 3, False), EXACT,
          "interleave absent: default false")
    vs = [i32([[1, 2]]), i32([[3, 4], [5, 6]])]
    c.add("int32_axis0", {"values": vs, "axis": i32(0), "interleave": b(False)}, concat_ref(vs, 0, False), EXACT)
    vs = [b([[True], [False]]), b([[False], [False]])]
    c.add("bool_axis1", {"values": vs, "axis": i32(1), "interleave": b(False)}, concat_ref(vs, 1, False), EXACT)


@op("split", CT + "iOS15/tensor_operation.py")
def gen_split(c):
    def ref(x, axis, sizes):
        return np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    x = c.randn((1, 12, 1, 4), F16)
    c.add("fp16_num_splits_3", {"x": x, "num_splits": i32(3), "axis": i32(1)}, ref(x, 1, [4, 4, 4]), EXACT)
    x = c.randn((2, 3, 10), F32)
    c.add("fp32_split_sizes", {"x": x, "split_sizes": i32([2, 5, 3]), "axis": i32(-1)}, ref(x, -1, [2, 5, 3]), EXACT,
          "uneven sizes, negative axis")
    x = c.randn((1, 7, 2), F16)
    c.add("fp16_both_given", {"x": x, "num_splits": i32(2), "split_sizes": i32([3, 4]), "axis": i32(1)},
          ref(x, 1, [3, 4]), EXACT, "num_splits == len(split_sizes)")
    x = c.randn((4, 2), F32)
    c.add("fp32_num_splits_4_axis0", {"x": x, "num_splits": i32(4), "axis": i32(0)}, ref(x, 0, [1, 1, 1, 1]), EXACT)
    x = i32(np.arange(12).reshape(2, 6))
    c.add("int32_num_splits_2", {"x": x, "num_splits": i32(2), "axis": i32(-1)}, ref(x, -1, [3, 3]), EXACT)
    x = b(np.arange(6).reshape(3, 2) % 2 == 0)
    c.add("bool_single_split", {"x": x, "split_sizes": i32([3]), "axis": i32(0)}, ref(x, 0, [3]), EXACT,
          "one output equal to x")


@op("identity", CT + "iOS15/tensor_operation.py")
def gen_identity(c):
    for name, x in [("fp16", f16([[0, -0.0, MIN_SUB, 65504, np.inf, np.nan]])), ("fp32", c.randn((1, 3, 1, 4), F32)),
                    ("int32", i32([[1, -2], [3, 2147483647]])), ("bool", b([True, False, True])),
                    ("fp16_scalar", f16(3.5))]:
        c.add(name, {"x": x}, x, EXACT)


# ---------------------------------------------------------------------------------------------------------------
# cast: x, dtype (string const) (iOS15/elementwise_unary.py cast, iOS17 adds int8/uint8/int16/uint16).
# Semantics of get_cast_value: numpy astype. float -> int truncates toward zero (values out of the target range
# and NaN are undefined, not tested); float -> bool is x != 0; fp32 -> fp16 rounds to nearest even.

@op("cast", CT + "iOS15/elementwise_unary.py, " + CT + "iOS17/elementwise_unary.py")
def gen_cast(c):
    x = f32([1.0, 65504, 65519.99, 65520, 70000, -1e6, 1e-8, 3e-8, 2.9802322e-08, 5e-8, 1e-5, 2049, 2051,
             1 + 2.0 ** -11, 0.1, np.inf, -np.inf, np.nan, -0.0])
    c.add("fp32_to_fp16_rounding", {"x": x, "dtype": "fp16"}, x.astype(F16), EXACT,
          "65519.99 -> 65504, 65520 -> inf (tie to even), 1e-8 -> 0, 3e-8 -> 2^-24, 2^-25 -> 0 (tie to even), "
          "2049 -> 2048, 2051 -> 2052, 1+2^-11 -> 1")
    x = c.randn((1, 4, 1, 6), F32)
    c.add("fp32_to_fp16_random", {"x": x, "dtype": "fp16"}, x.astype(F16), EXACT)
    x = f16([MIN_SUB, 65504, np.inf, -np.inf, np.nan, 0.1, -3.5])
    c.add("fp16_to_fp32", {"x": x, "dtype": "fp32"}, x.astype(F32), EXACT, "exact widening")
    x = f32([2.7, -2.7, 0.5, -0.5, 100000.9, -1, 0])
    c.add("fp32_to_int32_trunc", {"x": x, "dtype": "int32"}, x.astype(I32), EXACT, "truncation toward zero")
    x = f16([2.5, -2.5, 65504, -0.9, 1000.5, 3])
    c.add("fp16_to_int32_trunc", {"x": x, "dtype": "int32"}, x.astype(I32), EXACT)
    x = i32([1, -7, 2049, 2051, 65504, 65519, 65520, 100000, 0])
    c.add("int32_to_fp16", {"x": x, "dtype": "fp16"}, x.astype(F16), EXACT,
          "2049 -> 2048, 65519 -> 65504, 65520 -> inf, 100000 -> inf")
    x = i32([16777217, -16777219, 123456789, 7])
    c.add("int32_to_fp32", {"x": x, "dtype": "fp32"}, x.astype(F32), EXACT, "rounds to nearest even above 2^24")
    x = f16([0, -0.0, 1, 0.5, MIN_SUB, -np.inf])
    c.add("fp16_to_bool", {"x": x, "dtype": "bool"}, x.astype(BOOL), EXACT, "x != 0")
    x = b([[True, False], [False, True]])
    c.add("bool_to_fp32", {"x": x, "dtype": "fp32"}, x.astype(F32), EXACT)
    x = c.randn((2, 3), F16)
    c.add("fp16_to_fp16_noop", {"x": x, "dtype": "fp16"}, x, EXACT)


# ---------------------------------------------------------------------------------------------------------------
# select: cond (bool), a, b, all three broadcast (iOS15/control_flow.py, value_inference = np.where)

@op("select", CT + "iOS15/control_flow.py")
def gen_select(c):
    cond = b(c.rng.random((1, 3, 1, 5)) < 0.5); a = c.randn((1, 3, 1, 5), F16); bb = c.randn((1, 3, 1, 5), F16)
    c.add("fp16_same_shape", {"cond": cond, "a": a, "b": bb}, np.where(cond, a, bb), EXACT)
    cond = b(c.rng.random((1, 1, 4, 4)) < 0.5); a = c.randn((1, 2, 4, 4), F32); bb = f32(-1e4)
    c.add("fp32_mask_bcast_scalar_b", {"cond": cond, "a": a, "b": bb}, np.where(cond, a, bb), EXACT,
          "cond [1,1,4,4] over heads, b rank-0")
    cond = b([True, False, True]); a = c.randn((2, 1), F16); bb = c.randn((2, 3), F16)
    c.add("fp16_three_way_bcast", {"cond": cond, "a": a, "b": bb}, np.where(cond, a, bb), EXACT,
          "cond [3], a [2,1], b [2,3] -> [2,3]")
    cond = b([[True], [False]]); a = i32([1, 2, 3]); bb = i32(-5)
    c.add("int32_bcast", {"cond": cond, "a": a, "b": bb}, np.where(cond, a, bb), EXACT)
    cond = b(True); a = f16([np.inf, np.nan]); bb = f16([1, 2])
    c.add("fp16_scalar_cond", {"cond": cond, "a": a, "b": bb}, np.where(cond, a, bb), EXACT)


# ---------------------------------------------------------------------------------------------------------------
# gather: x, indices (int32), axis (default 0), batch_dims (default 0, iOS16+), validate_indices (iOS17+)
# (iOS15/16/17 scatter_gather.py, _utils.compute_gather). out shape = x.shape[:axis] + indices.shape[batch_dims:]
# + x.shape[axis+1:]. Negative indices: allowed (python-style) up to iOS16; iOS17 says they are out of bounds and
# undefined. The negative-index case below follows the iOS15/16 rule (index + dim).

def gather_ref(x, idx, axis, batch_dims=0):
    axis = axis % x.ndim
    if batch_dims == 0:
        return np.take(x, idx, axis=axis)
    bs = x.shape[:batch_dims]
    xr = x.reshape([int(np.prod(bs))] + list(x.shape[batch_dims:]))
    ir = idx.reshape([int(np.prod(bs))] + list(idx.shape[batch_dims:]))
    res = np.stack([np.take(p, i, axis=axis - batch_dims) for p, i in zip(xr, ir)])
    return res.reshape(list(bs) + list(res.shape[1:]))


@op("gather", CT + "iOS15/scatter_gather.py, " + CT + "iOS16/scatter_gather.py, " + CT + "iOS17/scatter_gather.py")
def gen_gather(c):
    x = c.randn((10, 6), F16); idx = i32([3, 0, 9, 3])
    c.add("fp16_embedding_axis_absent", {"x": x, "indices": idx}, gather_ref(x, idx, 0), EXACT,
          "token embedding lookup, axis absent: default 0")
    x = c.randn((1, 8, 1, 4), F32); idx = i32([7, 1, 2])
    c.add("fp32_axis1", {"x": x, "indices": idx, "axis": i32(1)}, gather_ref(x, idx, 1), EXACT)
    x = c.randn((2, 3, 5), F16); idx = i32([[4, 0], [1, 1]])
    c.add("fp16_axis-1_rank2_indices", {"x": x, "indices": idx, "axis": i32(-1)}, gather_ref(x, idx, -1), EXACT,
          "out [2,3,2,2]")
    x = c.randn((4, 3), F32); idx = i32(2)
    c.add("fp32_scalar_index", {"x": x, "indices": idx, "axis": i32(0)}, gather_ref(x, idx, 0), EXACT,
          "rank-0 indices drop the axis: out [3]")
    x = i32(np.arange(20).reshape(4, 5)); idx = i32([0, 4, 2])
    c.add("int32_axis1_validate", {"x": x, "indices": idx, "axis": i32(1), "validate_indices": b(True)},
          gather_ref(x, idx, 1), EXACT, "in-bounds indices with validate_indices=true")
    x = c.randn((2, 5, 3), F16); idx = i32([[0, 4], [3, 3]])
    c.add("fp16_batch_dims1", {"x": x, "indices": idx, "axis": i32(1), "batch_dims": i32(1)},
          gather_ref(x, idx, 1, 1), EXACT, "out[b,i,:] = x[b, indices[b,i], :] -> [2,2,3]")
    x = c.randn((6, 2), F16); idx = i32([-1, -6, 2])
    c.add("fp16_negative_indices_ios16", {"x": x, "indices": idx, "axis": i32(0)}, gather_ref(x, idx, 0), EXACT,
          "negative indices count from the end (iOS15/16 rule); iOS17+ declares them out of bounds (undefined): "
          "an interpreter may reject this case instead")


# ---------------------------------------------------------------------------------------------------------------
# quantize: input (fp16/fp32), scale (scalar or vector), zero_point (optional, int8/uint8), axis (when vector),
# output_dtype ("int8"/"uint8"). quantized = clip(round(input / scale) + zero_point) (iOS17/quantization_ops.py,
# coremltools/optimize/_utils.py quantize_by_scale_and_zp): np.around = round half to even, applied BEFORE adding
# the zero point, then clip to the dtype range. input / scale is computed in fp32 here (the interpreter's rule);
# coremltools' numpy value_inference divides in the input dtype, which can only differ next to a .5 tie.

def along_axis(p, ndim, axis):
    """A scale or zero point of quantize/dequantize as it broadcasts over an ndim-d input: a vector lies along `axis`;
    None, a scalar or a full-rank tensor as it is."""
    if p is None or p.ndim == 0 or p.ndim == ndim:
        return p
    shape = [1] * ndim
    shape[axis % ndim] = p.shape[0]
    return p.reshape(shape)


def quantize_ref(x, scale, zp, axis, out_dt):
    v = x.astype(F32) / along_axis(scale, x.ndim, axis).astype(F32)
    r = np.rint(v)
    if zp is not None:
        r = r + along_axis(zp, x.ndim, axis).astype(F32)
    info = np.iinfo(out_dt)
    return np.clip(r, info.min, info.max).astype(out_dt)


@op("quantize", CT + "iOS17/quantization_ops.py, coremltools/optimize/_utils.py")
def gen_quantize(c):
    x = f16([0.0625, 0.1875, 0.3125, -0.0625, -0.1875, 0.0, 1.0, -1.0, 16.0, -16.0, 15.9375, -16.0625, 0.05,
             np.inf, -np.inf])
    s = f16(0.125)
    c.add("fp16_int8_scalar_ties_saturation", {"input": x, "scale": s, "output_dtype": "int8"},
          quantize_ref(x, s, None, None, I8), EXACT,
          "x/scale = 0.5,1.5,2.5,-0.5,-1.5 round half to even -> 0,2,2,-0,-2; 128 -> 127, -128, 127.5 -> 127 "
          "(even 128 then clip), -128.5 -> -128; +-inf saturate")
    x = c.randn((1, 8, 4, 4), F16, 4.0); s = f16(2.0 ** -3)
    c.add("fp16_int8_A3", {"input": x, "scale": s, "output_dtype": "int8"}, quantize_ref(x, s, None, None, I8),
          EXACT, "the W8A8 chain of ane-facts A3: scale 2^-3, no zero point")
    x = c.randn((2, 3, 5), F32); s = f32(0.02); zp = np.array(128, dtype=U8)
    c.add("fp32_uint8_zero_point", {"input": x, "scale": s, "zero_point": zp, "output_dtype": "uint8"},
          quantize_ref(x, s, zp, None, U8), EXACT, "non power-of-two scale: x/scale in fp32")
    x = f16([[2.5, 3.5, -2.5, 200.0]]); s = f16(1.0); zp = np.array(3, dtype=I8)
    c.add("fp16_int8_round_then_add_odd_zp", {"input": x, "scale": s, "zero_point": zp, "output_dtype": "int8"},
          quantize_ref(x, s, zp, None, I8), EXACT,
          "round(2.5)+3 = 5 (not round(5.5)=6), round(3.5)+3 = 7, round(-2.5)+3 = 1, 203 -> 127")
    x = c.randn((1, 4, 1, 6), F16); s = f16([0.01, 0.02, 0.05, 0.1]); zp = np.array([0, 10, -10, 127], dtype=I8)
    c.add("fp16_int8_per_axis1", {"input": x, "scale": s, "zero_point": zp, "axis": i32(1), "output_dtype": "int8"},
          quantize_ref(x, s, zp, 1, I8), EXACT, "per-channel scale and zero point along axis 1")
    x = c.randn((3, 4), F32); s = f32([0.1, 0.2, 0.3, 0.4])
    c.add("fp32_uint8_per_axis-1_no_zp", {"input": x, "scale": s, "axis": i32(-1), "output_dtype": "uint8"},
          quantize_ref(x, s, None, -1, U8), EXACT, "no zero point: negatives clip to 0")


# dequantize: input (int8/uint8), scale (fp16/fp32, output dtype), zero_point (optional), axis (when vector).
# out = scale * (input - zero_point), in fp32 then cast to the scale dtype (optimize/_utils.dequantize_by_scale_and_zp)

def dequant_ref(q, scale, zp, axis):
    v = q.astype(F32)
    if zp is not None:
        v = v - along_axis(zp, q.ndim, axis).astype(F32)
    return (v * along_axis(scale, q.ndim, axis).astype(F32)).astype(scale.dtype)


@op("dequantize", CT + "iOS17/quantization_ops.py, coremltools/optimize/_utils.py")
def gen_dequantize(c):
    q = np.array(c.rng.integers(-128, 128, (1, 8, 4, 4)), dtype=I8); s = f16(2.0 ** -3)
    c.add("int8_fp16_scalar_A3", {"input": q, "scale": s}, dequant_ref(q, s, None, None), EXACT)
    q = np.array(c.rng.integers(0, 256, (2, 3, 5)), dtype=U8); s = f32(0.02); zp = np.array(128, dtype=U8)
    c.add("uint8_fp32_zero_point", {"input": q, "scale": s, "zero_point": zp}, dequant_ref(q, s, zp, None), EXACT)
    q = np.array(c.rng.integers(-128, 128, (1, 4, 1, 6)), dtype=I8)
    s = f16([0.01, 0.02, 0.05, 0.1]); zp = np.array([0, 10, -10, 127], dtype=I8)
    c.add("int8_fp16_per_axis1", {"input": q, "scale": s, "zero_point": zp, "axis": i32(1)},
          dequant_ref(q, s, zp, 1), EXACT)
    q = np.array(c.rng.integers(0, 256, (3, 4)), dtype=U8); s = f32([0.1, 0.2, 0.3, 0.4])
    c.add("uint8_fp32_per_axis-1_no_zp", {"input": q, "scale": s, "axis": i32(-1)}, dequant_ref(q, s, None, -1),
          EXACT)
    q = np.array([127, -128, 1, 0], dtype=I8); s = f16(600.0); zp = np.array(-128, dtype=I8)
    c.add("int8_fp16_overflow", {"input": q, "scale": s, "zero_point": zp}, dequant_ref(q, s, zp, None), EXACT,
          "(127+128)*600 = 153000 -> inf in fp16; (-128+128)*600 = 0; (1+128)*600 = 77400 -> inf; "
          "(0+128)*600 = 76800 -> inf")


# constexpr_affine_dequantize: quantized_data (int8/uint8), zero_point (int8/uint8/fp32), scale (fp16/fp32),
# axis (required, -rank <= axis < rank); scalar or vector scale/zero_point (iOS16/constexpr_ops.py)

@op("constexpr_affine_dequantize", CT + "iOS16/constexpr_ops.py, coremltools/optimize/_utils.py")
def gen_constexpr_affine_dequantize(c):
    q = np.array(c.rng.integers(-128, 128, (8, 8, 1, 1)), dtype=I8); s = f16(2.0 ** -3); zp = np.array(0, dtype=I8)
    c.add("int8_fp16_scalar_A3", {"quantized_data": q, "zero_point": zp, "scale": s, "axis": i32(0)},
          dequant_ref(q, s, zp, 0), EXACT, "ane-facts A3: scale fp16 0x1p-3, zero_point int8 0, axis 0")
    q = np.array(c.rng.integers(-128, 128, (4, 3, 1, 1)), dtype=I8)
    s = f16([0.5, 0.25, 0.125, 0.0625]); zp = np.array([0, 1, -1, 5], dtype=I8)
    c.add("int8_fp16_per_axis0", {"quantized_data": q, "zero_point": zp, "scale": s, "axis": i32(0)},
          dequant_ref(q, s, zp, 0), EXACT, "per output channel")
    q = np.array(c.rng.integers(0, 256, (2, 5)), dtype=U8); s = f32([0.1, 0.2, 0.3, 0.4, 0.5])
    zp = np.array([128, 0, 255, 7, 100], dtype=U8)
    c.add("uint8_fp32_per_axis-1", {"quantized_data": q, "zero_point": zp, "scale": s, "axis": i32(-1)},
          dequant_ref(q, s, zp, -1), EXACT, "negative axis")
    q = np.array(c.rng.integers(-128, 128, (3, 4)), dtype=I8); s = f16([0.1, 0.2, 0.3]); zp = f32([0.5, -1.5, 0])
    c.add("int8_fp16_fp32_zero_point_axis0", {"quantized_data": q, "zero_point": zp, "scale": s, "axis": i32(0)},
          dequant_ref(q, s, zp, 0), EXACT, "fp32 zero point (ZeroPointT includes fp32)")
    q = np.array(c.rng.integers(-128, 128, (2, 3, 4)), dtype=I8); s = f32(0.01); zp = np.array(-3, dtype=I8)
    c.add("int8_fp32_scalar_axis1", {"quantized_data": q, "zero_point": zp, "scale": s, "axis": i32(1)},
          dequant_ref(q, s, zp, 1), EXACT, "scalar scale: axis is required but irrelevant")


# ---------------------------------------------------------------------------------------------------------------
# layer_norm: x, axes (optional, default all), gamma/beta (optional, shape = x.shape[axes]), epsilon (default 1e-5)
# out = (x - mean) / sqrt(biased var + eps) * gamma + beta (iOS15/normalization.py np_layer_norm; iOS17 lets
# gamma/beta/epsilon have their own dtype U)

def layer_norm_ref(x, axes, gamma, beta, eps):
    v = x.astype(np.float64)
    r = x.ndim
    ax = list(range(r)) if axes is None else sorted(a % r for a in axes)
    nshape = [x.shape[i] if i in ax else 1 for i in range(r)]
    g = np.ones(nshape) if gamma is None else gamma.astype(np.float64).reshape(nshape)
    bt = np.zeros(nshape) if beta is None else beta.astype(np.float64).reshape(nshape)
    m = v.mean(axis=tuple(ax), keepdims=True)
    var = ((v - m) ** 2).mean(axis=tuple(ax), keepdims=True)
    return out_cast((v - m) / np.sqrt(var + eps) * g + bt, x.dtype)


@op("layer_norm", CT + "iOS15/normalization.py, " + CT + "iOS17/normalization.py")
def gen_layer_norm(c):
    x = c.randn((2, 4, 16), F16); g = c.randn((16,), F16); bt = c.randn((16,), F16); eps = f16(1e-5)
    c.add("fp16_last_axis_gamma_beta", {"x": x, "axes": i32([-1]), "gamma": g, "beta": bt, "epsilon": eps},
          layer_norm_ref(x, [-1], g, bt, float(eps)), F16_ACC, "epsilon fp16(1e-5) = 1.0014e-5 (subnormal)")
    x = c.randn((1, 16, 1, 4), F32); g = c.randn((16,), F32); bt = c.randn((16,), F32)
    c.add("fp32_channel_axis_eps_absent", {"x": x, "axes": i32([1]), "gamma": g, "beta": bt},
          layer_norm_ref(x, [1], g, bt, 1e-5), F32_ACC, "normalise over channels of [1,C,1,S]; epsilon default 1e-5")
    x = c.randn((1, 3, 2, 5), F16)
    c.add("fp16_axes_1_3_no_affine", {"x": x, "axes": i32([1, 3]), "epsilon": f32(1e-3)},
          layer_norm_ref(x, [1, 3], None, None, float(f32(1e-3))), F16_ACC,
          "two axes, gamma/beta absent, fp32 epsilon with fp16 x (iOS17)")
    x = c.randn((2, 3, 4), F32); g = c.randn((3, 4), F32)
    c.add("fp32_axes_-2_-1_gamma2d", {"x": x, "axes": i32([-2, -1]), "gamma": g},
          layer_norm_ref(x, [-2, -1], g, None, 1e-5), F32_ACC, "gamma shape [3,4], beta absent")
    x = c.randn((3, 4), F32)
    c.add("fp32_axes_absent", {"x": x}, layer_norm_ref(x, None, None, None, 1e-5), F32_ACC,
          "axes absent: all axes")
    x = (c.randn((1, 1, 32), F32) * 50 + 300).astype(F16)
    c.add("fp16_large_values", {"x": x, "axes": i32([-1]), "epsilon": f16(1e-5)},
          layer_norm_ref(x, [-1], None, None, float(f16(1e-5))), F16_ACC,
          "x ~ 300: x^2 and the sum of squares overflow fp16, the fp32 computation does not")
    x = f16([[1, 1, 1, 1], [0, 0, 0, 2]])
    c.add("fp16_constant_row", {"x": x, "axes": i32([-1]), "epsilon": f16(1e-5)},
          layer_norm_ref(x, [-1], None, None, float(f16(1e-5))), F16_ACC, "zero variance row gives 0")


# ---------------------------------------------------------------------------------------------------------------
# scaled_dot_product_attention: query [B,*,L,E], key [B,*,S,E], value [B,*,S,EV], attn_mask (optional, bool or
# float, broadcast to [B,*,L,S]); softmax(q k^T / sqrt(E) + mask) v; bool mask: false -> -inf
# (iOS18/transformers.py). The expected outputs of the masked cases honour the mask: the interpreter ignores
# attn_mask unless ane4j.ref.honorSdpaMask=true (issue 3), so run those with the flag set.

def sdpa_ref(q, k, v, mask):
    qv, kv, vv = q.astype(np.float64), k.astype(np.float64), v.astype(np.float64)
    s = np.matmul(qv, np.swapaxes(kv, -1, -2)) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = s + (np.where(mask, 0.0, -np.inf) if mask.dtype == np.dtype(BOOL) else mask.astype(np.float64))
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return out_cast(np.matmul(e / e.sum(axis=-1, keepdims=True), vv), q.dtype)


@op("scaled_dot_product_attention", CT + "iOS18/transformers.py")
def gen_sdpa(c):
    sdpa_tol = (2e-3, 5e-3)
    q, k, v = c.randn((1, 2, 8, 16), F16), c.randn((1, 2, 8, 16), F16), c.randn((1, 2, 8, 16), F16)
    c.add("fp16_no_mask", {"query": q, "key": k, "value": v}, sdpa_ref(q, k, v, None), sdpa_tol)
    q, k, v = c.randn((2, 4, 8), F32), c.randn((2, 6, 8), F32), c.randn((2, 6, 5), F32)
    c.add("fp32_rank3_L4_S6_EV5", {"query": q, "key": k, "value": v}, sdpa_ref(q, k, v, None), F32_ACC,
          "L != S and EV != E")
    q, k, v = c.randn((1, 2, 6, 8), F16), c.randn((1, 2, 6, 8), F16), c.randn((1, 2, 6, 8), F16)
    m = b(np.tril(np.ones((6, 6), dtype=bool)))
    c.add("fp16_bool_causal_mask", {"query": q, "key": k, "value": v, "attn_mask": m}, sdpa_ref(q, k, v, m),
          sdpa_tol, "bool mask [L,S] broadcast over batch and heads; expected honours the mask "
                    "(ane4j.ref.honorSdpaMask=true)")
    q, k, v = c.randn((1, 2, 6, 8), F16), c.randn((1, 2, 6, 8), F16), c.randn((1, 2, 6, 8), F16)
    m = f16(np.where(np.tril(np.ones((1, 1, 6, 6))) > 0, 0.0, -65504.0))
    c.add("fp16_float_mask_65504", {"query": q, "key": k, "value": v, "attn_mask": m}, sdpa_ref(q, k, v, m),
          sdpa_tol, "fp16 additive mask [1,1,L,S] with -65504 (ane-facts mask.bin); expected honours the mask")
    q, k, v = c.randn((1, 1, 4, 8), F32), c.randn((1, 1, 5, 8), F32), c.randn((1, 1, 5, 8), F32)
    m = c.randn((4, 5), F32)
    m[0, 4] = -np.inf
    c.add("fp32_float_mask_random", {"query": q, "key": k, "value": v, "attn_mask": m}, sdpa_ref(q, k, v, m),
          F32_ACC, "arbitrary additive fp32 mask with one -inf; expected honours the mask")


# ---------------------------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------------------------
# cross-check of the numpy references against PyTorch's implementations (float64, before any rounding)

def verify_against_torch():
    rng = np.random.default_rng(7)
    tt = torch.from_numpy

    def same(name, ours, theirs):
        if not np.allclose(ours, theirs, rtol=1e-10, atol=1e-12, equal_nan=True):
            raise SystemExit("reference check failed: %s (maxdiff %g)" % (name, np.nanmax(np.abs(ours - theirs))))

    x = rng.standard_normal((2, 5, 3, 7))
    for axis in (1, -1, -2):
        same("softmax axis %d" % axis, softmax_ref(x, axis), torch.softmax(tt(x), dim=axis).numpy())
    for fn, tfn in ((sigmoid64, torch.sigmoid), (lambda v: v * sigmoid64(v), F.silu), (np.tanh, torch.tanh)):
        same("unary", unary_ref(fn, x, False), tfn(tt(x)).numpy())
    g, bt = rng.standard_normal((3, 7)), rng.standard_normal((3, 7))
    same("layer_norm", layer_norm_ref(x, [-2, -1], g, bt, 1e-5),
         F.layer_norm(tt(x), (3, 7), tt(g), tt(bt), 1e-5).numpy())
    a, bm = rng.standard_normal((2, 1, 6, 4)), rng.standard_normal((3, 5, 6))
    same("matmul", matmul_ref(a, bm, True, True), torch.matmul(tt(a).transpose(-1, -2), tt(bm).transpose(-1, -2)).numpy())
    xc = rng.standard_normal((1, 4, 7, 6))
    for k in ((3, 3), (2, 2), (3, 2)):
        w = rng.standard_normal((2, 4, k[0], k[1]))
        same("conv same %s" % (k,), conv_ref(xc, w, None, [1, 1], "same", None, [1, 1], 1),
             F.conv2d(tt(xc), tt(w), padding="same").numpy())
    w = rng.standard_normal((4, 2, 3, 3))
    same("conv custom", conv_ref(xc, w, None, [2, 1], "custom", [1, 0, 2, 1], [1, 2], 2),
         F.conv2d(F.pad(tt(xc), (2, 1, 1, 0)), tt(w), stride=(2, 1), dilation=(1, 2), groups=2).numpy())
    q, k_, v = rng.standard_normal((2, 3, 5, 8)), rng.standard_normal((2, 3, 6, 8)), rng.standard_normal((2, 3, 6, 4))
    m = rng.standard_normal((5, 6))
    sc = torch.softmax(tt(q) @ tt(k_).transpose(-1, -2) / np.sqrt(8) + tt(m), dim=-1) @ tt(v)
    same("sdpa", sdpa_ref(q, k_, v, m), sc.numpy())
    xg, ig = rng.standard_normal((2, 5, 3)), np.array([[0, 4, 1], [3, 3, 2]], dtype=I32)
    same("gather batch_dims", gather_ref(xg, ig, 1, 1),
         torch.gather(tt(xg), 1, tt(ig.astype(np.int64))[:, :, None].expand(2, 3, 3)).numpy())
    xs = rng.standard_normal((3, 4)).astype(F32) * 4
    theirs = torch.quantize_per_tensor(tt(xs), 0.25, 3, torch.qint8).int_repr().numpy()
    same("quantize", quantize_ref(xs, f32(0.25), np.array(3, dtype=I8), None, I8).astype(np.float64),
         theirs.astype(np.float64))


def write_all(only=None):
    os.makedirs(OUT_DIR, exist_ok=True)
    summary = []
    for name, (source, fn) in OPS.items():
        if only and name not in only:
            continue
        c = Cases(name)
        fn(c)
        lines = ['{"op":%s,"source":%s,"cases":[' % (json.dumps(name), json.dumps(source))]
        for i, case in enumerate(c.cases):
            lines.append(json.dumps(case, separators=(",", ":")) + ("," if i + 1 < len(c.cases) else ""))
        lines.append("]}")
        path = os.path.join(OUT_DIR, name + ".json")
        with open(path, "w", encoding="ascii", newline="\n") as f:
            f.write("\n".join(lines) + "\n")
        summary.append((name, len(c.cases), os.path.getsize(path)))
    total = 0
    for name, n, size in summary:
        print("%-30s %3d cases %8d bytes" % (name, n, size))
        total += size
    print("total %d bytes in %d files" % (total, len(summary)))


if __name__ == "__main__":
    with np.errstate(all="ignore"):
        verify_against_torch()
        write_all(set(sys.argv[1:]))
