#!/usr/bin/python3
"""PyTorch baseline for the fine-tuning figures: ms/step and peak RSS of a LoRA (or full) training step.

The PyTorch side of `ane4j bench step --lora R --compare-torch` (one process per mode: peak RSS is per process).
The model of tools/gen_golden.py (llama2-style or Qwen3, written from the math) at a preset of tools/torch_train_step.py,
random init, fp32 on the CPU, one sequence of seqLen random tokens per step; AdamW (lr 1e-4, betas 0.9/0.95, weight decay
0.1) over the trained tensors only, global-norm clipping 1.0. LoRA: the adapters of tools/gen_lora_golden.py (PEFT's
x·Wᵀ + s·(x·Aᵀ)·Bᵀ, lora_dropout 0, B = 0 at the start) on --targets; the base frozen (requires_grad False), so autograd forms no dW.
Warm-up steps are not timed.

Usage: /usr/bin/python3 tools/torch_lora_step.py --model stories110m --mode lora8 --steps 5 [--targets q,k,v,o,w1,w2,w3]
       [--alpha 16] [--threads 2] [--warmup 1] [--set key=value ...] [--json]
  --mode full | loraR (rank R)
Output with --json: one line {"mode", "model", "ms_per_step_median", "ms_per_step_min", "steps", "threads", "torch",
                  "trained_params", "first_loss", "last_loss", "loadavg": [start, end], "blas", "peak_rss_mb"}
By hand:  /usr/bin/python3 tools/torch_lora_step.py --mode lora8
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_golden as G  # noqa: E402  the model
import gen_lora_golden as L  # noqa: E402  the adapters
import blas_info  # noqa: E402
from torch_train_step import MODELS, config, peak_rss_bytes  # noqa: E402  the presets of the full-step baseline


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="stories110m", choices=sorted(MODELS))
    ap.add_argument("--mode", default="lora8", help="full, or loraR (rank R on --targets)")
    ap.add_argument("--targets", default=",".join(L.TARGETS), help="adapted projections, of q,k,v,o,w1,w2,w3")
    ap.add_argument("--alpha", type=float, default=16.0, help="lora_alpha (scale alpha/r)")
    ap.add_argument("--steps", type=int, default=5, help="timed steps (after the warm-up)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config field")
    ap.add_argument("--json", action="store_true", help="print only the JSON line")
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0:
        sys.exit(f"[torch_lora_step] --steps must be >= 1 and --warmup >= 0, got {args.steps}, {args.warmup}")
    if args.mode != "full" and not (args.mode.startswith("lora") and args.mode[4:].isdigit() and int(args.mode[4:]) > 0):
        sys.exit(f"[torch_lora_step] --mode {args.mode}: use full or loraR with a rank R >= 1, e.g. lora8")
    targets = [t for t in args.targets.split(",") if t]
    if any(t not in L.TARGETS for t in targets) or not targets:
        sys.exit(f"[torch_lora_step] --targets {args.targets}: use some of {','.join(L.TARGETS)}")

    c = config(args.model, args.set, "torch_lora_step")

    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(1)
    base = {}
    for name, shape in G.param_shapes(c):
        r = torch.randn(shape, generator=g)
        base[name] = (1.0 + 0.1 * r) if G.is_norm(name) else 0.02 * r
    if args.mode == "full":
        params = {k: torch.nn.Parameter(v) for k, v in base.items()}
        trained = list(params.values())

        def fwd(x, y):
            return G.forward(c, params, x, y)
    else:
        case = dict(rank=int(args.mode[4:]), alpha=args.alpha, targets=targets, seed=2)
        # gen_lora_golden's A; B = 0 as PEFT initialises it (the golden's B is random so that dA is tested)
        ad = {k: torch.nn.Parameter(torch.zeros_like(v) if k.endswith("loraB") else v)
              for k, v in L.init_adapters(c, base, case).items()}
        trained = list(ad.values())

        def fwd(x, y):
            return L.lora_forward(c, base, ad, case, x, y)
    opt = torch.optim.AdamW(trained, lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, foreach=False)

    load_start = os.getloadavg()[0]
    ms, losses = [], []
    for i in range(args.warmup + args.steps):
        t = torch.randint(0, c["vocabSize"], (c["seqLen"] + 1,), generator=g)
        t0 = time.perf_counter()
        _, loss = fwd(t[:-1], t[1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        t1 = time.perf_counter()
        losses.append(loss.item())
        if i >= args.warmup:
            ms.append(1000.0 * (t1 - t0))
        if not args.json:
            print(f"step {i:3d}{' (warm-up)' if i < args.warmup else ''}: loss {loss.item():.4f}  {1000 * (t1 - t0):.1f} ms",
                  flush=True)

    out = {"mode": args.mode, "model": args.model, "targets": targets if args.mode != "full" else [],
           "ms_per_step_median": round(statistics.median(ms), 3), "ms_per_step_min": round(min(ms), 3),
           "steps": args.steps, "threads": args.threads, "torch": torch.__version__,
           "trained_params": sum(p.numel() for p in trained), "params": sum(v.numel() for v in base.values()),
           "first_loss": round(losses[0], 4), "last_loss": round(losses[-1], 4),
           "loadavg": [round(load_start, 2), round(os.getloadavg()[0], 2)], "cpus": os.cpu_count(),
           "blas": blas_info.describe(torch.__config__.show()), "peak_rss_mb": round(peak_rss_bytes() / 1e6, 1)}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"torch {out['torch']} {args.mode} {args.model}: ms/step median {out['ms_per_step_median']:.0f} "
              f"(min {out['ms_per_step_min']:.0f}), peak RSS {out['peak_rss_mb']:.0f} MB, "
              f"{out['trained_params']:,} trained parameters, {args.threads} threads")


if __name__ == "__main__":
    main()
