#!/usr/bin/python3
"""Goldens for RoPE scaling (ane4j.model.RopeScaling, RopeScalingTest).

transformers is not installed here, so the published formulas are implemented directly:
  * Hugging Face transformers, modeling_rope_utils.py: _compute_default_rope_parameters (inv_freq = 1 / base^(2i/dim)),
    _compute_linear_scaling_rope_parameters (inv_freq / factor) and _compute_llama3_parameters (Llama 3.1's rule:
    wavelen = 2*pi/inv_freq; wavelen < L/high_freq_factor kept, wavelen > L/low_freq_factor divided by factor,
    in between (1 - smooth) * inv_freq/factor + smooth * inv_freq with smooth = (L/wavelen - low)/(high - low)),
    in float32 as transformers computes them and in float64;
  * llama.cpp convert_hf_to_gguf.py, LlamaModel.generate_extra_tensors: the rope_freqs.weight tensor of the same rule
    (1, factor, or 1/((1 - smooth)/factor + smooth) per pair; llama.cpp divides each frequency by it).

Writes src/test/resources/golden/rope/:
  frequencies.json          {"cases": [{"name", "theta", "head_dim", "rope_scaling", "inv_freq_f64", "inv_freq_f32",
                            "rope_freqs" (llama3 only)}]} for Llama 3.1 8B, Llama 3.2 1B/3B and linear configs
  llama3_tiny/model.safetensors, config.json
                            a tiny Llama-architecture model (rotate-half RoPE, GQA 4/2, head_dim 16, theta 10000) whose
                            config carries rope_scaling llama3 (factor 8, low 1, high 4, original 64: with head_dim 16
                            pair 0 is kept, pairs 1-2 blended, pairs 3-7 divided, so every branch is used)
  logits.json               {"tokens", "llama3": [[V] per position], "linear2": …, "none": …}: the same weights with
                            rope_scaling llama3, linear factor 2 and none (float64 forward, full causal attention)

Run from the repository root:  /usr/bin/python3 tools/gen_rope_scaling_golden.py   (needs torch; CI never runs this)
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_model_golden as gm  # noqa: E402  (make_weights, rmsnorm, write_safetensors: the model goldens' helpers)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "test", "resources", "golden", "rope")


def default_inv_freq(theta, dim, dtype):
    # transformers: 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    return 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype) / dim))


def scaled_inv_freq(theta, dim, scaling, dtype):
    inv = default_inv_freq(theta, dim, dtype)
    kind = (scaling or {}).get("rope_type", "default")
    if kind == "default":
        return inv
    if kind == "linear":
        return inv / scaling["factor"]
    assert kind == "llama3", kind
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv
    out = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * out / factor + smooth * out
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, out)


def llama_cpp_rope_freqs(theta, dim, scaling):
    """convert_hf_to_gguf.py: freqs in float32, the rule in Python floats, stored as float32."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    out = []
    for f in freqs.tolist():
        wavelen = 2 * math.pi / f
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(float(factor))
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(out, dtype=torch.float32).tolist()


def llama3(factor, low=1.0, high=4.0, original=8192):
    return {"rope_type": "llama3", "factor": factor, "low_freq_factor": low, "high_freq_factor": high,
            "original_max_position_embeddings": original}


CASES = [  # (name, theta, head_dim, rope_scaling) as the models' config.json files give them
    ("llama-3.1-8b", 500000.0, 128, llama3(8.0)),
    ("llama-3.2-1b", 500000.0, 64, llama3(32.0)),
    ("llama-3.2-3b", 500000.0, 128, llama3(32.0)),
    ("odd-llama3", 10000.0, 32, llama3(4.0, 2.0, 8.0, 1024)),
    ("linear-4", 10000.0, 64, {"rope_type": "linear", "factor": 4.0}),
]

TINY = dict(dim=32, hidden_dim=64, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16, vocab_size=48, seq_len=64,
            theta=10000.0, eps=1e-5, rope="half", qk_norm=False, tied=False)
TINY_SCALINGS = {"llama3": llama3(8.0, 1.0, 4.0, 64), "linear2": {"rope_type": "linear", "factor": 2.0}, "none": None}
TOKENS = [1, 17, 5, 42, 5, 30, 11, 47, 0, 23, 8, 8, 19, 3, 44, 12, 29, 31, 2, 40, 6, 15, 37, 9]


def forward(cfg, w, tokens, inv_freq):
    """gen_model_golden.forward with rotate-half RoPE at the given frequencies (float64)."""
    T = len(tokens)
    NH, NKV, HD, eps = cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"], cfg["eps"]
    ang = torch.outer(torch.arange(T).double(), inv_freq.double())
    emb = torch.cat([ang, ang], dim=-1)[:, None, :]

    def rope(x):
        x1, x2 = x[..., : HD // 2], x[..., HD // 2:]
        return x * emb.cos() + torch.cat([-x2, x1], dim=-1) * emb.sin()

    x = w["tokenEmbedding"][torch.tensor(tokens)]
    mask = torch.full((T, T), float("-inf")).triu(1)
    for lw in w["layers"]:
        h = gm.rmsnorm(x, lw["rmsAtt"], eps)
        q = rope((h @ lw["wq"].T).view(T, NH, HD))
        k = rope((h @ lw["wk"].T).view(T, NKV, HD)).repeat_interleave(NH // NKV, dim=1)
        v = (h @ lw["wv"].T).view(T, NKV, HD).repeat_interleave(NH // NKV, dim=1)
        att = torch.einsum("thd,shd->hts", q, k) / HD ** 0.5 + mask
        x = x + torch.einsum("hts,shd->thd", att.softmax(-1), v).reshape(T, NH * HD) @ lw["wo"].T
        h = gm.rmsnorm(x, lw["rmsFfn"], eps)
        x = x + (torch.nn.functional.silu(h @ lw["w1"].T) * (h @ lw["w3"].T)) @ lw["w2"].T
    return gm.rmsnorm(x, w["rmsFinal"], eps) @ w["wcls"].T


def main():
    os.makedirs(os.path.join(OUT, "llama3_tiny"), exist_ok=True)
    cases = []
    for name, theta, hd, scaling in CASES:
        c = {"name": name, "theta": theta, "head_dim": hd, "rope_scaling": scaling,
             "inv_freq_f64": scaled_inv_freq(theta, hd, scaling, torch.float64).tolist(),
             "inv_freq_f32": scaled_inv_freq(theta, hd, scaling, torch.float32).tolist()}
        if scaling["rope_type"] == "llama3":
            c["rope_freqs"] = llama_cpp_rope_freqs(theta, hd, scaling)
        cases.append(c)
    with open(os.path.join(OUT, "frequencies.json"), "w") as f:
        json.dump({"version": 1, "generator": "tools/gen_rope_scaling_golden.py", "cases": cases}, f)

    w = gm.make_weights(TINY, 7)
    path = os.path.join(OUT, "llama3_tiny", "model.safetensors")
    gm.write_safetensors(path, TINY, w)
    with open(os.path.join(OUT, "llama3_tiny", "config.json"), "w") as f:
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": TINY["dim"],
                   "intermediate_size": TINY["hidden_dim"], "num_hidden_layers": TINY["n_layers"],
                   "num_attention_heads": TINY["n_heads"], "num_key_value_heads": TINY["n_kv_heads"],
                   "head_dim": TINY["head_dim"], "vocab_size": TINY["vocab_size"], "rope_theta": TINY["theta"],
                   "rms_norm_eps": TINY["eps"], "tie_word_embeddings": False, "max_position_embeddings": 512,
                   "rope_scaling": TINY_SCALINGS["llama3"]}, f, indent=2)
    logits = {"version": 1, "generator": "tools/gen_rope_scaling_golden.py", "tokens": TOKENS}
    for key, scaling in TINY_SCALINGS.items():
        inv = scaled_inv_freq(TINY["theta"], TINY["head_dim"], scaling, torch.float64)
        logits[key] = {"rope_scaling": scaling,
                       "logits": [[float("%.9g" % v) for v in row] for row in forward(TINY, w, TOKENS, inv).tolist()]}
    with open(os.path.join(OUT, "logits.json"), "w") as f:
        json.dump(logits, f)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
