package ane4j.model;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * GGUF files (llama.cpp, LM Studio, Ollama), versions 2 and 3, as docs/import-formats.md describes them after the
 * published specification (ggml-org/ggml docs/gguf.md):
 * <pre>
 *   u32 magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count
 *   kv_count × { string key | u32 value_type | value }          string = u64 length + UTF-8 bytes (no NUL)
 *   tensor_count × { string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
 *   padding to general.alignment (default 32) | tensor data, each tensor at data_start + offset
 * </pre>
 * ne[0] is the fastest-moving dimension, so a {@code transformers} matrix [rows, cols] is ne = [cols, rows] with the
 * same bytes. Every length and count is checked against the bytes that remain before anything is allocated, so a hostile
 * file fails in one line ({@code [gguf] …}) rather than with an OutOfMemoryError.
 *
 * <p>Models: {@code general.architecture} {@code llama} (Llama 1/2/3, TinyLlama, Mistral) or {@code qwen3}; tensors in
 * F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K or Q6_K are dequantized to fp32 ({@link GgufQuants}). llama.cpp's conversion
 * (convert_hf_to_gguf.py, LlamaModel.permute) re-orders the q/k rows of {@code llama} models from Hugging Face's
 * rotate-half pairing to the interleaved one its RoPE kernel wants; {@link #read} undoes it, so the parameters equal the
 * Hugging Face original's (qwen3 files are written unpermuted: llama.cpp runs them with NEOX-style RoPE).
 *
 * <p>Tokenizers: {@code tokenizer.ggml.model} {@code gpt2} (byte-level BPE: tokens and merges, as Qwen3 and Llama 3 files
 * carry) becomes a Hugging Face tokenizer.json read by {@link ByteLevelBpe}; {@code llama} (SentencePiece BPE: tokens,
 * scores, types with {@code <0xXX>} byte tokens, as Llama 2 and TinyLlama files carry) becomes llama2.c's tokenizer.
 */
public final class Gguf {
    private static final String TAG = "[gguf] ";
    static final int MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
    static final int DEFAULT_ALIGNMENT = 32;
    private static final int MAX_DIMS = 4;   // GGML_MAX_DIMS
    private static final int MAX_DEPTH = 4;  // nesting of arrays in metadata values

    private Gguf() {}

    // ----------------------------------------------------------------------------------------------
    // types

    /** The ggml tensor types ane4j reads: id as in ggml.h's enum ggml_type, elements per block, bytes per block. */
    public enum Type {
        F32(0, 1, 4), F16(1, 1, 2), Q4_0(2, 32, 18), Q8_0(8, 32, 34), Q4_K(12, 256, 144), Q5_K(13, 256, 176), Q6_K(14, 256, 210), BF16(30, 1, 2);

        public final int id, blockSize, blockBytes;

        Type(int id, int blockSize, int blockBytes) {
            this.id = id;
            this.blockSize = blockSize;
            this.blockBytes = blockBytes;
        }

        static Type of(int id) {
            for (Type t : values()) if (t.id == id) return t;
            return null;
        }
    }

    // names of the ggml types ane4j does not read, for the error message (ggml.h)
    private static String ggmlTypeName(int id) {
        String[] names = {"F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K",
                "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16"};
        return id >= 0 && id < names.length ? names[id] : "type " + id;
    }

    /** One entry of the tensor table. {@code dims} in GGUF order (ne[0] first); {@code offset} from the data start. */
    public record TensorInfo(String name, long[] dims, Type type, long offset, long elements, long bytes) {
        /** The shape as transformers writes it: ne reversed ([rows, cols] for a matrix). */
        public long[] shape() {
            long[] s = new long[dims.length];
            for (int i = 0; i < dims.length; i++) s[i] = dims[dims.length - 1 - i];
            return s;
        }
    }

    /** The parsed header: format version, metadata (in file order), tensor table (in file order), where the data starts. */
    public record Header(int version, Map<String, Object> metadata, Map<String, TensorInfo> tensors, long dataStart, int alignment) {}

    // ----------------------------------------------------------------------------------------------
    // header

    /** Bounds-checked little-endian reads over a mapped file. */
    private static final class Cursor {
        final MemorySegment seg;
        final long size;
        final String file;
        long pos;

        Cursor(MemorySegment seg, String file) {
            this.seg = seg;
            this.size = seg.byteSize();
            this.file = file;
        }

        void need(long n, String what) {
            if (n < 0 || n > size - pos)
                throw new ModelFormatException(TAG + file + ": " + what + " at byte " + pos + " needs " + Long.toUnsignedString(n) + " bytes but "
                        + (size - pos) + " remain; truncated or not a GGUF file");
        }

        int u8(String what) { need(1, what); return seg.get(ValueLayout.JAVA_BYTE, pos++) & 0xFF; }

        int u16(String what) { need(2, what); int v = seg.get(LeFiles.SHORT, pos) & 0xFFFF; pos += 2; return v; }

        int i32(String what) { need(4, what); int v = seg.get(LeFiles.INT, pos); pos += 4; return v; }

        long i64(String what) { need(8, what); long v = seg.get(LeFiles.LONG, pos); pos += 8; return v; }

        String string(String what) {
            long len = i64(what + " length");
            need(len, what);
            if (len == 0) return "";
            byte[] b = new byte[(int) len];
            MemorySegment.copy(seg, ValueLayout.JAVA_BYTE, pos, b, 0, (int) len);
            pos += len;
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(java.nio.ByteBuffer.wrap(b)).toString();
            } catch (CharacterCodingException e) {
                throw new ModelFormatException(TAG + file + ": " + what + " at byte " + (pos - len) + " is not UTF-8; the file is corrupt");
            }
        }

        /** A count that must fit in the bytes that remain at {@code minBytes} per item. */
        int count(String what, long minBytes) {
            long n = i64(what);
            if (n < 0 || n > (size - pos) / minBytes)
                throw new ModelFormatException(TAG + file + ": " + what + " " + Long.toUnsignedString(n) + " cannot fit in the " + (size - pos)
                        + " bytes that remain; the file is corrupt or truncated");
            return (int) n;
        }
    }

    // the minimum bytes a value of a gguf_type takes (ggml-org/ggml docs/gguf.md: GGUF_TYPE_UINT8 = 0 … GGUF_TYPE_FLOAT64 = 12)
    private static long minBytes(int type) {
        return switch (type) {
            case 0, 1, 7 -> 1;
            case 2, 3 -> 2;
            case 4, 5, 6 -> 4;
            case 8, 10, 11, 12 -> 8;
            case 9 -> 12;
            default -> -1;
        };
    }

    private static Object value(Cursor c, int type, String key, int depth) {
        return switch (type) {
            case 0 -> (long) c.u8(key);
            case 1 -> (long) (byte) c.u8(key);
            case 2 -> (long) c.u16(key);
            case 3 -> (long) (short) c.u16(key);
            case 4 -> c.i32(key) & 0xFFFFFFFFL;
            case 5 -> (long) c.i32(key);
            case 6 -> (double) Float.intBitsToFloat(c.i32(key));
            case 7 -> {
                int b = c.u8(key);
                if (b > 1) throw new ModelFormatException(TAG + c.file + ": bool value " + b + " of '" + key + "' is neither 0 nor 1; the file is corrupt");
                yield b == 1;
            }
            case 8 -> c.string(key);
            case 9 -> array(c, key, depth);
            case 10, 11 -> c.i64(key);
            case 12 -> Double.longBitsToDouble(c.i64(key));
            default -> throw new ModelFormatException(TAG + c.file + ": metadata '" + key + "' has value type " + type + " (GGUF has 0-12); the file is corrupt");
        };
    }

    // arrays: strings as List<String>, f32 as float[], other numbers as long[] (f64 as double[]), bools as boolean[], arrays as List<Object>
    private static Object array(Cursor c, String key, int depth) {
        if (depth >= MAX_DEPTH) throw new ModelFormatException(TAG + c.file + ": metadata '" + key + "' nests arrays deeper than " + MAX_DEPTH + "; the file is corrupt");
        int type = c.i32(key + " array type");
        long min = minBytes(type);
        if (min < 0) throw new ModelFormatException(TAG + c.file + ": metadata '" + key + "' is an array of value type " + type + " (GGUF has 0-12); the file is corrupt");
        int n = c.count("metadata '" + key + "' array length", min);
        switch (type) {
            case 6 -> {
                float[] a = new float[n];
                MemorySegment.copy(c.seg, LeFiles.FLOAT, c.pos, a, 0, n);
                c.pos += 4L * n;
                return a;
            }
            case 7 -> {
                boolean[] a = new boolean[n];
                for (int i = 0; i < n; i++) a[i] = (Boolean) value(c, 7, key, depth);
                return a;
            }
            case 12 -> {
                double[] a = new double[n];
                for (int i = 0; i < n; i++) a[i] = (Double) value(c, 12, key, depth);
                return a;
            }
            case 8, 9 -> {
                List<Object> a = new ArrayList<>(n);
                for (int i = 0; i < n; i++) a.add(value(c, type, key, depth + 1));
                return Collections.unmodifiableList(a);
            }
            default -> {
                long[] a = new long[n];
                for (int i = 0; i < n; i++) a[i] = (Long) value(c, type, key, depth);
                return a;
            }
        }
    }

    static Header header(MemorySegment seg, String file) {
        Cursor c = new Cursor(seg, file);
        if (seg.byteSize() < 4 || seg.get(LeFiles.INT, 0) != MAGIC)
            throw new ModelFormatException(TAG + file + ": no GGUF magic at byte 0; not a GGUF file (give a .gguf from llama.cpp, LM Studio or Ollama)");
        c.pos = 4;
        int version = c.i32("version");
        if (Integer.reverseBytes(version) == 2 || Integer.reverseBytes(version) == 3)
            throw new ModelFormatException(TAG + file + ": a big-endian GGUF (version " + Integer.reverseBytes(version) + "); ane4j reads little-endian files, convert it with llama.cpp on a little-endian machine");
        if (version == 1)
            throw new ModelFormatException(TAG + file + ": GGUF version 1 (32-bit lengths) is not read; convert the model again with a current llama.cpp (versions 2 and 3 are read)");
        if (version != 2 && version != 3)
            throw new ModelFormatException(TAG + file + ": GGUF version " + Integer.toUnsignedString(version) + " is not read (versions 2 and 3 are)");
        // a tensor info takes at least 8 (name) + 4 + 8 + 4 + 8 bytes; a key-value at least 8 + 4 + 1
        long tensorCount = c.i64("tensor_count"), kvCount = c.i64("kv_count");
        long left = seg.byteSize() - c.pos;
        if (kvCount < 0 || kvCount > left / 13)
            throw new ModelFormatException(TAG + file + ": kv_count " + Long.toUnsignedString(kvCount) + " cannot fit in a file of " + seg.byteSize() + " bytes; the file is corrupt");
        if (tensorCount < 0 || tensorCount > left / 32)
            throw new ModelFormatException(TAG + file + ": tensor_count " + Long.toUnsignedString(tensorCount) + " cannot fit in a file of " + seg.byteSize() + " bytes; the file is corrupt");
        Map<String, Object> md = new LinkedHashMap<>();
        for (long i = 0; i < kvCount; i++) {
            String key = c.string("metadata key " + i);
            int type = c.i32("metadata '" + key + "' value type");
            Object v = value(c, type, key, 0);
            if (md.putIfAbsent(key, v) != null) throw new ModelFormatException(TAG + file + ": metadata key '" + key + "' appears twice; the file is corrupt");
        }
        int alignment = DEFAULT_ALIGNMENT;
        if (md.containsKey("general.alignment")) {
            if (!(md.get("general.alignment") instanceof Long a) || a <= 0 || a > 1 << 16 || Long.bitCount(a) != 1)
                throw new ModelFormatException(TAG + file + ": general.alignment " + md.get("general.alignment") + " is not a power of two up to 65536; the file is corrupt");
            alignment = (int) (long) (Long) md.get("general.alignment");
        }
        List<TensorInfo> infos = new ArrayList<>();
        Map<String, TensorInfo> tensors = new LinkedHashMap<>();
        for (long i = 0; i < tensorCount; i++) {
            String name = c.string("tensor " + i + " name");
            int nDims = c.i32("tensor '" + name + "' n_dims");
            if (nDims < 1 || nDims > MAX_DIMS)
                throw new ModelFormatException(TAG + file + ": tensor '" + name + "' has " + Integer.toUnsignedString(nDims) + " dimensions (1 to " + MAX_DIMS + " allowed); the file is corrupt");
            long[] dims = new long[nDims];
            long elements = 1;
            for (int d = 0; d < nDims; d++) {
                dims[d] = c.i64("tensor '" + name + "' ne[" + d + "]");
                if (dims[d] <= 0 || dims[d] > 1L << 40 || elements > (1L << 42) / dims[d])
                    throw new ModelFormatException(TAG + file + ": tensor '" + name + "' has dimensions " + unsigned(dims, d + 1) + ", not a plausible shape; the file is corrupt");
                elements *= dims[d];
            }
            int typeId = c.i32("tensor '" + name + "' type");
            Type type = Type.of(typeId);
            if (type == null)
                throw new ModelFormatException(TAG + file + ": tensor '" + name + "' is " + ggmlTypeName(typeId) + ", which ane4j does not dequantize (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K); "
                        + "re-quantize the model to one of these with llama.cpp's llama-quantize");
            if (dims[0] % type.blockSize != 0)
                throw new ModelFormatException(TAG + file + ": tensor '" + name + "' of type " + type + " has rows of " + dims[0] + " elements, not a multiple of its block of " + type.blockSize + "; the file is corrupt");
            long offset = c.i64("tensor '" + name + "' offset");
            if (offset < 0 || offset % alignment != 0)
                throw new ModelFormatException(TAG + file + ": tensor '" + name + "' offset " + Long.toUnsignedString(offset) + " is not a multiple of the alignment " + alignment + "; the file is corrupt");
            TensorInfo t = new TensorInfo(name, dims, type, offset, elements, elements / type.blockSize * type.blockBytes);
            if (tensors.putIfAbsent(name, t) != null) throw new ModelFormatException(TAG + file + ": tensor '" + name + "' appears twice; the file is corrupt");
            infos.add(t);
        }
        long dataStart = (c.pos + alignment - 1) / alignment * alignment;
        long dataSize = seg.byteSize() - dataStart;
        // every tensor inside the data section, none overlapping another (sorted by offset)
        List<TensorInfo> byOffset = new ArrayList<>(infos);
        byOffset.sort((a, b) -> Long.compare(a.offset, b.offset));
        long end = 0;
        for (TensorInfo t : byOffset) {
            if (t.offset < end)
                throw new ModelFormatException(TAG + file + ": tensor '" + t.name + "' at offset " + t.offset + " overlaps the tensor before it (ending at " + end + "); the file is corrupt");
            if (dataSize < 0 || t.offset > dataSize || t.bytes > dataSize - t.offset)
                throw new ModelFormatException(TAG + file + ": tensor '" + t.name + "' (" + t.bytes + " bytes at offset " + t.offset + ") runs past the end of the file ("
                        + Math.max(0, dataSize) + " bytes of data); truncated download?");
            end = t.offset + t.bytes;
        }
        return new Header(version, Collections.unmodifiableMap(md), Collections.unmodifiableMap(tensors), dataStart, alignment);
    }

    private static String unsigned(long[] a, int n) {
        StringBuilder s = new StringBuilder("[");
        for (int i = 0; i < n; i++) s.append(i > 0 ? ", " : "").append(Long.toUnsignedString(a[i]));
        return s.append(']').toString();
    }

    /** Reads a file's header and tensor table. */
    public static Header readHeader(Path file) {
        try (LeFiles.Mapped m = LeFiles.map(file, "gguf")) {
            return header(m.segment(), file.getFileName().toString());
        }
    }

    /** True for a file whose first four bytes are GGUF's magic. */
    public static boolean isGguf(Path file) {
        if (!java.nio.file.Files.isRegularFile(file)) return false;
        try (var in = java.nio.file.Files.newInputStream(file)) {
            byte[] b = in.readNBytes(4);
            return b.length == 4 && b[0] == 'G' && b[1] == 'G' && b[2] == 'U' && b[3] == 'F';
        } catch (java.io.IOException e) {
            return false;
        }
    }

    // ----------------------------------------------------------------------------------------------
    // tensors

    /** All tensors of a file dequantized to fp32, by name (for tests and inspection). */
    public static Map<String, float[]> readTensors(Path file) {
        try (LeFiles.Mapped m = LeFiles.map(file, "gguf")) {
            Header h = header(m.segment(), file.getFileName().toString());
            Map<String, float[]> out = new LinkedHashMap<>();
            for (TensorInfo t : h.tensors().values()) {
                if (t.elements > Integer.MAX_VALUE - 8) throw new ModelFormatException(TAG + file.getFileName() + ": tensor '" + t.name + "' has " + t.elements + " elements, over one Java array");
                float[] a = new float[(int) t.elements];
                GgufQuants.dequantize(m.segment(), h.dataStart() + t.offset, t.type, a, 0, (int) t.elements);
                out.put(t.name, a);
            }
            return out;
        }
    }

    /** Our layout name → GGUF tensor name (llama.cpp's gguf-py constants, MODEL_TENSOR names). */
    static String ggufName(String name) {
        if (name.equals("tokenEmbedding")) return "token_embd.weight";
        if (name.equals("rmsFinal")) return "output_norm.weight";
        if (name.equals("wcls")) return "output.weight";
        int dot = name.indexOf('.', "layers.".length());
        String layer = name.substring("layers.".length(), dot), w = name.substring(dot + 1);
        return "blk." + layer + "." + switch (w) {
            case "rmsAtt" -> "attn_norm";
            case "rmsFfn" -> "ffn_norm";
            case "wq" -> "attn_q";
            case "wk" -> "attn_k";
            case "wv" -> "attn_v";
            case "wo" -> "attn_output";
            case "qNorm" -> "attn_q_norm";
            case "kNorm" -> "attn_k_norm";
            case "w1" -> "ffn_gate";
            case "w2" -> "ffn_down";
            case "w3" -> "ffn_up";
            default -> throw new IllegalArgumentException("no GGUF name for " + name);
        } + ".weight";
    }

    // ----------------------------------------------------------------------------------------------
    // model

    /** Reads a Llama- or Qwen3-architecture model: config from the metadata, tensors dequantized to fp32, q/k rows as Hugging Face's. */
    public static Parameters read(Path file) {
        String name = file.getFileName().toString();
        try (LeFiles.Mapped m = LeFiles.map(file, "gguf")) {
            Header h = header(m.segment(), name);
            ModelConfig c = config(h, name, m.segment());
            return load(m.segment(), h, c, name, "llama".equals(h.metadata().get("general.architecture")));
        }
    }

    /**
     * The model config a file's metadata and tensor shapes describe (rotate-half RoPE, as after {@link #read}). RoPE
     * scaling as llama.cpp reads it (llama-model.cpp, llama_hparams): {@code <arch>.rope.scaling.type} {@code none} or
     * {@code linear} with {@code rope.scaling.factor} (older files: {@code rope.scale_linear}); Llama 3.1/3.2's rule comes
     * as the {@code rope_freqs.weight} tensor of per-pair factors ({@link RopeScaling}); yarn and the others are refused.
     */
    static ModelConfig config(Header h, String file, MemorySegment seg) {
        Map<String, Object> md = h.metadata();
        Object arch = md.get("general.architecture");
        if (!(arch instanceof String a))
            throw new ModelFormatException(TAG + file + ": no general.architecture in the metadata; not a model file");
        if (!a.equals("llama") && !a.equals("qwen3"))
            throw new ModelFormatException(TAG + file + ": architecture '" + a + "' is not read; ane4j reads Llama-family (llama) and Qwen3 (qwen3) GGUF files");
        String at = TAG + file + ": ";
        Object scalingType = md.get(a + ".rope.scaling.type");
        if (scalingType != null && !"none".equals(scalingType) && !"linear".equals(scalingType))
            throw new ModelFormatException(at + "RoPE scaling type '" + scalingType + "' is not supported (ane4j applies none, linear and Llama 3's rope_freqs)"
                    + "; its logits would differ from the original's");
        TensorInfo embed = h.tensors().get("token_embd.weight");
        if (embed == null || embed.dims.length != 2) throw new ModelFormatException(at + "no 2-D tensor 'token_embd.weight'; not a " + a + " model");
        int dim = intKey(md, a + ".embedding_length", at, true);
        int layers = intKey(md, a + ".block_count", at, true);
        int hidden = intKey(md, a + ".feed_forward_length", at, true);
        int heads = intKey(md, a + ".attention.head_count", at, true);
        Integer kv = intKey(md, a + ".attention.head_count_kv", at, false);
        Integer headDim = intKey(md, a + ".attention.key_length", at, false);
        Integer valueLen = intKey(md, a + ".attention.value_length", at, false);
        if (headDim == null) {
            if (dim % heads != 0) throw new ModelFormatException(at + a + ".attention.head_count " + heads + " does not divide embedding_length " + dim + " and key_length is absent; the file is corrupt");
            headDim = dim / heads;
        }
        if (valueLen != null && !valueLen.equals(headDim))
            throw new ModelFormatException(at + "value_length " + valueLen + " differs from key_length " + headDim + "; not a Llama/Qwen3 attention");
        Integer ropeDims = intKey(md, a + ".rope.dimension_count", at, false);
        if (ropeDims != null && !ropeDims.equals(headDim))
            throw new ModelFormatException(at + "rope.dimension_count " + ropeDims + " differs from the head dimension " + headDim + " (partial RoPE is not supported)");
        if (embed.dims[0] != dim) throw new ModelFormatException(at + "token_embd.weight has rows of " + embed.dims[0] + " but embedding_length is " + dim + "; the file is corrupt");
        if (embed.dims[1] > Integer.MAX_VALUE) throw new ModelFormatException(at + "a vocabulary of " + embed.dims[1] + " tokens; the file is corrupt");
        int vocab = (int) embed.dims[1];
        Integer ctx = intKey(md, a + ".context_length", at, false);
        Integer seq = intKey(md, "ane4j.seq_len", at, false);
        double theta = numKey(md, a + ".rope.freq_base", at, a.equals("qwen3") ? 1e6 : 10000);
        double eps = numKey(md, a + ".attention.layer_norm_rms_epsilon", at, a.equals("qwen3") ? 1e-6 : 1e-5);
        boolean qkNorm = h.tensors().containsKey("blk.0.attn_q_norm.weight");
        boolean tied = !h.tensors().containsKey("output.weight");
        RopeScaling scaling = RopeScaling.NONE;
        Object linear = "linear".equals(scalingType) ? md.get(a + ".rope.scaling.factor") : md.get(a + ".rope.scale_linear");
        if (linear != null) {
            double f = numKey(md, "linear".equals(scalingType) ? a + ".rope.scaling.factor" : a + ".rope.scale_linear", at, 1);
            try {
                if (f != 1) scaling = new RopeScaling.Linear(f);
            } catch (IllegalArgumentException e) {
                throw new ModelFormatException(at + e.getMessage().replace("[config] ", ""));
            }
        } else if ("linear".equals(scalingType))
            throw new ModelFormatException(at + "rope.scaling.type is linear but " + a + ".rope.scaling.factor is missing; the file is incomplete");
        TensorInfo freqs = h.tensors().get("rope_freqs.weight");
        if (freqs != null) {
            if (scaling != RopeScaling.NONE) throw new ModelFormatException(at + "both linear RoPE scaling and a rope_freqs tensor; the file is inconsistent");
            if (freqs.dims.length != 1 || freqs.dims[0] != headDim / 2)
                throw new ModelFormatException(at + "rope_freqs.weight has ne " + Arrays.toString(freqs.dims) + ", one factor per rotation pair ["
                        + headDim / 2 + "] expected; the file is corrupt");
            float[] ff = new float[headDim / 2];
            GgufQuants.dequantize(seg, h.dataStart() + freqs.offset, freqs.type, ff, 0, ff.length);
            try {
                scaling = RopeScaling.fromFreqFactors(ff, theta, headDim);
            } catch (IllegalArgumentException e) {
                throw new ModelFormatException(at + "rope_freqs.weight: " + e.getMessage().replace("[config] ", "") + "; the file is corrupt");
            }
        }
        String modelName = md.get("general.name") instanceof String s && !s.isBlank() ? s.trim().replaceAll("\\s+", "-")
                : file.replaceFirst("(?i)\\.gguf$", "");
        try {
            return new ModelConfig(modelName, dim, hidden, layers, heads, kv != null ? kv : heads, headDim, vocab,
                    seq != null ? seq : Math.min(ctx != null ? ctx : Safetensors.DEFAULT_SEQ_LEN, Safetensors.DEFAULT_SEQ_LEN),
                    (float) theta, RopeStyle.HALF, qkNorm, tied, (float) eps, 1f, scaling);
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(at + "the metadata give an invalid config: " + e.getMessage(), e);
        }
    }

    private static Integer intKey(Map<String, Object> md, String key, String at, boolean required) {
        Object v = md.get(key);
        if (v == null) {
            if (required) throw new ModelFormatException(at + "metadata key '" + key + "' is missing; the file is incomplete");
            return null;
        }
        if (!(v instanceof Long l) || l <= 0 || l > Integer.MAX_VALUE)
            throw new ModelFormatException(at + "metadata '" + key + "' = " + v + " is not a positive integer; the file is corrupt");
        return (int) (long) l;
    }

    private static double numKey(Map<String, Object> md, String key, String at, double dflt) {
        Object v = md.get(key);
        if (v == null) return dflt;
        if (v instanceof Double d && d > 0 && !d.isInfinite()) return d;
        if (v instanceof Long l && l > 0) return l;
        throw new ModelFormatException(at + "metadata '" + key + "' = " + v + " is not a positive number; the file is corrupt");
    }

    // checks every tensor against the config (before anything is allocated), then dequantizes them into a new Parameters
    private static Parameters load(MemorySegment seg, Header h, ModelConfig c, String file, boolean permuted) {
        String at = TAG + file + ": ";
        ParameterLayout layout;
        try {
            layout = new ParameterLayout(c);
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(at + e.getMessage(), e);
        }
        java.util.Set<String> used = new java.util.HashSet<>();
        for (ParameterView v : layout.views()) {
            String g = ggufName(v.name());
            TensorInfo t = h.tensors().get(g);
            if (t == null) throw new ModelFormatException(at + "missing tensor '" + g + "' (" + v.name() + " of " + c.name() + ")");
            long[] want = v.isMatrix() ? new long[]{v.cols(), v.rows()} : new long[]{v.rows()};
            if (!Arrays.equals(want, t.dims))
                throw new ModelFormatException(at + "tensor '" + g + "' has ne " + Arrays.toString(t.dims) + ", the metadata need " + Arrays.toString(want) + " (" + v.name() + "); the file is corrupt");
            used.add(g);
        }
        used.add("rope_freqs.weight");   // read into the config's RoPE scaling
        for (String t : h.tensors().keySet())
            if (!used.contains(t))
                throw new ModelFormatException(at + "tensor '" + t + "' is not part of a Llama/Qwen3 model with this config" + (t.endsWith(".bias") ? " (bias tensors are not supported)" : ""));
        long bytes = 4L * layout.size(), free = Runtime.getRuntime().maxMemory() - (Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory());
        if (bytes > free)
            throw new ModelFormatException(at + layout.size() + " parameters need " + (bytes >> 20) + " MB as fp32 but the JVM has " + (free >> 20)
                    + " MB free; raise the heap (--heap, or -Xmx in ANE4J_JAVA_OPTS)");
        Parameters p = Parameters.zeros(layout);
        float[] scratch = null;
        for (ParameterView v : layout.views()) {
            TensorInfo t = h.tensors().get(ggufName(v.name()));
            boolean qk = permuted && (v.name().endsWith(".wq") || v.name().endsWith(".wk"));
            if (!qk) {
                GgufQuants.dequantize(seg, h.dataStart() + t.offset, t.type, p.data(), v.offset(), v.size());
                continue;
            }
            if (scratch == null || scratch.length < v.size()) scratch = new float[v.size()];
            GgufQuants.dequantize(seg, h.dataStart() + t.offset, t.type, scratch, 0, v.size());
            unpermute(scratch, p.data(), v.offset(), v.name().endsWith(".wq") ? c.nHeads() : c.nKvHeads(), c.headDim(), c.dim());
        }
        return p;
    }

    /**
     * Undoes convert_hf_to_gguf.py's {@code permute}: per head, the GGUF row {@code 2i + p} (interleaved pairs) is
     * Hugging Face's row {@code p·headDim/2 + i} (rotate-half), the pairing {@link RopePermutation} converts between.
     */
    static void unpermute(float[] src, float[] dst, int dstOffset, int nHeads, int headDim, int cols) {
        int half = headDim / 2;
        for (int h = 0; h < nHeads; h++)
            for (int i = 0; i < half; i++)
                for (int p = 0; p < 2; p++)
                    System.arraycopy(src, (h * headDim + 2 * i + p) * cols, dst, dstOffset + (h * headDim + p * half + i) * cols, cols);
    }

    // ----------------------------------------------------------------------------------------------
    // tokenizer

    /** The tokenizer a GGUF file carries ({@code tokenizer.ggml.*}). */
    public static Tokenizer tokenizer(Path file) {
        String name = file.getFileName().toString();
        try (LeFiles.Mapped m = LeFiles.map(file, "gguf")) {
            return GgufTokenizer.build(header(m.segment(), name).metadata(), name);
        }
    }

    /** The chat template a GGUF file carries ({@code tokenizer.chat_template}), or null. */
    public static String chatTemplate(Path file) {
        return readHeader(file).metadata().get("tokenizer.chat_template") instanceof String s ? s : null;
    }

    static String lower(String s) { return s.toLowerCase(Locale.ROOT); }
}
