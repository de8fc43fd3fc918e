#!/usr/bin/env python3
"""Dequantization goldens for ane4j's GGUF reader (GgufGoldenTest), from the published block formats, in numpy.

Writes src/test/resources/golden/gguf_quants.gguf: a GGUF v3 file whose tensors are random blocks of every type ane4j
reads (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K; each 2 rows of 512 values) and, for each, an F32 tensor
'<name>.expected' holding numpy's dequantization of it. Also a few metadata values of every GGUF value type, which the
Java and npm (@huggingface/gguf) readers must both return.

The block layouts are those of ggml's ggml-common.h (block_q8_0, block_q4_0, block_q4_K, block_q5_K, block_q6_K) and
the arithmetic that of ggml-quants.c's dequantize_row_* reference functions, restated here vectorised in numpy (fp32,
the same operation order, no FMA). docs/import-formats.md describes them.

    python3 tools/gen_gguf_golden.py            # needs numpy only
"""
import os
import struct

import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "src", "test", "resources", "golden", "gguf_quants.gguf")
ALIGN = 32
GGML = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 8, "Q4_K": 12, "Q5_K": 13, "Q6_K": 14, "BF16": 30}
BLOCK = {"F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "Q8_0": (32, 34), "Q4_0": (32, 18), "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210)}


def f16s(rng, n, lo=-3, hi=-1):
    """n random fp16 scales of magnitude 10^lo..10^hi (finite), as uint16 bits."""
    mag = 10 ** rng.uniform(lo, hi, n)
    sign = rng.choice([-1.0, 1.0], n)
    return (mag * sign).astype(np.float16).view(np.uint16)


def random_blocks(kind, nblocks, rng):
    """Random but valid blocks: finite fp16 scales, every other byte uniform."""
    size = BLOCK[kind][1]
    raw = rng.integers(0, 256, size=(nblocks, size), dtype=np.uint8)
    if kind in ("Q8_0", "Q4_0"):
        raw[:, 0:2] = f16s(rng, nblocks).view(np.uint8).reshape(nblocks, 2)
    elif kind in ("Q4_K", "Q5_K"):
        raw[:, 0:2] = np.abs(f16s(rng, nblocks).view(np.float16)).view(np.uint16).view(np.uint8).reshape(nblocks, 2)
        raw[:, 2:4] = np.abs(f16s(rng, nblocks).view(np.float16)).view(np.uint16).view(np.uint8).reshape(nblocks, 2)
    elif kind == "Q6_K":
        raw[:, 208:210] = f16s(rng, nblocks, -4, -2).view(np.uint8).reshape(nblocks, 2)
    return raw


def half(b, at):
    return b[:, at:at + 2].copy().view(np.float16).astype(np.float32).reshape(-1, 1)


def scale_min_k4(s):
    """ggml get_scale_min_k4 for j = 0..7 of every block: (nblocks, 8) scales and mins."""
    s = s.astype(np.int32)
    sc = np.empty((s.shape[0], 8), np.int32)
    mn = np.empty((s.shape[0], 8), np.int32)
    sc[:, :4] = s[:, 0:4] & 63
    mn[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc.astype(np.float32), mn.astype(np.float32)


def dequant(kind, b):
    """b: (nblocks, block bytes) uint8 -> float32 values in order."""
    n = b.shape[0]
    if kind == "F32":
        return b.copy().view(np.float32).reshape(-1)
    if kind == "F16":
        return b.copy().view(np.float16).astype(np.float32).reshape(-1)
    if kind == "BF16":
        return (b.copy().view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(-1)
    if kind == "Q8_0":
        d = half(b, 0)
        q = b[:, 2:34].view(np.int8).astype(np.float32)
        return (q * d).reshape(-1)
    if kind == "Q4_0":
        d = half(b, 0)
        qs = b[:, 2:18].astype(np.int32)
        lo = ((qs & 0xF) - 8).astype(np.float32)
        hi = ((qs >> 4) - 8).astype(np.float32)
        return np.concatenate([lo * d, hi * d], axis=1).reshape(-1)
    if kind in ("Q4_K", "Q5_K"):
        d, dmin = half(b, 0), half(b, 2)
        sc, mn = scale_min_k4(b[:, 4:16])
        if kind == "Q4_K":
            qs, qh = b[:, 16:144].astype(np.int32), np.zeros((n, 32), np.int32)
        else:
            qh, qs = b[:, 16:48].astype(np.int32), b[:, 48:176].astype(np.int32)
        out = np.empty((n, 256), np.float32)
        for g in range(4):  # 64 values per group: low nibbles are sub-block 2g, high nibbles 2g+1
            q = qs[:, 32 * g:32 * g + 32]
            lo = (q & 0xF) + ((qh >> (2 * g)) & 1) * 16
            hi = (q >> 4) + ((qh >> (2 * g + 1)) & 1) * 16
            d1, m1 = d * sc[:, 2 * g:2 * g + 1], dmin * mn[:, 2 * g:2 * g + 1]
            d2, m2 = d * sc[:, 2 * g + 1:2 * g + 2], dmin * mn[:, 2 * g + 1:2 * g + 2]
            out[:, 64 * g:64 * g + 32] = d1 * lo.astype(np.float32) - m1
            out[:, 64 * g + 32:64 * g + 64] = d2 * hi.astype(np.float32) - m2
        return out.reshape(-1)
    if kind == "Q6_K":
        ql, qh = b[:, 0:128].astype(np.int32), b[:, 128:192].astype(np.int32)
        sc = b[:, 192:208].view(np.int8).astype(np.float32)
        d = half(b, 208)
        out = np.empty((n, 256), np.float32)
        for h in range(2):
            l0, l1, hh = ql[:, 64 * h:64 * h + 32], ql[:, 64 * h + 32:64 * h + 64], qh[:, 32 * h:32 * h + 32]
            qv = [((l0 & 0xF) | ((hh & 3) << 4)) - 32, ((l1 & 0xF) | (((hh >> 2) & 3) << 4)) - 32,
                  ((l0 >> 4) | (((hh >> 4) & 3) << 4)) - 32, ((l1 >> 4) | (((hh >> 6) & 3) << 4)) - 32]
            for k in range(4):  # value l + 32k of this half uses scale l//16 + 2k of the half's 8
                s = np.repeat(sc[:, 8 * h + 2 * k:8 * h + 2 * k + 2], 16, axis=1)
                out[:, 128 * h + 32 * k:128 * h + 32 * k + 32] = (d * s) * qv[k].astype(np.float32)
        return out.reshape(-1)
    raise ValueError(kind)


def gstr(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return gstr(key) + struct.pack("<I", vtype) + payload


def main():
    rng = np.random.default_rng(20261206)
    cols, rows = 512, 2
    tensors = []  # (name, ne, type id, bytes)
    for kind in ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K"]:
        bs, bb = BLOCK[kind]
        nblocks = rows * cols // bs
        if kind == "F32":
            raw = rng.standard_normal(rows * cols).astype(np.float32).view(np.uint8).reshape(nblocks, 4)
        elif kind == "F16":
            raw = rng.standard_normal(rows * cols).astype(np.float16).view(np.uint8).reshape(nblocks, 2)
        elif kind == "BF16":
            raw = (rng.standard_normal(rows * cols).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.uint8).reshape(nblocks, 2)
        else:
            raw = random_blocks(kind, nblocks, rng)
        values = dequant(kind, raw)
        assert values.shape == (rows * cols,) and np.all(np.isfinite(values)), kind
        tensors.append((kind.lower() + ".weight", [cols, rows], GGML[kind], raw.tobytes()))
        tensors.append((kind.lower() + ".weight.expected", [cols, rows], 0, values.astype("<f4").tobytes()))
    meta = [
        kv("general.architecture", 8, gstr("ane4j-golden")),
        kv("general.alignment", 4, struct.pack("<I", ALIGN)),
        kv("test.u8", 0, struct.pack("<B", 200)), kv("test.i8", 1, struct.pack("<b", -100)),
        kv("test.u16", 2, struct.pack("<H", 60000)), kv("test.i16", 3, struct.pack("<h", -30000)),
        kv("test.u32", 4, struct.pack("<I", 4000000000)), kv("test.i32", 5, struct.pack("<i", -2000000000)),
        kv("test.f32", 6, struct.pack("<f", 0.25)), kv("test.bool", 7, struct.pack("<B", 1)),
        kv("test.string", 8, gstr("héllo ▁wörld")),
        kv("test.u64", 10, struct.pack("<Q", 1 << 40)), kv("test.i64", 11, struct.pack("<q", -(1 << 40))),
        kv("test.f64", 12, struct.pack("<d", 1e-6)),
        kv("test.array_i32", 9, struct.pack("<IQ", 5, 3) + struct.pack("<3i", 1, -2, 3)),
        kv("test.array_str", 9, struct.pack("<IQ", 8, 2) + gstr("a b") + gstr("Ġthe")),
    ]
    header = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta)) + b"".join(meta)
    offset, infos, data = 0, b"", b""
    for name, ne, t, raw in tensors:
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", t, offset)
        pad = (-len(raw)) % ALIGN
        data += raw + b"\0" * pad
        offset += len(raw) + pad
    head = header + infos
    head += b"\0" * ((-len(head)) % ALIGN)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "wb") as f:
        f.write(head + data)
    print(f"wrote {os.path.normpath(OUT)}: {len(tensors)} tensors, {len(head + data)} bytes")


if __name__ == "__main__":
    main()
