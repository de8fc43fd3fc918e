#!/usr/bin/python3
"""PyTorch baseline for the README's fine-tuning figures: ms/step and peak RSS of a LoRA (or full) training step.

The model of tools/gen_golden.py (llama2-style, written from the math) at a preset size, random init, fp32 on the CPU,
one sequence of seqLen random tokens per step, AdamW over the trained tensors only (LoRA: the adapters of
tools/gen_lora_golden.py on q,k,v,o,w1,w2,w3; the base frozen with requires_grad False, so autograd forms no dW).

Run one process per mode (peak RSS is per process), under the big-memory lock:
  flock /work/bigmem.lock /usr/bin/python3 tools/torch_lora_step.py --mode lora8 --steps 6
  flock /work/bigmem.lock /usr/bin/python3 tools/torch_lora_step.py --mode full --steps 6
"""
import argparse
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_golden as G  # noqa: E402
import gen_lora_golden as L  # noqa: E402

PRESETS = {
    "stories15m": dict(dim=288, hiddenDim=768, nLayers=6, nHeads=6, nKvHeads=6, headDim=48, vocabSize=32000, seqLen=256),
    "stories110m": dict(dim=768, hiddenDim=2048, nLayers=12, nHeads=12, nKvHeads=12, headDim=64, vocabSize=32000, seqLen=256),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="stories110m", choices=sorted(PRESETS))
    ap.add_argument("--mode", default="lora8", help="full, or loraR (rank R on q,k,v,o,w1,w2,w3)")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    c = dict(PRESETS[args.model], ropeTheta=10000.0, ropeStyle="interleaved", qkNorm=False, normEps=1e-5, seed=1)
    g = torch.Generator().manual_seed(1)
    base = {}
    for name, shape in G.param_shapes(c):
        r = torch.randn(shape, generator=g)
        base[name] = (1.0 + 0.1 * r) if G.is_norm(name) else 0.02 * r
    if args.mode == "full":
        params = {k: torch.nn.Parameter(v) for k, v in base.items()}
        case = dict(rank=1, alpha=1.0, targets=[])
        trained, fwd = list(params.values()), lambda x, y: G.forward(c, params, x, y)
    else:
        rank = int(args.mode[4:])
        case = dict(rank=rank, alpha=16.0, targets=L.TARGETS, seed=2)
        ad = {k: torch.nn.Parameter(v) for k, v in L.init_adapters(c, base, case).items()}
        trained, fwd = list(ad.values()), lambda x, y: L.lora_forward(c, base, ad, case, x, y)
    opt = torch.optim.AdamW(trained, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, foreach=False)
    ms = []
    for _ in range(args.steps):
        t = torch.randint(0, c["vocabSize"], (c["seqLen"] + 1,), generator=g)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        _, loss = fwd(t[:-1], t[1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        opt.step()
        ms.append((time.perf_counter() - t0) * 1000)
    after = sorted(ms[1:])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"torch {torch.__version__} {args.mode} {args.model}: ms/step median {after[len(after) // 2]:.0f} "
          f"(range {after[0]:.0f}–{after[-1]:.0f} over steps 1..{args.steps - 1}), peak RSS {rss} kB, "
          f"{sum(p.numel() for p in trained):,} trained parameters, {args.threads} threads")


if __name__ == "__main__":
    main()
