#!/usr/bin/python3
"""Whole-model training golden files for ane4j (llm.c test_gpt2 style).

For a small llama2.c-style config and a small Qwen3-style config (GQA, QK-norm, headDim != dim/nHeads)
this builds the transformer in plain PyTorch (written from the math, no transformers library), in fp32
on one thread, and writes src/test/resources/golden/train/<name>.safetensors with: the initial weights,
tokens, targets, logits, loss, the gradient of the loss for every parameter, the losses of 10 AdamW
steps on the same batch and a few parameters after those steps. The model and the optimizer are
defined exactly in tools/TRAINING-GOLDEN.md.

Run:   /usr/bin/python3 tools/gen_golden.py            (from the repository root)
Check: /usr/bin/python3 tools/gen_golden.py --check    (regenerate in memory, compare with committed files)

The script cross-checks itself before writing: a hand-written numpy forward must reproduce the PyTorch
logits and loss, the PyTorch gradients must match a central difference of the numpy loss along random
directions, and a hand-written numpy clip+AdamW must reproduce the torch.optim trajectory.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

SCRIPT = "tools/gen_golden.py"
OUT_DIR = os.path.join("src", "test", "resources", "golden", "train")
FORMAT = "ane4j-train-golden"
VERSION = "1"

# ----------------------------------------------------------------------------------------------------
# configs

CONFIGS = {
    # llama2.c-style: interleaved RoPE, no QK-norm, nKvHeads == nHeads
    "llama": dict(dim=32, hiddenDim=64, nLayers=2, nHeads=4, nKvHeads=4, headDim=8, vocabSize=64, seqLen=16,
                  ropeTheta=10000.0, ropeStyle="interleaved", qkNorm=False, normEps=1e-5, seed=1337),
    # Qwen3-style: GQA (repeat-interleave), headDim 16 != 32/4, QK-norm before RoPE, rotate-half RoPE, theta 1e6
    "qwen3": dict(dim=32, hiddenDim=48, nLayers=2, nHeads=4, nKvHeads=2, headDim=16, vocabSize=64, seqLen=16,
                  ropeTheta=1e6, ropeStyle="half", qkNorm=True, normEps=1e-6, seed=4242),
}

OPT = dict(lr=1e-3, beta1=0.9, beta2=0.95, eps=1e-8, weightDecay=0.1, clip=1.0, adamSteps=10)
FINAL_NAMES = ["tokenEmbedding", "layers.0.wq", "layers.1.rmsFfn"]
NORM_SUFFIXES = ("rmsAtt", "rmsFfn", "rmsFinal", "qNorm", "kNorm")


def is_norm(name):
    return name.split(".")[-1] in NORM_SUFFIXES


def param_shapes(c):
    """Parameter names and shapes in creation (= init and file) order."""
    d, hd, q_dim, kv_dim = c["dim"], c["headDim"], c["nHeads"] * c["headDim"], c["nKvHeads"] * c["headDim"]
    shapes = [("tokenEmbedding", (c["vocabSize"], d))]
    for l in range(c["nLayers"]):
        p = f"layers.{l}."
        shapes += [(p + "rmsAtt", (d,)), (p + "wq", (q_dim, d)), (p + "wk", (kv_dim, d)), (p + "wv", (kv_dim, d))]
        if c["qkNorm"]:
            shapes += [(p + "qNorm", (hd,)), (p + "kNorm", (hd,))]
        shapes += [(p + "wo", (d, q_dim)), (p + "rmsFfn", (d,)),
                   (p + "w1", (c["hiddenDim"], d)), (p + "w2", (d, c["hiddenDim"])), (p + "w3", (c["hiddenDim"], d))]
    shapes.append(("rmsFinal", (d,)))
    return shapes


def init_params(c):
    """Matrices and embedding ~ N(0, 0.02²); norm weights 1 + 0.1·N(0, 1); one fp32 generator, creation order."""
    g = torch.Generator().manual_seed(c["seed"])
    params = {}
    for name, shape in param_shapes(c):
        r = torch.randn(shape, generator=g, dtype=torch.float32)
        params[name] = (1.0 + 0.1 * r) if is_norm(name) else 0.02 * r
    # tokens: seqLen + 1 random ids; x = t[0:S], y = t[1:S+1]
    t = torch.randint(0, c["vocabSize"], (c["seqLen"] + 1,), generator=g, dtype=torch.int64)
    return params, t[:-1].clone(), t[1:].clone()


# ----------------------------------------------------------------------------------------------------
# the PyTorch model (fp32)

def rmsnorm(x, w, eps):
    # x (..., n), w (n): x · (mean(x²) + eps)^(-1/2) · w
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_tables(c):
    # freq_i = theta^(-2i/headDim), i in [0, headDim/2); angle (S, headDim/2) = pos · freq_i
    hd = c["headDim"]
    freq = 1.0 / (c["ropeTheta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    ang = torch.outer(torch.arange(c["seqLen"], dtype=torch.float32), freq)
    return torch.cos(ang), torch.sin(ang)


def rope(x, cos, sin, style):
    # x (nh, S, hd); cos, sin (S, hd/2)
    if style == "interleaved":
        # pairs (2i, 2i+1)
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)
    # "half" (rotate_half): pairs (i, i + hd/2)
    h = x.shape[-1] // 2
    x0, x1 = x[..., :h], x[..., h:]
    return torch.cat((x0 * cos - x1 * sin, x1 * cos + x0 * sin), dim=-1)


def forward(c, p, x, y):
    """Returns (logits (S, vocab), loss scalar)."""
    S, H, KV, hd, eps = c["seqLen"], c["nHeads"], c["nKvHeads"], c["headDim"], c["normEps"]
    cos, sin = rope_tables(c)
    mask = torch.triu(torch.ones(S, S, dtype=torch.bool), diagonal=1)  # True above the diagonal = future
    # h (S, dim): embedding gather
    h = p["tokenEmbedding"][x]
    for l in range(c["nLayers"]):
        L = lambda n: p[f"layers.{l}.{n}"]
        # attention block
        xn = rmsnorm(h, L("rmsAtt"), eps)                                   # (S, dim)
        q = (xn @ L("wq").t()).view(S, H, hd).transpose(0, 1)               # (H, S, hd)
        k = (xn @ L("wk").t()).view(S, KV, hd).transpose(0, 1)              # (KV, S, hd)
        v = (xn @ L("wv").t()).view(S, KV, hd).transpose(0, 1)              # (KV, S, hd)
        if c["qkNorm"]:
            q = rmsnorm(q, L("qNorm"), eps)
            k = rmsnorm(k, L("kNorm"), eps)
        q = rope(q, cos, sin, c["ropeStyle"])
        k = rope(k, cos, sin, c["ropeStyle"])
        # GQA: query head j uses kv head j // (H/KV)
        k = k.repeat_interleave(H // KV, dim=0)                              # (H, S, hd)
        v = v.repeat_interleave(H // KV, dim=0)
        att = (q @ k.transpose(1, 2)) / math.sqrt(hd)                        # (H, S, S)
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        o = (att @ v).transpose(0, 1).reshape(S, H * hd)                     # (S, H·hd)
        h = h + o @ L("wo").t()
        # SwiGLU FFN block
        xn2 = rmsnorm(h, L("rmsFfn"), eps)
        h = h + (F.silu(xn2 @ L("w1").t()) * (xn2 @ L("w3").t())) @ L("w2").t()
    xf = rmsnorm(h, p["rmsFinal"], eps)
    logits = xf @ p["tokenEmbedding"].t()                                   # (S, vocab), tied classifier
    loss = F.cross_entropy(logits, y)                                       # mean over the S positions
    return logits, loss


# ----------------------------------------------------------------------------------------------------
# independent numpy forward (self-check only)

def np_forward(c, p, x, y, dt):
    S, H, KV, hd, eps = c["seqLen"], c["nHeads"], c["nKvHeads"], c["headDim"], c["normEps"]
    P = {k: v.astype(dt) for k, v in p.items()}
    one = dt(1.0)

    def norm(a, w):
        return a / np.sqrt((a * a).mean(axis=-1, keepdims=True) + dt(eps)) * w

    def rot(a, pos):  # a (hd,) one head at one position, rotated pair by pair with explicit indices
        out = np.empty_like(a)
        for i in range(hd // 2):
            f = dt(c["ropeTheta"]) ** (-dt(2 * i) / dt(hd))
            cs, sn = np.cos(dt(pos) * f), np.sin(dt(pos) * f)
            a_, b_ = (2 * i, 2 * i + 1) if c["ropeStyle"] == "interleaved" else (i, i + hd // 2)
            out[a_] = a[a_] * cs - a[b_] * sn
            out[b_] = a[a_] * sn + a[b_] * cs
        return out

    h = P["tokenEmbedding"][x]
    for l in range(c["nLayers"]):
        W = lambda n: P[f"layers.{l}.{n}"]
        xn = norm(h, W("rmsAtt"))
        q, k, v = xn @ W("wq").T, xn @ W("wk").T, xn @ W("wv").T
        o = np.zeros((S, H * hd), dtype=dt)
        for j in range(H):
            kvh = j // (H // KV)
            qs = [q[t, j * hd:(j + 1) * hd] for t in range(S)]
            ks = [k[t, kvh * hd:(kvh + 1) * hd] for t in range(S)]
            if c["qkNorm"]:
                qs = [norm(a, W("qNorm")) for a in qs]
                ks = [norm(a, W("kNorm")) for a in ks]
            qs = [rot(a, t) for t, a in enumerate(qs)]
            ks = [rot(a, t) for t, a in enumerate(ks)]
            for t in range(S):
                s = np.array([qs[t] @ ks[u] for u in range(t + 1)], dtype=dt) / np.sqrt(dt(hd))
                e = np.exp(s - s.max())
                a = e / e.sum()
                o[t, j * hd:(j + 1) * hd] = sum(a[u] * v[u, kvh * hd:(kvh + 1) * hd] for u in range(t + 1))
        h = h + o @ W("wo").T
        xn2 = norm(h, W("rmsFfn"))
        g = xn2 @ W("w1").T
        h = h + ((g * (one / (one + np.exp(-g)))) * (xn2 @ W("w3").T)) @ W("w2").T
    logits = norm(h, P["rmsFinal"]) @ P["tokenEmbedding"].T
    m = logits.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(axis=-1)) + m[:, 0]
    loss = (lse - logits[np.arange(S), y]).mean()
    return logits, loss


def np_adamw_trajectory(c, p0, x, y, grad_fn):
    """Hand-written clip + AdamW (fp32), using grad_fn(params) -> (loss, grads); returns (losses, params)."""
    lr, b1, b2, eps, wd, clip = (np.float32(OPT[k]) for k in ("lr", "beta1", "beta2", "eps", "weightDecay", "clip"))
    w = {k: v.copy() for k, v in p0.items()}
    m = {k: np.zeros_like(v) for k, v in w.items()}
    v2 = {k: np.zeros_like(v) for k, v in w.items()}
    losses = []
    for t in range(1, OPT["adamSteps"] + 1):
        loss, g = grad_fn(w)
        losses.append(loss)
        # global L2 norm over all gradients; scale = min(1, clip / (norm + 1e-6))
        norm = np.sqrt(sum(np.sum(gi.astype(np.float32) ** 2) for gi in g.values()), dtype=np.float32)
        scale = min(np.float32(1.0), clip / (norm + np.float32(1e-6)))
        for k in w:
            gk = g[k] * scale
            decay = np.float32(0.0) if is_norm(k) else wd
            w[k] = w[k] * (np.float32(1.0) - lr * decay)                    # decoupled weight decay first
            m[k] = b1 * m[k] + (np.float32(1.0) - b1) * gk
            v2[k] = b2 * v2[k] + (np.float32(1.0) - b2) * gk * gk
            mhat = m[k] / (np.float32(1.0) - b1 ** t)
            denom = np.sqrt(v2[k]) / np.sqrt(np.float32(1.0) - b2 ** t) + eps
            w[k] = w[k] - lr * mhat / denom
    return np.array(losses, dtype=np.float32), w


# ----------------------------------------------------------------------------------------------------
# golden generation

def generate(name):
    torch.manual_seed(0)
    c = CONFIGS[name]
    p_init, x, y = init_params(c)
    params = {k: torch.nn.Parameter(v.clone()) for k, v in p_init.items()}
    decay = [v for k, v in params.items() if not is_norm(k)]
    no_decay = [v for k, v in params.items() if is_norm(k)]
    opt = torch.optim.AdamW([dict(params=decay, weight_decay=OPT["weightDecay"]),
                             dict(params=no_decay, weight_decay=0.0)],
                            lr=OPT["lr"], betas=(OPT["beta1"], OPT["beta2"]), eps=OPT["eps"], foreach=False)
    losses, grad_norms = [], []
    logits0 = loss0 = grads0 = None
    for step in range(OPT["adamSteps"]):
        opt.zero_grad(set_to_none=True)
        logits, loss = forward(c, params, x, y)
        loss.backward()
        if step == 0:
            logits0, loss0 = logits.detach().clone(), loss.detach().clone()
            grads0 = {k: v.grad.detach().clone() for k, v in params.items()}    # raw, before clipping
        losses.append(loss.item())
        grad_norms.append(torch.nn.utils.clip_grad_norm_(list(params.values()), OPT["clip"]).item())
        opt.step()

    self_check(c, p_init, x, y, logits0, loss0, grads0, losses, params)

    tensors = {k: v.numpy() for k, v in p_init.items()}
    add_first_step(tensors, x, y, logits0, loss0, grads0)
    tensors["losses"] = np.array(losses, dtype=np.float32)
    tensors["gradNorms"] = np.array(grad_norms, dtype=np.float32)
    for k in FINAL_NAMES:
        tensors["final." + k] = params[k].detach().numpy()

    meta = {"format": FORMAT, "version": VERSION, "config": name, "generator": SCRIPT, "torchVersion": torch.__version__}
    add_config_meta(meta, c)
    meta["tied"] = "true"
    add_opt_meta(meta, OPT)
    meta["params"] = ",".join(p_init.keys())
    meta["finals"] = ",".join(FINAL_NAMES)
    return safetensors_bytes(meta, tensors), losses, grad_norms


def add_first_step(tensors, x, y, logits0, loss0, grads0):
    """Step 0's record in a golden: tokens, targets, logits, loss and the raw gradients (grad.<name>), before clipping."""
    tensors["tokens"] = x.numpy().astype(np.int32)
    tensors["targets"] = y.numpy().astype(np.int32)
    tensors["logits"] = logits0.numpy()
    tensors["loss"] = loss0.reshape(1).numpy()
    for k, g in grads0.items():
        tensors["grad." + k] = g.numpy()


def add_config_meta(meta, c):
    """The model config in a golden's metadata, from which the Java tests rebuild their ModelConfig."""
    for k in ("dim", "hiddenDim", "nLayers", "nHeads", "nKvHeads", "headDim", "vocabSize", "seqLen", "seed"):
        meta[k] = str(c[k])
    meta["ropeTheta"] = repr(float(c["ropeTheta"]))
    meta["ropeStyle"] = c["ropeStyle"]
    meta["qkNorm"] = "true" if c["qkNorm"] else "false"
    meta["normEps"] = repr(c["normEps"])


def add_opt_meta(meta, opt):
    """The AdamW settings and step count in a golden's metadata."""
    for k in ("lr", "beta1", "beta2", "eps", "weightDecay", "clip"):
        meta[k] = repr(float(opt[k]))
    meta["adamSteps"] = str(opt["adamSteps"])


def self_check(c, p_init, x, y, logits0, loss0, grads0, losses, params):
    P = {k: v.numpy() for k, v in p_init.items()}
    xn, yn = x.numpy(), y.numpy()
    # 1. independent fp32 numpy forward reproduces logits and loss
    lg, ls = np_forward(c, P, xn, yn, np.float32)
    assert np.abs(lg - logits0.numpy()).max() < 1e-5, np.abs(lg - logits0.numpy()).max()
    assert abs(float(ls) - loss0.item()) < 1e-5, (float(ls), loss0.item())
    # 2. gradients: for each parameter tensor, <grad, d> vs a central difference of the numpy loss along a
    #    random direction d. float64 is used here only, to make the difference accurate; nothing float64 is stored.
    rng = np.random.default_rng(7)
    h = 1e-6
    for k in P:
        d = rng.standard_normal(P[k].shape)
        lp = np_forward(c, {**P, k: P[k] + h * d}, xn, yn, np.float64)[1]
        lm = np_forward(c, {**P, k: P[k] - h * d}, xn, yn, np.float64)[1]
        fd = (lp - lm) / (2 * h)
        an = float(np.sum(grads0[k].numpy().astype(np.float64) * d))
        assert abs(fd - an) < 1e-5 * max(0.1, abs(fd)), (k, fd, an)
    # 3. hand-written clip + AdamW reproduces the torch.optim trajectory
    def grad_fn(w):
        tp = {k: torch.tensor(v, requires_grad=True) for k, v in w.items()}
        _, loss = forward(c, tp, x, y)
        loss.backward()
        return loss.item(), {k: v.grad.numpy() for k, v in tp.items()}
    np_losses, np_w = np_adamw_trajectory(c, P, xn, yn, grad_fn)
    assert np.abs(np_losses - np.array(losses, dtype=np.float32)).max() < 1e-5
    for k, v in params.items():
        diff = np.abs(np_w[k] - v.detach().numpy()).max()
        assert diff < 1e-5, (k, diff)


def safetensors_bytes(meta, tensors):
    """safetensors: u64 LE header length, JSON header (padded with spaces to 8 bytes), raw LE data."""
    header = {"__metadata__": meta}
    blobs, off = [], 0
    for k, a in tensors.items():
        if a.dtype == np.float32:
            dtype = "F32"
        elif a.dtype == np.int32:
            dtype = "I32"
        else:
            raise TypeError(f"{k}: unsupported dtype {a.dtype}")
        b = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()
        header[k] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hb = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    hb += b" " * (-len(hb) % 8)
    return struct.pack("<Q", len(hb)) + hb + b"".join(blobs)


def write_or_check(names, generate, out, check):
    """Generates each case (generate(name) -> (safetensors bytes, losses, grad norms)) and writes <out>/<name>.safetensors,
    or with check compares it with the file there; exits 1 when any differs. gen_lora_golden.py's main uses it too."""
    bad = 0
    for name in names:
        data, losses, norms = generate(name)
        path = os.path.join(out, name + ".safetensors")
        print(f"{name}: {len(data)} bytes, loss {losses[0]:.6f} -> {losses[-1]:.6f}, "
              f"grad norms {norms[0]:.4f} .. {norms[-1]:.4f}")
        if check:
            same = os.path.exists(path) and open(path, "rb").read() == data
            print(f"  {path}: {'identical' if same else 'DIFFERENT'}")
            bad += not same
        else:
            os.makedirs(out, exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            print(f"  wrote {path}")
    sys.exit(1 if bad else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    ap.add_argument("--out", default=OUT_DIR)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    write_or_check(CONFIGS, generate, args.out, args.check)


if __name__ == "__main__":
    main()
