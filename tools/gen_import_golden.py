#!/usr/bin/python3
"""Golden files for `--init` import (ImportGoldenTest): the tiny models of gen_model_golden.py in the layouts other
tools write them, and the logits PyTorch computes from exactly the weights each file holds.

  golden/import/llama_tiny_v1.bin        llama2.c export.py version1_export: uint32 magic "ak42", int32 version 1,
                                         7 int32 params, uint8 shared_classifier, zero padding to 256 bytes, then
                                         norms (att, ffn, final), embedding, wq, wk, wv, wo, w1, w2, w3, [wcls]; no freq_cis.
                                         Same float32 weights as llama_tiny.bin, so logits.json's llama_tiny logits apply.
  golden/import/llama_sharded_f16/       the same model as transformers' convert_llama_weights_to_hf.py lays it out
                                         (q/k rows permuted to rotate-half, names model.layers.N.…), F16, saved in 2
                                         shards + model.safetensors.index.json as save_pretrained(max_shard_size=…)
                                         names them, config.json (LlamaForCausalLM)
  golden/import/qwen3_sharded_bf16/      qwen3_tiny (GQA, QK-norm, tied) in BF16, 3 shards + index + config.json
  golden/import/logits.json              logits of gen_model_golden.TOKENS for the two sharded models, computed
                                         from their rounded weights by gen_model_golden.forward (float64)

Run from the repository root:  /usr/bin/python3 tools/gen_import_golden.py   (needs torch; CI never runs this)
"""
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_model_golden as g  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "test", "resources", "golden", "import")
torch.set_default_dtype(torch.float64)


def write_v1(path, cfg, w):
    with open(path, "wb") as f:
        f.write(struct.pack("<I", 0x616B3432))
        f.write(struct.pack("<i", 1))
        f.write(struct.pack("<7i", cfg["dim"], cfg["hidden_dim"], cfg["n_layers"], cfg["n_heads"], cfg["n_kv_heads"], cfg["vocab_size"], cfg["seq_len"]))
        f.write(struct.pack("<B", int(cfg["tied"])))
        f.write(b"\0" * (256 - f.tell()))
        order = [lw["rmsAtt"] for lw in w["layers"]] + [lw["rmsFfn"] for lw in w["layers"]] + [w["rmsFinal"], w["tokenEmbedding"]]
        for name in ["wq", "wk", "wv", "wo", "w1", "w2", "w3"]:
            order += [lw[name] for lw in w["layers"]]
        if not cfg["tied"]:
            order.append(w["wcls"])
        for t in order:
            f.write(g.f32(t))


def hf_permute(t, heads):
    """convert_llama_weights_to_hf.py permute: interleaved pairs → rotate-half halves, per head."""
    rows, cols = t.shape
    return t.view(heads, rows // heads // 2, 2, cols).transpose(1, 2).reshape(rows, cols)


def hf_tensors(cfg, w):
    out = [("model.embed_tokens.weight", w["tokenEmbedding"])]
    for i, lw in enumerate(w["layers"]):
        for name, t in lw.items():
            out.append(("model.layers.%d.%s.weight" % (i, g.HF[name]), t))
    out.append(("model.norm.weight", w["rmsFinal"]))
    if not cfg["tied"]:
        out.append(("lm_head.weight", w["wcls"]))
    return out


def raw(t, dtype):
    if dtype == "F16":
        return t.to(torch.float16).contiguous().view(torch.int16).numpy().tobytes()
    return t.to(torch.bfloat16).contiguous().view(torch.int16).numpy().tobytes()


def write_sharded(folder, cfg, w, dtype, shards, config):
    os.makedirs(folder, exist_ok=True)
    tensors = hf_tensors(cfg, w)
    per = -(-len(tensors) // shards)
    weight_map, total = {}, 0
    for s in range(shards):
        name = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
        for tname, t in tensors[s * per:(s + 1) * per]:
            b = raw(t, dtype)
            header[tname] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
            blobs.append(b)
            off += len(b)
            weight_map[tname] = name
        total += off
        h = json.dumps(header).encode()
        h += b" " * ((8 - len(h) % 8) % 8)
        with open(os.path.join(folder, name), "wb") as f:
            f.write(struct.pack("<Q", len(h)))
            f.write(h)
            for b in blobs:
                f.write(b)
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


def rounded(w, dtype):
    td = torch.float16 if dtype == "F16" else torch.bfloat16
    r = {"tokenEmbedding": w["tokenEmbedding"].to(td).double(), "rmsFinal": w["rmsFinal"].to(td).double(), "wcls": w["wcls"].to(td).double(),
         "layers": [{k: v.to(td).double() for k, v in lw.items()} for lw in w["layers"]]}
    if w["wcls"] is w["tokenEmbedding"]:
        r["wcls"] = r["tokenEmbedding"]
    return r


def logits_json(logits):
    return {"tokens": g.TOKENS, "logits": [[float("%.9g" % v) for v in row] for row in logits.tolist()]}


def main():
    os.makedirs(OUT, exist_ok=True)
    golden = {}
    # llama2.c v1: llama_tiny's weights, interleaved RoPE as llama2.c trains them
    llama_w = g.make_weights(g.LLAMA, 1)
    write_v1(os.path.join(OUT, "llama_tiny_v1.bin"), g.LLAMA, llama_w)

    # Hugging Face Llama, F16, 2 shards: q/k permuted to rotate-half, so the half-RoPE forward gives llama_tiny's logits
    hf_w = {"tokenEmbedding": llama_w["tokenEmbedding"], "rmsFinal": llama_w["rmsFinal"], "wcls": llama_w["wcls"],
            "layers": [dict(lw, wq=hf_permute(lw["wq"], g.LLAMA["n_heads"]), wk=hf_permute(lw["wk"], g.LLAMA["n_kv_heads"])) for lw in llama_w["layers"]]}
    c = g.LLAMA
    write_sharded(os.path.join(OUT, "llama_sharded_f16"), c, hf_w, "F16", 2,
                  {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": c["dim"], "intermediate_size": c["hidden_dim"],
                   "num_hidden_layers": c["n_layers"], "num_attention_heads": c["n_heads"], "num_key_value_heads": c["n_kv_heads"],
                   "vocab_size": c["vocab_size"], "rope_theta": c["theta"], "rms_norm_eps": c["eps"], "tie_word_embeddings": False,
                   "max_position_embeddings": c["seq_len"], "torch_dtype": "float16"})
    half = dict(c, rope="half")
    golden["llama_sharded_f16"] = logits_json(g.forward(half, rounded(hf_w, "F16"), g.TOKENS))
    # sanity: before rounding, the permuted model is llama_tiny
    assert torch.allclose(g.forward(half, hf_w, g.TOKENS), g.forward(c, llama_w, g.TOKENS), atol=1e-9)

    # Qwen3, BF16, 3 shards, tied embedding
    q = g.QWEN3
    qwen_w = g.make_weights(q, 2)
    write_sharded(os.path.join(OUT, "qwen3_sharded_bf16"), q, qwen_w, "BF16", 3,
                  {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": q["dim"], "intermediate_size": q["hidden_dim"],
                   "num_hidden_layers": q["n_layers"], "num_attention_heads": q["n_heads"], "num_key_value_heads": q["n_kv_heads"],
                   "head_dim": q["head_dim"], "vocab_size": q["vocab_size"], "rope_theta": q["theta"], "rms_norm_eps": q["eps"],
                   "tie_word_embeddings": True, "max_position_embeddings": 40960, "torch_dtype": "bfloat16"})
    golden["qwen3_sharded_bf16"] = logits_json(g.forward(q, rounded(qwen_w, "BF16"), g.TOKENS))
    with open(os.path.join(OUT, "logits.json"), "w") as f:
        json.dump({"version": 1, "generator": "tools/gen_import_golden.py", **golden}, f)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
