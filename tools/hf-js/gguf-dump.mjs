// Prints what @huggingface/gguf (Hugging Face's own GGUF parser) reads from a local file, as one JSON object:
// { version, tensorDataOffset, tensors: [{name, shape, dtype, offset}], metadata: {key: {type, value}} }
// 64-bit integers are printed as decimal strings. Used by GgufNpmTest:  node gguf-dump.mjs FILE.gguf
import { gguf } from "@huggingface/gguf";

const file = process.argv[2];
const { metadata, typedMetadata, tensorInfos, tensorDataOffset } = await gguf(file, { allowLocalFile: true, typedMetadata: true });
const plain = (v) => (typeof v === "bigint" ? v.toString() : Array.isArray(v) ? v.map(plain) : v);
const md = {};
for (const [k, v] of Object.entries(typedMetadata)) {
  if (k === "version" || k === "tensor_count" || k === "kv_count") continue;
  md[k] = { type: v.type, subType: v.subType, value: plain(v.value) };
}
console.log(JSON.stringify({
  version: Number(metadata.version),
  tensorDataOffset: tensorDataOffset.toString(),
  tensors: tensorInfos.map((t) => ({ name: t.name, shape: t.shape.map(String), dtype: t.dtype, offset: t.offset.toString() })),
  metadata: md,
}));
