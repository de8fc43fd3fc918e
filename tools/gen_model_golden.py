#!/usr/bin/python3
"""Golden logits for ane4j.model.CpuModel (CpuModelGoldenTest).

Builds two tiny models from deterministic weights, runs the full token sequence through a PyTorch forward
(causal attention over the whole sequence, float64, written independently of the Java KV-cache code) and writes:

  src/test/resources/golden/model/llama_tiny.bin          llama2.c legacy .bin: MHA, interleaved RoPE, untied classifier
  src/test/resources/golden/model/qwen3/model.safetensors  Qwen3 names, F32: GQA 4/2, headDim 16 != dim/heads,
  src/test/resources/golden/model/qwen3/config.json        QK-norm, rotate-half RoPE, theta 1e6, eps 1e-6, tied embedding
  src/test/resources/golden/model/logits.json              {"llama_tiny": {"tokens": [...], "logits": [[V] per position]}, "qwen3_tiny": ...}

Run from the repository root:  /usr/bin/python3 tools/gen_model_golden.py   (needs torch; CI never runs this)
"""
import json
import os
import struct

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "test", "resources", "golden", "model")
torch.set_default_dtype(torch.float64)


def make_weights(cfg, seed):
    """Deterministic weights: matrices normal(0, 1/sqrt(in)), norms 1 + 0.2 * normal, embedding normal(0, 1)."""
    g = torch.Generator().manual_seed(seed)
    D, H, L, V = cfg["dim"], cfg["hidden_dim"], cfg["n_layers"], cfg["vocab_size"]
    HD = cfg["head_dim"]
    Q, KV = cfg["n_heads"] * HD, cfg["n_kv_heads"] * HD

    def mat(rows, cols):
        return (torch.randn(rows, cols, generator=g) / cols ** 0.5).float().double()  # float32-representable

    def norm(n):
        return (1.0 + 0.2 * torch.randn(n, generator=g)).float().double()

    w = {"tokenEmbedding": torch.randn(V, D, generator=g).float().double(), "layers": []}
    for _ in range(L):
        lw = {"rmsAtt": norm(D), "wq": mat(Q, D), "wk": mat(KV, D), "wv": mat(KV, D), "wo": mat(D, Q),
              "rmsFfn": norm(D), "w1": mat(H, D), "w2": mat(D, H), "w3": mat(H, D)}
        if cfg["qk_norm"]:
            lw["qNorm"], lw["kNorm"] = norm(HD), norm(HD)
        w["layers"].append(lw)
    w["rmsFinal"] = norm(D)
    w["wcls"] = w["tokenEmbedding"] if cfg["tied"] else mat(V, D)
    return w


def rmsnorm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rope_interleaved(x, theta):
    """llama2.c / Meta: pairs (2i, 2i+1) as complex numbers times e^{i pos freq_i}. x: (T, heads, HD)."""
    T, _, HD = x.shape
    freqs = 1.0 / (theta ** (torch.arange(0, HD, 2).double() / HD))
    ang = torch.outer(torch.arange(T).double(), freqs)
    xc = torch.view_as_complex(x.reshape(T, x.shape[1], HD // 2, 2).contiguous())
    return torch.view_as_real(xc * torch.polar(torch.ones_like(ang), ang)[:, None, :]).reshape(x.shape)


def rope_half(x, theta):
    """Hugging Face rotate_half: pairs (i, i + HD/2)."""
    T, _, HD = x.shape
    freqs = 1.0 / (theta ** (torch.arange(0, HD, 2).double() / HD))
    ang = torch.outer(torch.arange(T).double(), freqs)
    emb = torch.cat([ang, ang], dim=-1)[:, None, :]
    x1, x2 = x[..., : HD // 2], x[..., HD // 2:]
    return x * emb.cos() + torch.cat([-x2, x1], dim=-1) * emb.sin()


def forward(cfg, w, tokens):
    T = len(tokens)
    NH, NKV, HD, eps = cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"], cfg["eps"]
    x = w["tokenEmbedding"][torch.tensor(tokens)]
    mask = torch.full((T, T), float("-inf")).triu(1)
    rope = rope_interleaved if cfg["rope"] == "interleaved" else rope_half
    for lw in w["layers"]:
        h = rmsnorm(x, lw["rmsAtt"], eps)
        q = (h @ lw["wq"].T).view(T, NH, HD)
        k = (h @ lw["wk"].T).view(T, NKV, HD)
        v = (h @ lw["wv"].T).view(T, NKV, HD)
        if cfg["qk_norm"]:
            q, k = rmsnorm(q, lw["qNorm"], eps), rmsnorm(k, lw["kNorm"], eps)
        q, k = rope(q, cfg["theta"]), rope(k, cfg["theta"])
        k = k.repeat_interleave(NH // NKV, dim=1)  # query head h uses kv head h // (NH / NKV)
        v = v.repeat_interleave(NH // NKV, dim=1)
        att = torch.einsum("thd,shd->hts", q, k) / HD ** 0.5 + mask
        out = torch.einsum("hts,shd->thd", att.softmax(-1), v).reshape(T, NH * HD)
        x = x + out @ lw["wo"].T
        h = rmsnorm(x, lw["rmsFfn"], eps)
        x = x + (torch.nn.functional.silu(h @ lw["w1"].T) * (h @ lw["w3"].T)) @ lw["w2"].T
    return rmsnorm(x, w["rmsFinal"], eps) @ w["wcls"].T


def f32(t):
    return struct.pack("<%df" % t.numel(), *t.flatten().tolist())


def write_llama2_bin(path, cfg, w):
    D, HD, T = cfg["dim"], cfg["head_dim"], cfg["seq_len"]
    V = cfg["vocab_size"] if cfg["tied"] else -cfg["vocab_size"]
    with open(path, "wb") as f:
        f.write(struct.pack("<7i", D, cfg["hidden_dim"], cfg["n_layers"], cfg["n_heads"], cfg["n_kv_heads"], V, T))
        f.write(f32(w["tokenEmbedding"]))
        for name in ["rmsAtt", "wq", "wk", "wv", "wo", "rmsFfn", "w1", "w2", "w3"]:
            for lw in w["layers"]:
                f.write(f32(lw[name]))
        f.write(f32(w["rmsFinal"]))
        freqs = 1.0 / (cfg["theta"] ** (torch.arange(0, HD, 2).double() / HD))
        ang = torch.outer(torch.arange(T).double(), freqs)
        f.write(f32(ang.cos()))
        f.write(f32(ang.sin()))
        if not cfg["tied"]:
            f.write(f32(w["wcls"]))


HF = {"rmsAtt": "input_layernorm", "rmsFfn": "post_attention_layernorm", "wq": "self_attn.q_proj", "wk": "self_attn.k_proj",
      "wv": "self_attn.v_proj", "wo": "self_attn.o_proj", "qNorm": "self_attn.q_norm", "kNorm": "self_attn.k_norm",
      "w1": "mlp.gate_proj", "w2": "mlp.down_proj", "w3": "mlp.up_proj"}


def write_safetensors(path, cfg, w):
    tensors = [("model.embed_tokens.weight", w["tokenEmbedding"])]
    for i, lw in enumerate(w["layers"]):
        for name, t in lw.items():
            tensors.append(("model.layers.%d.%s.weight" % (i, HF[name]), t))
    tensors.append(("model.norm.weight", w["rmsFinal"]))
    if not cfg["tied"]:
        tensors.append(("lm_head.weight", w["wcls"]))
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors:
        b = f32(t)
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    with open(os.path.join(os.path.dirname(path), "config.json"), "w") as f:
        json.dump({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": cfg["dim"],
                   "intermediate_size": cfg["hidden_dim"], "num_hidden_layers": cfg["n_layers"],
                   "num_attention_heads": cfg["n_heads"], "num_key_value_heads": cfg["n_kv_heads"],
                   "head_dim": cfg["head_dim"], "vocab_size": cfg["vocab_size"], "rope_theta": cfg["theta"],
                   "rms_norm_eps": cfg["eps"], "tie_word_embeddings": cfg["tied"],
                   "max_position_embeddings": 40960}, f, indent=2)


LLAMA = dict(dim=32, hidden_dim=64, n_layers=2, n_heads=4, n_kv_heads=4, head_dim=8, vocab_size=48, seq_len=16,
             theta=10000.0, eps=1e-5, rope="interleaved", qk_norm=False, tied=False)
QWEN3 = dict(dim=32, hidden_dim=48, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16, vocab_size=48, seq_len=16,
             theta=1e6, eps=1e-6, rope="half", qk_norm=True, tied=True)
TOKENS = [1, 17, 5, 42, 5, 30, 11, 47, 0, 23]


def main():
    os.makedirs(os.path.join(OUT, "qwen3"), exist_ok=True)
    golden = {}
    for name, cfg, seed in [("llama_tiny", LLAMA, 1), ("qwen3_tiny", QWEN3, 2)]:
        w = make_weights(cfg, seed)
        logits = forward(cfg, w, TOKENS)
        golden[name] = {"tokens": TOKENS, "logits": [[float("%.9g" % v) for v in row] for row in logits.tolist()]}
        if name == "llama_tiny":
            write_llama2_bin(os.path.join(OUT, "llama_tiny.bin"), cfg, w)
        else:
            write_safetensors(os.path.join(OUT, "qwen3", "model.safetensors"), cfg, w)
    with open(os.path.join(OUT, "logits.json"), "w") as f:
        json.dump({"version": 1, "generator": "tools/gen_model_golden.py", **golden}, f)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
