#!/usr/bin/python3
"""Golden logits for `ane4j export` (ExportGoldenTest) and a greedy run.c continuation for `ane4j generate` (GenerateCommandTest).

Runs the built CLI (bin/ane4j, from ./install.sh --quick) to export the committed tiny models of gen_model_golden.py:

  llama_hf     golden/model/llama_tiny.bin          --format safetensors            (interleaved → rotate-half permutation, untied)
  qwen3_bf16   golden/model/qwen3/                  --format safetensors --dtype bf16  (QK-norm, GQA 4/2, headDim 16, tied)
  llama_bin    llama_hf's folder                    --format llama2c                (rotate-half → interleaved, back to run.c's file)

then loads each export with readers and forwards written here, independent of ane4j's Java code:
  * Hugging Face layout: config.json keys as transformers' LlamaConfig/Qwen3Config, tensor names model.layers.N.…,
    rotate_half RoPE (modeling_llama.apply_rotary_pos_emb), lm_head = embed_tokens when tie_word_embeddings;
  * llama2.c layout: run.c's read_checkpoint (7-int header, negative vocab_size = unshared classifier after the two
    freq_cis tables, which run.c skips) and run.c's forward (interleaved pairs, freq = 10000^(-(i % head_size)/head_size)).
and writes src/test/resources/golden/export/golden.json: per case the sha256 of the exported files (the test re-exports
and checks them, so the golden belongs to these bytes) and the logits of TOKENS at every position.

It also writes golden/export/tokenizer.bin (48 pieces: specials, " ", a–z, some byte tokens) and the greedy run.c
continuation of PROMPT with llama_tiny.bin: run.c's token ids, and the text their bytes decode to with Python's
backslashreplace escapes (run.c's safe_printf would drop the non-printable single-byte pieces instead).

Run from the repository root:  ./install.sh --quick && /usr/bin/python3 tools/gen_export_golden.py   (needs torch; CI never runs this)
"""
import hashlib
import json
import os
import struct
import subprocess
import tempfile

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODELS = os.path.join(ROOT, "src", "test", "resources", "golden", "model")
OUT = os.path.join(ROOT, "src", "test", "resources", "golden", "export")
TOKENS = [1, 17, 5, 42, 5, 30, 11, 47, 0, 23]
PROMPT = "cab"
torch.set_default_dtype(torch.float64)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# ---------------------------------------------------------------------------------------------------------------------
# Hugging Face folder

def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, en = e["data_offsets"]
        raw = bytearray(data[base + b: base + en])
        if e["dtype"] == "F32":
            t = torch.frombuffer(raw, dtype=torch.float32)
        elif e["dtype"] == "F16":
            t = torch.frombuffer(raw, dtype=torch.float16)
        elif e["dtype"] == "BF16":
            t = torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16)
        else:
            raise ValueError(e["dtype"])
        out[name] = t.double().reshape(e["shape"])
    return out


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat([-x2, x1], dim=-1)


def hf_forward(folder, tokens):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    w = read_safetensors(os.path.join(folder, "model.safetensors"))
    NH, NKV, eps, theta = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["rms_norm_eps"], cfg["rope_theta"]
    HD = cfg.get("head_dim") or cfg["hidden_size"] // NH
    qwen = cfg["model_type"] == "qwen3"
    T = len(tokens)
    inv_freq = 1.0 / (theta ** (torch.arange(0, HD, 2).double() / HD))
    ang = torch.outer(torch.arange(T).double(), inv_freq)
    emb = torch.cat([ang, ang], dim=-1)[:, None, :]
    cos, sin = emb.cos(), emb.sin()
    x = w["model.embed_tokens.weight"][torch.tensor(tokens)]
    mask = torch.full((T, T), float("-inf")).triu(1)
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = rmsnorm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(T, NH, HD)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(T, NKV, HD)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(T, NKV, HD)
        if qwen:
            q = rmsnorm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rmsnorm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(NH // NKV, dim=1), v.repeat_interleave(NH // NKV, dim=1)  # transformers' repeat_kv
        att = (torch.einsum("thd,shd->hts", q, k) / HD ** 0.5 + mask).softmax(-1)
        x = x + torch.einsum("hts,shd->thd", att, v).reshape(T, NH * HD) @ w[p + "self_attn.o_proj.weight"].T
        h = rmsnorm(x, w[p + "post_attention_layernorm.weight"], eps)
        x = x + (torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return rmsnorm(x, w["model.norm.weight"], eps) @ head.T


# ---------------------------------------------------------------------------------------------------------------------
# llama2.c .bin, as run.c reads and runs it

def read_llama2_bin(path):
    with open(path, "rb") as f:
        data = f.read()
    dim, hidden, L, NH, NKV, vocab, seq = struct.unpack("<7i", data[:28])
    shared = vocab > 0
    V, HS = abs(vocab), dim // NH
    KV = NKV * HS
    floats = torch.frombuffer(bytearray(data[28:]), dtype=torch.float32).double()
    at = [0]

    def take(*shape):
        n = 1
        for s in shape:
            n *= s
        t = floats[at[0]: at[0] + n].reshape(shape)
        at[0] += n
        return t

    w = {"emb": take(V, dim), "rms_att": take(L, dim), "wq": take(L, dim, dim), "wk": take(L, KV, dim), "wv": take(L, KV, dim),
         "wo": take(L, dim, dim), "rms_ffn": take(L, dim), "w1": take(L, hidden, dim), "w2": take(L, dim, hidden),
         "w3": take(L, hidden, dim), "rms_final": take(dim)}
    at[0] += seq * HS // 2 * 2  # freq_cis_real, freq_cis_imag: run.c skips them
    w["wcls"] = w["emb"] if shared else take(V, dim)
    assert at[0] == floats.numel(), "file size does not match run.c's layout"
    return dict(dim=dim, hidden=hidden, L=L, NH=NH, NKV=NKV, V=V, seq=seq), w


def runc_forward(cfg, w, token, pos, cache):
    """run.c's forward() for one token, float64: interleaved RoPE, GQA h // (NH / NKV), eps 1e-5."""
    dim, NH, NKV, L = cfg["dim"], cfg["NH"], cfg["NKV"], cfg["L"]
    HS = dim // NH
    x = w["emb"][token].clone()
    for l in range(L):
        xb = rmsnorm(x, w["rms_att"][l], 1e-5)
        q, k, v = w["wq"][l] @ xb, w["wk"][l] @ xb, w["wv"][l] @ xb
        for i in range(0, dim, 2):
            freq = 1.0 / (10000.0 ** ((i % HS) / HS))
            fcr, fci = torch.cos(torch.tensor(pos * freq)), torch.sin(torch.tensor(pos * freq))
            for vec in ([q, k] if i < NKV * HS else [q]):
                v0, v1 = vec[i].item(), vec[i + 1].item()
                vec[i], vec[i + 1] = v0 * fcr - v1 * fci, v0 * fci + v1 * fcr
        cache.setdefault(l, ([], []))
        cache[l][0].append(k)
        cache[l][1].append(v)
        K, Vv = torch.stack(cache[l][0]), torch.stack(cache[l][1])
        out = torch.zeros(dim)
        for h in range(NH):
            kvh = h // (NH // NKV)
            qh = q[h * HS:(h + 1) * HS]
            att = (K[:, kvh * HS:(kvh + 1) * HS] @ qh / HS ** 0.5).softmax(-1)
            out[h * HS:(h + 1) * HS] = att @ Vv[:, kvh * HS:(kvh + 1) * HS]
        x = x + w["wo"][l] @ out
        xb = rmsnorm(x, w["rms_ffn"][l], 1e-5)
        x = x + w["w2"][l] @ (torch.nn.functional.silu(w["w1"][l] @ xb) * (w["w3"][l] @ xb))
    return w["wcls"] @ rmsnorm(x, w["rms_final"], 1e-5)


def runc_logits(path, tokens):
    cfg, w = read_llama2_bin(path)
    cache = {}
    return torch.stack([runc_forward(cfg, w, t, pos, cache) for pos, t in enumerate(tokens)])


# ---------------------------------------------------------------------------------------------------------------------
# tokenizer and greedy generation (run.c's generate)

PIECES = ["<unk>", "\n<s>\n", "\n</s>\n", " "] + [chr(c) for c in range(ord("a"), ord("z") + 1)] \
         + ["<0x%02X>" % b for b in [0xE2, 0x82, 0xAC, 0xC3, 0xA9, 0x80, 0xFF, 0xF0, 0x9F, 0x98, 0x80]] \
         + [" the", "zz", "qq", "é", "€", ".", "!"]  # no piece merges two prompt characters
assert len(PIECES) == 48


def write_tokenizer(path):
    with open(path, "wb") as f:
        f.write(struct.pack("<i", max(len(p.encode()) for p in PIECES)))
        for p in PIECES:
            b = p.encode()
            f.write(struct.pack("<fi", 0.0, len(b)))
            f.write(b)


def piece_bytes(prev, tok):
    p = PIECES[tok]
    if prev == 1 and p.startswith(" "):
        p = p[1:]
    if len(p) == 6 and p.startswith("<0x") and p.endswith(">"):
        return bytes([int(p[3:5], 16)])
    return p.encode()


def greedy(path, prompt_ids, steps):
    """run.c generate() with -t 0 -n steps: steps forwards; the prompt is forced, then argmax; BOS stops it."""
    cfg, w = read_llama2_bin(path)
    steps = min(steps, cfg["seq"])
    cache, out, token, pos = {}, [], prompt_ids[0], 0
    while pos < steps:
        logits = runc_forward(cfg, w, token, pos, cache)
        nxt = prompt_ids[pos + 1] if pos < len(prompt_ids) - 1 else int(logits.argmax())
        pos += 1
        if nxt == 1:
            break
        out.append(nxt)
        token = nxt
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    ane4j = os.path.join(ROOT, "bin", "ane4j")
    golden = {"version": 1, "generator": "tools/gen_export_golden.py", "tokens": TOKENS}
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("llama_hf", ["--model", os.path.join(MODELS, "llama_tiny.bin"), "--format", "safetensors"], "hf"),
                 ("qwen3_bf16", ["--model", os.path.join(MODELS, "qwen3"), "--format", "safetensors", "--dtype", "bf16"], "hf"),
                 ("llama_bin", ["--model", os.path.join(tmp, "llama_hf"), "--format", "llama2c"], "bin")]
        for name, args, kind in cases:
            dest = os.path.join(tmp, name) + (".bin" if kind == "bin" else "")
            subprocess.run([ane4j, "export", *args, "--out", dest], check=True)
            if kind == "hf":
                files = {f: sha256(os.path.join(dest, f)) for f in ["model.safetensors", "config.json"]}
                logits = hf_forward(dest, TOKENS)
            else:
                files = {os.path.basename(dest): sha256(dest)}
                logits = runc_logits(dest, TOKENS)
            golden[name] = {"args": args[2:], "sha256": files, "logits": [[float("%.9g" % v) for v in row] for row in logits.tolist()]}
    tok = os.path.join(OUT, "tokenizer.bin")
    write_tokenizer(tok)
    prompt_ids = [1, PIECES.index(" ")] + [PIECES.index(c) for c in PROMPT]
    steps = 12  # run.c -n 12: 12 tokens after BOS, the prompt's 4 included, so `ane4j generate --tokens 8`
    ids = greedy(os.path.join(MODELS, "llama_tiny.bin"), prompt_ids, steps)
    text, prev = b"", 1
    for t in ids:
        text += piece_bytes(prev, t)
        prev = t
    golden["generate"] = {"model": "golden/model/llama_tiny.bin", "prompt": PROMPT, "prompt_ids": prompt_ids, "runc_steps": steps,
                          "tokens": steps - (len(prompt_ids) - 1), "ids": ids,
                          "text": text.decode("utf-8", errors="backslashreplace"), "tokenizer_sha256": sha256(tok)}
    with open(os.path.join(OUT, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1)
    print("wrote", OUT, "greedy:", golden["generate"]["text"])


if __name__ == "__main__":
    main()
