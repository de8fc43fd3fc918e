#!/usr/bin/python3
"""LoRA training golden files for ane4j (LoraGoldenTest), on the models of tools/gen_golden.py.

The same base weights and tokens as gen_golden.py; low-rank adapters A (r, in), B (out, r) on the targeted projections,
computed as Hugging Face PEFT's LoraLayer computes them (no peft needed):

    y = x·Wᵀ + s·(dropout(x)·Aᵀ)·Bᵀ,   s = alpha / r

only the adapters are parameters (the base is frozen: no gradient, no AdamW moments), AdamW as torch.optim.AdamW with
weight decay on every adapter tensor, global-norm clipping over the adapters. Writes
src/test/resources/golden/lora/<case>.safetensors (layout in tools/TRAINING-GOLDEN.md, "LoRA goldens").

  llama_qvo1   llama config, targets q,v,o,w1, loss on every position
  qwen3_all    qwen3 config (GQA, QK-norm), targets q,k,v,o,w1,w2,w3, loss only on the completion (targets of the
               first PROMPT positions are -1: torch's ignore_index, the mean over the counted positions)
  llama_drop   llama config, targets q,k,v,o,w1,w2,w3, lora_dropout 0.25, loss on every position
  qwen3_drop   qwen3 config, targets q,k,v,o,w1,w2,w3, lora_dropout 0.1, loss only on the completion

Dropout (PEFT: an independent nn.Dropout(p) per adapted Linear, on the adapter path's input only) uses ane4j's masks:
the counter-based generator of ane4j.train.LoraDropout (keep_mask below), keyed by (seed, sequence = AdamW step,
layer, target, element), kept elements scaled by 1/(1-p) as torch's dropout. Each case also stores maskCheck, the keep
bits of (sequence 3, layer 1, target w2), which LoraDropoutTest compares bit for bit.

Self-checks before writing: the LoRA forward equals gen_golden.forward on the merged weights W + s·B·A (float64), and
the adapter gradients match a central difference of that merged-weights loss along random directions (float64); with
dropout (no merged equivalent) the central difference is of the LoRA forward itself with the step's masks fixed.

Run:   /usr/bin/python3 tools/gen_lora_golden.py          (from the repository root)
Check: /usr/bin/python3 tools/gen_lora_golden.py --check  (regenerate in memory, compare with the committed files)

--peft: loads the PEFT folders ane4j exported from each case's final adapters (src/test/resources/golden/lora/peft/<case>/,
written by `java -cp target/classes:target/test-classes ane4j.train.PeftAdapterTest`) the way a Python user would: tensor
names base_model.model.model.layers.N.{self_attn.q_proj,…,mlp.gate_proj,…}.lora_{A,B}.weight, r/lora_alpha/target_modules
from adapter_config.json, on the base in Hugging Face's layout (q/k rows of interleaved-RoPE models permuted to
rotate-half, as transformers' Llama conversion does; RoPE rotate_half); writes golden/lora/peft/golden.json with the logits
of the case's tokens at every position. Self-check: equal (1e-5) to the LoRA forward of the final adapters in ane4j's layout.
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_golden as G  # noqa: E402  the base model, its init, the golden records and the safetensors writer

SCRIPT = "tools/gen_lora_golden.py"
OUT_DIR = os.path.join("src", "test", "resources", "golden", "lora")
FORMAT = "ane4j-lora-golden"
VERSION = "1"
TARGETS = ["q", "k", "v", "o", "w1", "w2", "w3"]
BASE_NAME = {"q": "wq", "k": "wk", "v": "wv", "o": "wo", "w1": "w1", "w2": "w2", "w3": "w3"}
CASES = {
    "llama_qvo1": dict(config="llama", rank=4, alpha=8.0, targets=["q", "v", "o", "w1"], prompt=0, seed=11),
    "qwen3_all": dict(config="qwen3", rank=4, alpha=8.0, targets=TARGETS, prompt=6, seed=12),
    "llama_drop": dict(config="llama", rank=4, alpha=8.0, targets=TARGETS, prompt=0, seed=13, dropout=0.25, dropoutSeed=77),
    "qwen3_drop": dict(config="qwen3", rank=4, alpha=8.0, targets=TARGETS, prompt=6, seed=14, dropout=0.1, dropoutSeed=78),
}
PEFT_CASES = ["llama_qvo1", "qwen3_all"]     # the exported PEFT folders --peft loads
MASK = (1 << 64) - 1
SALT, GAMMA = 0x4C6F7261447270, 0x9E3779B97F4A7C15


def mix(z):
    """SplitMix64's finalizer (java.util.SplittableRandom.mix64) on a Python int or a numpy uint64 array."""
    if isinstance(z, np.ndarray):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def keep_mask(p, seed, sequence, layer, target, n_in, S):
    """ane4j's LoraDropout mask of (sequence, layer, target): bool (S, n_in); element e = ch·S + t of the (in, S) array."""
    k = mix(mix(mix(mix((seed & MASK) ^ SALT) ^ sequence) ^ layer) ^ TARGETS.index(target))
    e = np.arange(n_in * S, dtype=np.uint64)
    with np.errstate(over="ignore"):
        bits = mix(np.uint64(k) + (e + np.uint64(1)) * np.uint64(GAMMA))
    threshold = math.ceil(float(np.float32(p)) * 16777216.0)
    keep = (bits >> np.uint64(40)) >= np.uint64(threshold)
    return torch.tensor(keep.reshape(n_in, S).T.copy())


def masks_of(c, case, sequence):
    """Every adapted (layer, target)'s mask for one step, or None without dropout."""
    p = case.get("dropout", 0.0)
    if p == 0:
        return None
    ins = {"q": c["dim"], "k": c["dim"], "v": c["dim"], "o": c["nHeads"] * c["headDim"], "w1": c["dim"], "w2": c["hiddenDim"], "w3": c["dim"]}
    return {(l, t): keep_mask(p, case["dropoutSeed"], sequence, l, t, ins[t], c["seqLen"]) for l in range(c["nLayers"]) for t in case["targets"]}
OPT = dict(lr=1e-2, beta1=0.9, beta2=0.95, eps=1e-8, weightDecay=0.1, clip=0.5, adamSteps=10)


def adapter_names(c, targets):
    out = []
    for l in range(c["nLayers"]):
        for t in TARGETS:
            if t in targets:
                out += [f"layers.{l}.{t}.loraA", f"layers.{l}.{t}.loraB"]
    return out


def init_adapters(c, base, case):
    """A ~ U(-1/sqrt(in), 1/sqrt(in)) (PEFT's kaiming_uniform_(a=sqrt(5))); B ~ 0.05·N(0,1), not PEFT's zeros, so that
    dA is not zero and every gradient is tested."""
    g = torch.Generator().manual_seed(case["seed"])
    ad = {}
    for name in adapter_names(c, case["targets"]):
        l, t = int(name.split(".")[1]), name.split(".")[2]
        out_f, in_f = base[f"layers.{l}.{BASE_NAME[t]}"].shape
        r = case["rank"]
        if name.endswith("loraA"):
            ad[name] = (torch.rand((r, in_f), generator=g, dtype=torch.float32) * 2 - 1) / math.sqrt(in_f)
        else:
            ad[name] = 0.05 * torch.randn((out_f, r), generator=g, dtype=torch.float32)
    return ad


def lora_forward(c, base, ad, case, x, y, masks=None):
    """gen_golden.forward with every targeted projection as x·Wᵀ + s·(dropout(x)·Aᵀ)·Bᵀ; returns (logits (S, V), loss).
    masks: (layer, target) -> bool (S, in) keep mask (dropout p = case["dropout"]), or None for no dropout."""
    S, H, KV, hd, eps = c["seqLen"], c["nHeads"], c["nKvHeads"], c["headDim"], c["normEps"]
    s = case["alpha"] / case["rank"]
    if masks is not None:
        keep_scale = float(np.float32(1) / (np.float32(1) - np.float32(case["dropout"])))
    cos, sin = G.rope_tables(c)
    mask = torch.triu(torch.ones(S, S, dtype=torch.bool), diagonal=1)
    h = base["tokenEmbedding"][x]
    for l in range(c["nLayers"]):
        L = lambda n: base[f"layers.{l}.{n}"]

        def proj(inp, t):
            out = inp @ L(BASE_NAME[t]).t()
            if t in case["targets"]:
                dropped = inp if masks is None else inp * masks[(l, t)].to(inp.dtype) * keep_scale
                out = out + s * ((dropped @ ad[f"layers.{l}.{t}.loraA"].t()) @ ad[f"layers.{l}.{t}.loraB"].t())
            return out

        xn = G.rmsnorm(h, L("rmsAtt"), eps)
        q = proj(xn, "q").view(S, H, hd).transpose(0, 1)
        k = proj(xn, "k").view(S, KV, hd).transpose(0, 1)
        v = proj(xn, "v").view(S, KV, hd).transpose(0, 1)
        if c["qkNorm"]:
            q = G.rmsnorm(q, L("qNorm"), eps)
            k = G.rmsnorm(k, L("kNorm"), eps)
        q = G.rope(q, cos, sin, c["ropeStyle"])
        k = G.rope(k, cos, sin, c["ropeStyle"])
        k = k.repeat_interleave(H // KV, dim=0)
        v = v.repeat_interleave(H // KV, dim=0)
        att = (q @ k.transpose(1, 2)) / math.sqrt(hd)
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        o = (att @ v).transpose(0, 1).reshape(S, H * hd)
        h = h + proj(o, "o")
        xn2 = G.rmsnorm(h, L("rmsFfn"), eps)
        h = h + proj(F.silu(proj(xn2, "w1")) * proj(xn2, "w3"), "w2")
    xf = G.rmsnorm(h, base["rmsFinal"], eps)
    logits = xf @ base["tokenEmbedding"].t()
    return logits, F.cross_entropy(logits, y, ignore_index=-1)


def merged(c, base, ad, case):
    s = case["alpha"] / case["rank"]
    p = dict(base)
    for l in range(c["nLayers"]):
        for t in case["targets"]:
            k = f"layers.{l}.{BASE_NAME[t]}"
            p[k] = base[k] + s * ad[f"layers.{l}.{t}.loraB"] @ ad[f"layers.{l}.{t}.loraA"]
    return p


def masked_forward(c, p, x, y):
    """gen_golden.forward's model with the ignore_index loss (the merged-weights reference of the self-check)."""
    logits, _ = G.forward(c, p, x, y.clamp(min=0))
    return logits, F.cross_entropy(logits, y, ignore_index=-1)


def check_gradients(a64, grads0, loss, seed):
    """For each adapter k: <grads0[k], d> against a central difference of loss(adapters) along a random direction d
    (float64 adapters a64; the directions drawn from default_rng(seed) in adapter order)."""
    rng = np.random.default_rng(seed)
    h = 1e-6
    for k in a64:
        d = torch.tensor(rng.standard_normal(tuple(a64[k].shape)))
        fd = (loss({**a64, k: a64[k] + h * d}) - loss({**a64, k: a64[k] - h * d})) / (2 * h)
        an = float((grads0[k].double() * d).sum())
        assert abs(fd - an) < 1e-5 * max(0.1, abs(fd)), (k, fd, an)


def self_check_dropout(c, base, ad0, case, x, y, grads0):
    """With dropout: central differences of the LoRA loss itself (float64), step 0's masks fixed."""
    b64 = {k: v.double() for k, v in base.items()}
    a64 = {k: v.double() for k, v in ad0.items()}
    masks = masks_of(c, case, 0)
    torch.set_default_dtype(torch.float64)
    try:
        check_gradients(a64, grads0, lambda a: lora_forward(c, b64, a, case, x, y, masks)[1].item(), 6)
    finally:
        torch.set_default_dtype(torch.float32)


def self_check(c, base, ad0, case, x, y, logits0, grads0):
    if case.get("dropout", 0.0) > 0:
        return self_check_dropout(c, base, ad0, case, x, y, grads0)
    b64 = {k: v.double() for k, v in base.items()}
    a64 = {k: v.double() for k, v in ad0.items()}
    torch.set_default_dtype(torch.float64)
    try:
        lg, _ = masked_forward(c, merged(c, b64, a64, case), x, y)
        assert (lg - logits0.double()).abs().max() < 1e-5, (lg - logits0.double()).abs().max()
        check_gradients(a64, grads0, lambda a: masked_forward(c, merged(c, b64, a, case), x, y)[1].item(), 5)
    finally:
        torch.set_default_dtype(torch.float32)


def generate(name):
    case = CASES[name]
    c = G.CONFIGS[case["config"]]
    base, x, y = G.init_params(c)
    if case["prompt"]:
        y = y.clone()
        y[:case["prompt"]] = -1                       # the prompt: no loss, as mlx_lm.lora's mask and torch's ignore_index
    ad0 = init_adapters(c, base, case)
    ad = {k: torch.nn.Parameter(v.clone()) for k, v in ad0.items()}
    opt = torch.optim.AdamW(list(ad.values()), lr=OPT["lr"], betas=(OPT["beta1"], OPT["beta2"]), eps=OPT["eps"],
                            weight_decay=OPT["weightDecay"], foreach=False)
    losses, norms = [], []
    logits0 = loss0 = grads0 = None
    for step in range(OPT["adamSteps"]):
        opt.zero_grad(set_to_none=True)
        logits, loss = lora_forward(c, base, ad, case, x, y, masks_of(c, case, step))   # sequence = the step's number
        loss.backward()
        if step == 0:
            logits0, loss0 = logits.detach().clone(), loss.detach().clone()
            grads0 = {k: v.grad.detach().clone() for k, v in ad.items()}
        losses.append(loss.item())
        norms.append(torch.nn.utils.clip_grad_norm_(list(ad.values()), OPT["clip"]).item())
        opt.step()
    self_check(c, base, ad0, case, x, y, logits0, grads0)

    tensors = {k: v.numpy() for k, v in base.items()}
    for k, v in ad0.items():
        tensors[k] = v.numpy()
    G.add_first_step(tensors, x, y, logits0, loss0, grads0)
    tensors["losses"] = np.array(losses, dtype=np.float32)
    if case.get("dropout", 0.0) > 0:
        tensors["maskCheck"] = keep_mask(case["dropout"], case["dropoutSeed"], 3, 1, "w2", c["hiddenDim"], c["seqLen"]).T.numpy().astype(np.int32).reshape(-1)
    tensors["gradNorms"] = np.array(norms, dtype=np.float32)
    for k, v in ad.items():
        tensors["final." + k] = v.detach().numpy()

    meta = {"format": FORMAT, "version": VERSION, "case": name, "config": case["config"], "generator": SCRIPT,
            "torchVersion": torch.__version__}
    G.add_config_meta(meta, c)
    meta["rank"] = str(case["rank"])
    meta["alpha"] = repr(case["alpha"])
    meta["targets"] = ",".join(case["targets"])
    meta["prompt"] = str(case["prompt"])
    if case.get("dropout", 0.0) > 0:
        meta["dropout"] = repr(float(np.float32(case["dropout"])))
        meta["dropoutSeed"] = str(case["dropoutSeed"])
    G.add_opt_meta(meta, OPT)
    meta["adapters"] = ",".join(ad0.keys())
    return G.safetensors_bytes(meta, tensors), losses, norms


HF_MODULE = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
             "w1": "mlp.gate_proj", "w2": "mlp.down_proj", "w3": "mlp.up_proj"}


def read_safetensors(path):
    import json as _json, struct as _struct
    data = open(path, "rb").read()
    n = _struct.unpack("<Q", data[:8])[0]
    header = _json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] in ("F32", "I32"), (name, e["dtype"])
        b, en = e["data_offsets"]
        a = np.frombuffer(data[8 + n + b: 8 + n + en], dtype="<f4" if e["dtype"] == "F32" else "<i4").reshape(e["shape"])
        out[name] = torch.tensor(a.copy())
    return out, header.get("__metadata__", {})


def to_rotate_half(w, heads, hd):
    """transformers' permute for Llama q/k: per head, interleaved row 2i+p -> row p*hd/2 + i."""
    out = torch.empty_like(w)
    for h in range(heads):
        for i in range(hd // 2):
            for p in range(2):
                out[h * hd + p * (hd // 2) + i] = w[h * hd + 2 * i + p]
    return out


def peft_golden(name, folder):
    import hashlib, json as _json
    case = CASES[name]
    c = G.CONFIGS[case["config"]]
    g, _ = read_safetensors(os.path.join(OUT_DIR, name + ".safetensors"))
    text = open(os.path.join(folder, "adapter_config.json")).read()
    cfg = _json.loads(text)
    # PEFT's own form of the file (PeftConfigMixin.save_pretrained: json.dumps(indent=2, sort_keys=True)), byte for byte
    assert text == _json.dumps(cfg, indent=2, sort_keys=True), "adapter_config.json is not in json.dumps(indent=2, sort_keys=True) form"
    st, _ = read_safetensors(os.path.join(folder, "adapter_model.safetensors"))
    assert cfg["peft_type"] == "LORA" and cfg["task_type"] == "CAUSAL_LM", cfg
    inv = {v.split(".")[1]: k for k, v in HF_MODULE.items()}
    targets = [inv[m] for m in cfg["target_modules"]]
    hf_case = dict(case, rank=cfg["r"], alpha=float(cfg["lora_alpha"]), targets=targets)
    # the base in Hugging Face's layout
    base = {k: g[k] for k, _ in G.param_shapes(c)}
    hf_c = dict(c)
    if c["ropeStyle"] == "interleaved":
        hf_c["ropeStyle"] = "half"
        for l in range(c["nLayers"]):
            base[f"layers.{l}.wq"] = to_rotate_half(base[f"layers.{l}.wq"], c["nHeads"], c["headDim"])
            base[f"layers.{l}.wk"] = to_rotate_half(base[f"layers.{l}.wk"], c["nKvHeads"], c["headDim"])
    # the adapter by PEFT's names, nothing else in the file
    ad, used = {}, set()
    for l in range(c["nLayers"]):
        for t in targets:
            for ab, key in (("A", "loraA"), ("B", "loraB")):
                n = f"base_model.model.model.layers.{l}.{HF_MODULE[t]}.lora_{ab}.weight"
                ad[f"layers.{l}.{t}.{key}"] = st[n]
                used.add(n)
    assert used == set(st), set(st) - used
    x, y = g["tokens"].long(), g["targets"].long()
    logits, _ = lora_forward(hf_c, base, ad, hf_case, x, y)
    # self-check: the same function as the final adapters in ane4j's own layout
    final = {k[len("final."):]: v for k, v in g.items() if k.startswith("final.")}
    ref, _ = lora_forward(c, {k: g[k] for k, _ in G.param_shapes(c)}, final, case, x, y)
    assert (logits - ref).abs().max() < 1e-5, (logits - ref).abs().max()
    sha = {f: hashlib.sha256(open(os.path.join(folder, f), "rb").read()).hexdigest() for f in ("adapter_model.safetensors", "adapter_config.json")}
    return {"sha256": sha, "tokens": x.tolist(), "logits": [[float(v) for v in row] for row in logits.detach().numpy().astype(np.float32)]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    ap.add_argument("--out", default=OUT_DIR)
    ap.add_argument("--peft", action="store_true", help="write golden/lora/peft/golden.json from the exported PEFT folders")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    if args.peft:
        import json as _json
        out = {name: peft_golden(name, os.path.join(OUT_DIR, "peft", name)) for name in PEFT_CASES}
        path = os.path.join(OUT_DIR, "peft", "golden.json")
        with open(path, "w") as f:
            _json.dump({"generator": SCRIPT + " --peft", "torchVersion": torch.__version__, **out}, f)
        print(f"wrote {path}")
        return
    G.write_or_check(CASES, generate, args.out, args.check)


if __name__ == "__main__":
    main()
