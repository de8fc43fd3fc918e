#!/usr/bin/python3
"""PyTorch CPU training-step benchmark: the baseline for `ane4j bench step --compare-torch` (issues 5 and 8).

Builds the same transformer as tools/gen_golden.py (pre-norm RMSNorm, RoPE, causal attention with GQA, SwiGLU,
tied embedding, fp32) for a named config, batch 1, and times full training steps on the CPU:
forward + cross-entropy, backward, then global-norm clipping (1.0) + AdamW (lr 1e-3, betas 0.9/0.95,
weight decay 0.1 on matrices and the embedding, 0 on norms) + zero_grad. Warm-up steps are not timed.

Usage: /usr/bin/python3 tools/torch_train_step.py --model stories15m --steps 10 [--json] [--threads N]
       [--set key=value ...]   (override any config field, e.g. --set seqLen=128)
Output with --json: one line {"model", "ms_per_step_median", "steps", "threads", "torch", "phases": {...}, ...,
                  "blas": {"coretype_env", "libraries": [{"path", "core", "config"}], "config"},
                  "peak_rss_mb", "state_mb" (weights + grads + AdamW moments, fp32)}
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_golden import NORM_SUFFIXES, forward, param_shapes  # noqa: E402  (the golden model, reused as is)
import blas_info  # noqa: E402  (which OpenBLAS and core this process runs)

LLAMA = dict(ropeTheta=10000.0, ropeStyle="interleaved", qkNorm=False, normEps=1e-5)
MODELS = {
    # llama2.c stories models (tied classifier)
    "stories15m": dict(dim=288, hiddenDim=768, nLayers=6, nHeads=6, nKvHeads=6, headDim=48, vocabSize=32000,
                       seqLen=256, **LLAMA),
    "stories42m": dict(dim=512, hiddenDim=1376, nLayers=8, nHeads=8, nKvHeads=8, headDim=64, vocabSize=32000,
                       seqLen=256, **LLAMA),
    "stories110m": dict(dim=768, hiddenDim=2048, nLayers=12, nHeads=12, nKvHeads=12, headDim=64, vocabSize=32000,
                        seqLen=256, **LLAMA),
    # a small config for quick runs; keep it in step with ane4j.model's `tiny` when that is fixed
    "tiny": dict(dim=128, hiddenDim=384, nLayers=4, nHeads=4, nKvHeads=4, headDim=32, vocabSize=512,
                 seqLen=128, **LLAMA),
    # Qwen3-0.6B shape (about 9.5 GB for weights, grads and moments in fp32)
    "qwen3-0.6b": dict(dim=1024, hiddenDim=3072, nLayers=28, nHeads=16, nKvHeads=8, headDim=128, vocabSize=151936,
                       seqLen=256, ropeTheta=1e6, ropeStyle="half", qkNorm=True, normEps=1e-6),
}


def build(c, seed=0):
    g = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in param_shapes(c):
        if name.split(".")[-1] in NORM_SUFFIXES:
            params[name] = torch.nn.Parameter(torch.ones(shape))
        else:
            params[name] = torch.nn.Parameter(0.02 * torch.randn(shape, generator=g))
    t = torch.randint(0, c["vocabSize"], (c["seqLen"] + 1,), generator=g)
    return params, t[:-1].clone(), t[1:].clone()


def peak_rss_bytes():
    """The process's peak resident set (VmHWM): ru_maxrss is KiB on Linux, bytes on macOS."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else 1024 * r


def config(model, sets, tool):
    """The preset `model` with the --set KEY=VALUE overrides in `sets` (a value takes the field's type); an unknown
    field exits with one line tagged [tool]. torch_lora_step.py uses it too."""
    c = dict(MODELS[model])
    for kv in sets:
        k, _, v = kv.partition("=")
        if k not in c:
            sys.exit(f"[{tool}] unknown config field '{k}'; known: {', '.join(c)}")
        c[k] = type(c[k])(v) if not isinstance(c[k], bool) else v.lower() == "true"
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="stories15m", choices=sorted(MODELS))
    ap.add_argument("--steps", type=int, default=10, help="timed steps (after 2 warm-up steps)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config field")
    ap.add_argument("--json", action="store_true", help="print only the JSON line")
    args = ap.parse_args()
    if args.steps < 1:
        sys.exit(f"[torch_train_step] --steps must be >= 1, got {args.steps}")

    c = config(args.model, args.set, "torch_train_step")

    torch.set_num_threads(args.threads)
    params, x, y = build(c)
    decay = [p for n, p in params.items() if n.split(".")[-1] not in NORM_SUFFIXES]
    no_decay = [p for n, p in params.items() if n.split(".")[-1] in NORM_SUFFIXES]
    opt = torch.optim.AdamW([dict(params=decay, weight_decay=0.1), dict(params=no_decay, weight_decay=0.0)],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    n_params = sum(p.numel() for p in params.values())

    load_start = os.getloadavg()[0]
    times = {"step": [], "forward": [], "backward": [], "optimizer": [], "cpu": []}
    losses = []
    for i in range(args.warmup + args.steps):
        c0 = time.process_time()
        t0 = time.perf_counter()
        _, loss = forward(c, params, x, y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        c3 = time.process_time()
        losses.append(loss.item())
        if i >= args.warmup:
            for k, v in (("step", t3 - t0), ("forward", t1 - t0), ("backward", t2 - t1), ("optimizer", t3 - t2),
                         ("cpu", c3 - c0)):
                times[k].append(1000.0 * v)
        if not args.json:
            print(f"step {i:3d}{' (warm-up)' if i < args.warmup else ''}: loss {loss.item():.4f}  "
                  f"{1000 * (t3 - t0):.1f} ms  (fwd {1000 * (t1 - t0):.1f}, bwd {1000 * (t2 - t1):.1f}, "
                  f"opt {1000 * (t3 - t2):.1f})", flush=True)

    med = {k: round(statistics.median(v), 3) for k, v in times.items()}
    out = {"model": args.model, "ms_per_step_median": med["step"], "steps": args.steps, "threads": args.threads,
           "torch": torch.__version__,
           "phases": {"forward": med["forward"], "backward": med["backward"], "optimizer": med["optimizer"]},
           "ms_per_step_min": round(min(times["step"]), 3), "cpu_ms_per_step_median": med["cpu"], "params": n_params,
           "tokens_per_s": round(1000.0 * c["seqLen"] / med["step"], 1), "seqLen": c["seqLen"], "batch": 1,
           "first_loss": round(losses[0], 4), "last_loss": round(losses[-1], 4),
           "loadavg": [round(load_start, 2), round(os.getloadavg()[0], 2)], "cpus": os.cpu_count(),
           "blas": blas_info.describe(torch.__config__.show()),
           "peak_rss_mb": round(peak_rss_bytes() / 1e6, 1), "state_mb": round(16 * n_params / 1e6, 1)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
