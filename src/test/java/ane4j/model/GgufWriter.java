package ane4j.model;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Tests only: writes GGUF v3 files (or v2) the way llama.cpp's gguf-py lays them out, so {@link Gguf} can be checked on
 * models ane4j trained: metadata of every value type, tensors in F32/F16/BF16 or quantized with simple (not llama.cpp's
 * optimising) quantizers into the Q8_0, Q4_0, Q4_K, Q5_K and Q6_K block layouts, and for {@code llama} models the q/k
 * rows permuted as convert_hf_to_gguf.py permutes them.
 */
public final class GgufWriter {
    record Tensor(String name, long[] ne, Gguf.Type type, byte[] data) {}

    final Map<String, Object> metadata = new LinkedHashMap<>();
    final List<Tensor> tensors = new ArrayList<>();
    int version = 3, alignment = Gguf.DEFAULT_ALIGNMENT;

    /** Adds a tensor of {@code values} with shape ne (ne[0] fastest), stored as {@code type}. */
    GgufWriter tensor(String name, long[] ne, Gguf.Type type, float[] values) {
        tensors.add(new Tensor(name, ne, type, encode(type, values)));
        return this;
    }

    // ----------------------------------------------------------------------------------------------
    // whole models

    /** A model in llama.cpp's layout: config keys, tensor names, the tokenizer's keys (when given), every matrix as {@code type}. */
    public static GgufWriter model(Parameters params, String arch, Gguf.Type type, Tokenizer tok) {
        Parameters p = RopePermutation.convert(params, RopeStyle.HALF);
        ModelConfig c = p.config();
        GgufWriter w = new GgufWriter();
        Map<String, Object> md = w.metadata;
        md.put("general.architecture", arch);
        md.put("general.name", c.name());
        md.put(arch + ".context_length", (long) c.seqLen());
        md.put(arch + ".embedding_length", (long) c.dim());
        md.put(arch + ".block_count", (long) c.nLayers());
        md.put(arch + ".feed_forward_length", (long) c.hiddenDim());
        md.put(arch + ".attention.head_count", (long) c.nHeads());
        md.put(arch + ".attention.head_count_kv", (long) c.nKvHeads());
        md.put(arch + ".attention.key_length", (long) c.headDim());
        md.put(arch + ".attention.value_length", (long) c.headDim());
        md.put(arch + ".rope.freq_base", (float) c.ropeTheta());
        md.put(arch + ".attention.layer_norm_rms_epsilon", c.normEps());
        md.put("ane4j.seq_len", (long) c.seqLen());
        if (tok != null) tokenizer(md, tok);
        // RoPE scaling as convert_hf_to_gguf.py writes it: linear as metadata, Llama 3's rule as the rope_freqs tensor
        switch (c.ropeScaling()) {
            case RopeScaling.None n -> { }
            case RopeScaling.Linear l -> {
                md.put(arch + ".rope.scaling.type", "linear");
                md.put(arch + ".rope.scaling.factor", (float) l.factor());
            }
            case RopeScaling.Llama3 l -> w.tensor("rope_freqs.weight", new long[]{c.headDim() / 2}, Gguf.Type.F32,
                    l.freqFactors(RopeScaling.baseFrequencies(c.ropeTheta(), c.headDim())));
            case RopeScaling.Factors f -> {
                float[] ff = new float[f.factors().size()];
                for (int i = 0; i < ff.length; i++) ff[i] = f.factors().get(i);
                w.tensor("rope_freqs.weight", new long[]{ff.length}, Gguf.Type.F32, ff);
            }
        }
        for (ParameterView v : p.layout().views()) {
            float[] x = p.get(v);
            boolean qk = arch.equals("llama") && (v.name().endsWith(".wq") || v.name().endsWith(".wk"));
            if (qk) x = permute(x, v.name().endsWith(".wq") ? c.nHeads() : c.nKvHeads(), c.headDim(), c.dim());
            long[] ne = v.isMatrix() ? new long[]{v.cols(), v.rows()} : new long[]{v.rows()};
            // llama.cpp keeps 1-D norm weights in F32; matrices in the requested type, or F16 when their rows are not whole blocks
            Gguf.Type t = !v.isMatrix() ? Gguf.Type.F32 : v.cols() % type.blockSize == 0 ? type : Gguf.Type.F16;
            w.tensor(Gguf.ggufName(v.name()), ne, t, x);
        }
        return w;
    }

    /** convert_hf_to_gguf.py LlamaModel.permute: rotate-half row p·headDim/2 + i of each head becomes row 2i + p. */
    static float[] permute(float[] x, int nHeads, int headDim, int cols) {
        float[] y = new float[x.length];
        int half = headDim / 2;
        for (int h = 0; h < nHeads; h++)
            for (int i = 0; i < half; i++)
                for (int p = 0; p < 2; p++)
                    System.arraycopy(x, (h * headDim + p * half + i) * cols, y, (h * headDim + 2 * i + p) * cols, cols);
        return y;
    }

    /** The tokenizer.ggml.* keys of an ane4j tokenizer: gpt2 (from its tokenizer.json) or llama (pieces with U+2581, scores, types). */
    @SuppressWarnings("unchecked")
    static void tokenizer(Map<String, Object> md, Tokenizer tok) {
        if (!tok.isTokenizerJson()) {
            List<String> tokens = new ArrayList<>();
            float[] scores = new float[tok.vocabSize()];
            long[] types = new long[tok.vocabSize()];
            for (int i = 0; i < tok.vocabSize(); i++) {
                String piece = new String(tok.pieceBytes(i), StandardCharsets.UTF_8);
                tokens.add(piece.replace(' ', '\u2581'));
                scores[i] = tok.score(i);
                types[i] = i == 0 ? 2 : i <= 2 ? 3 : piece.matches("<0x[0-9A-F]{2}>") ? 6 : 1;
            }
            md.put("tokenizer.ggml.model", "llama");
            md.put("tokenizer.ggml.tokens", tokens);
            md.put("tokenizer.ggml.scores", scores);
            md.put("tokenizer.ggml.token_type", types);
            md.put("tokenizer.ggml.bos_token_id", 1L);
            md.put("tokenizer.ggml.eos_token_id", 2L);
            md.put("tokenizer.ggml.unknown_token_id", 0L);
            md.put("tokenizer.ggml.add_bos_token", true);
            return;
        }
        Path tmp;
        try {
            tmp = Files.createTempFile("tok", ".json");
            tok.write(tmp);
            Map<String, Object> json = (Map<String, Object>) Json.parse(Files.readString(tmp));
            Files.delete(tmp);
            Map<String, Object> model = (Map<String, Object>) json.get("model");
            Map<String, Object> vocab = (Map<String, Object>) model.get("vocab");
            int n = tok.vocabSize();
            String[] tokens = new String[n];
            long[] types = new long[n];
            vocab.forEach((t, id) -> { tokens[(int) (long) (Long) id] = t; types[(int) (long) (Long) id] = 1; });
            for (Object o : (List<Object>) json.get("added_tokens")) {
                Map<String, Object> a = (Map<String, Object>) o;
                int id = (int) (long) (Long) a.get("id");
                tokens[id] = (String) a.get("content");
                types[id] = Boolean.TRUE.equals(a.get("special")) ? 3 : 4;
            }
            for (int i = 0; i < n; i++) if (tokens[i] == null) { tokens[i] = "[PAD" + i + "]"; types[i] = 5; }
            List<String> merges = new ArrayList<>();
            for (Object m : (List<Object>) model.get("merges"))
                merges.add(m instanceof String s ? s : ((List<Object>) m).get(0) + " " + ((List<Object>) m).get(1));
            md.put("tokenizer.ggml.model", "gpt2");
            md.put("tokenizer.ggml.pre", "qwen2");
            md.put("tokenizer.ggml.tokens", List.of(tokens));
            md.put("tokenizer.ggml.token_type", types);
            md.put("tokenizer.ggml.merges", merges);
            if (tok.eosId() >= 0) md.put("tokenizer.ggml.eos_token_id", (long) tok.eosId());
            md.put("tokenizer.ggml.add_bos_token", false);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    // ----------------------------------------------------------------------------------------------
    // encoding

    static byte[] encode(Gguf.Type type, float[] x) {
        ByteBuffer b = ByteBuffer.allocate((int) ((long) x.length / type.blockSize * type.blockBytes)).order(ByteOrder.LITTLE_ENDIAN);
        switch (type) {
            case F32 -> { for (float v : x) b.putFloat(v); }
            case F16 -> { for (float v : x) b.putShort(Float.floatToFloat16(v)); }
            case BF16 -> { for (float v : x) b.putShort(Safetensors.toBf16(v)); }
            case Q8_0 -> {
                for (int blk = 0; blk < x.length / 32; blk++) {
                    float amax = 0;
                    for (int j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[32 * blk + j]));
                    short dh = Float.floatToFloat16(amax / 127);
                    float d = Float.float16ToFloat(dh), id = d == 0 ? 0 : 1 / d;
                    b.putShort(dh);
                    for (int j = 0; j < 32; j++) b.put((byte) Math.max(-127, Math.min(127, Math.round(x[32 * blk + j] * id))));
                }
            }
            case Q4_0 -> {
                for (int blk = 0; blk < x.length / 32; blk++) {
                    float max = 0; // the value of largest magnitude, with its sign (ggml quantize_row_q4_0_ref)
                    for (int j = 0; j < 32; j++) if (Math.abs(x[32 * blk + j]) > Math.abs(max)) max = x[32 * blk + j];
                    short dh = Float.floatToFloat16(max / -8);
                    float d = Float.float16ToFloat(dh), id = d == 0 ? 0 : 1 / d;
                    b.putShort(dh);
                    for (int j = 0; j < 16; j++) {
                        int lo = Math.max(0, Math.min(15, (int) Math.floor(x[32 * blk + j] * id + 8.5f)));
                        int hi = Math.max(0, Math.min(15, (int) Math.floor(x[32 * blk + j + 16] * id + 8.5f)));
                        b.put((byte) (lo | hi << 4));
                    }
                }
            }
            case Q4_K, Q5_K -> {
                boolean five = type == Gguf.Type.Q5_K;
                int levels = five ? 31 : 15;
                for (int blk = 0; blk < x.length / 256; blk++) {
                    int o = 256 * blk;
                    float[] scale = new float[8], min = new float[8];
                    float maxScale = 0, maxMin = 0;
                    for (int s = 0; s < 8; s++) {
                        float lo = Float.MAX_VALUE, hi = -Float.MAX_VALUE;
                        for (int l = 0; l < 32; l++) { lo = Math.min(lo, x[o + 32 * s + l]); hi = Math.max(hi, x[o + 32 * s + l]); }
                        min[s] = Math.max(0, -lo);
                        scale[s] = (hi + min[s]) / levels;
                        maxScale = Math.max(maxScale, scale[s]);
                        maxMin = Math.max(maxMin, min[s]);
                    }
                    short dh = Float.floatToFloat16(maxScale / 63), mh = Float.floatToFloat16(maxMin / 63);
                    float d = Float.float16ToFloat(dh), dmin = Float.float16ToFloat(mh);
                    int[] sc = new int[8], mn = new int[8];
                    for (int s = 0; s < 8; s++) {
                        sc[s] = d == 0 ? 0 : Math.min(63, Math.round(scale[s] / d));
                        mn[s] = dmin == 0 ? 0 : Math.min(63, Math.round(min[s] / dmin));
                    }
                    int[] q = new int[256];
                    for (int s = 0; s < 8; s++) {
                        float ds = d * sc[s], ms = dmin * mn[s];
                        for (int l = 0; l < 32; l++) q[32 * s + l] = ds == 0 ? 0 : Math.max(0, Math.min(levels, Math.round((x[o + 32 * s + l] + ms) / ds)));
                    }
                    b.putShort(dh).putShort(mh);
                    byte[] packed = new byte[12];
                    for (int j = 0; j < 4; j++) {
                        packed[j] = (byte) ((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
                        packed[j + 4] = (byte) ((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
                        packed[j + 8] = (byte) ((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
                    }
                    b.put(packed);
                    if (five) {
                        byte[] qh = new byte[32];
                        for (int g = 0; g < 4; g++)
                            for (int l = 0; l < 32; l++) {
                                if (q[64 * g + l] > 15) qh[l] |= (byte) (1 << (2 * g));
                                if (q[64 * g + 32 + l] > 15) qh[l] |= (byte) (1 << (2 * g + 1));
                            }
                        b.put(qh);
                    }
                    for (int g = 0; g < 4; g++)
                        for (int l = 0; l < 32; l++) b.put((byte) ((q[64 * g + l] & 0xF) | ((q[64 * g + 32 + l] & 0xF) << 4)));
                }
            }
            case Q6_K -> {
                for (int blk = 0; blk < x.length / 256; blk++) {
                    int o = 256 * blk;
                    float[] scale = new float[16];
                    float maxAbs = 0;
                    for (int s = 0; s < 16; s++) {
                        float amax = 0;
                        for (int l = 0; l < 16; l++) amax = Math.max(amax, Math.abs(x[o + 16 * s + l]));
                        scale[s] = amax / 31;
                        maxAbs = Math.max(maxAbs, scale[s]);
                    }
                    short dh = Float.floatToFloat16(maxAbs / 127);
                    float d = Float.float16ToFloat(dh);
                    byte[] sc = new byte[16];
                    int[] q = new int[256];
                    for (int s = 0; s < 16; s++) {
                        sc[s] = (byte) (d == 0 ? 0 : Math.min(127, Math.round(scale[s] / d)));
                        float ds = d * sc[s];
                        for (int l = 0; l < 16; l++) q[16 * s + l] = (ds == 0 ? 0 : Math.max(-32, Math.min(31, Math.round(x[o + 16 * s + l] / ds)))) + 32;
                    }
                    byte[] ql = new byte[128], qh = new byte[64];
                    for (int half = 0; half < 2; half++)
                        for (int l = 0; l < 32; l++)
                            for (int k = 0; k < 4; k++) {
                                int v = q[128 * half + 32 * k + l];
                                int lo = 64 * half + l + (k & 1) * 32;
                                ql[lo] |= (byte) ((v & 0xF) << (k >= 2 ? 4 : 0));
                                qh[32 * half + l] |= (byte) ((v >> 4) << (2 * k));
                            }
                    b.put(ql).put(qh).put(sc).putShort(dh);
                }
            }
        }
        return b.array();
    }

    // ----------------------------------------------------------------------------------------------
    // file

    private static void str(ByteArrayOutputStream o, String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        o.writeBytes(le(8).putLong(b.length).array());
        o.writeBytes(b);
    }

    private static ByteBuffer le(int n) { return ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN); }

    // a metadata value: Long → u32 when it fits (as llama.cpp writes ids and sizes) else i64, Float → f32, Double → f64
    private static void value(ByteArrayOutputStream o, Object v, boolean typed) {
        int t;
        ByteBuffer b;
        switch (v) {
            case String s -> { if (typed) o.writeBytes(le(4).putInt(8).array()); str(o, s); return; }
            case Boolean z -> { t = 7; b = le(1).put((byte) (z ? 1 : 0)); }
            case Float f -> { t = 6; b = le(4).putFloat(f); }
            case Double d -> { t = 12; b = le(8).putDouble(d); }
            case Long l when l >= 0 && l <= 0xFFFFFFFFL -> { t = 4; b = le(4).putInt((int) (long) l); }
            case Long l -> { t = 11; b = le(8).putLong(l); }
            case float[] a -> { array(o, typed, 6, a.length); for (float f : a) o.writeBytes(le(4).putFloat(f).array()); return; }
            case long[] a -> { array(o, typed, 5, a.length); for (long l : a) o.writeBytes(le(4).putInt((int) l).array()); return; }
            case List<?> a -> {
                array(o, typed, 8, a.size());
                for (Object s : a) str(o, (String) s);
                return;
            }
            default -> throw new IllegalArgumentException("no GGUF value for " + v.getClass());
        }
        if (typed) o.writeBytes(le(4).putInt(t).array());
        o.writeBytes(b.array());
    }

    private static void array(ByteArrayOutputStream o, boolean typed, int elemType, int n) {
        if (typed) o.writeBytes(le(4).putInt(9).array());
        o.writeBytes(le(12).putInt(elemType).putLong(n).array());
    }

    byte[] bytes() {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        o.writeBytes(le(24).putInt(Gguf.MAGIC).putInt(version).putLong(tensors.size()).putLong(metadata.size() + (alignment != Gguf.DEFAULT_ALIGNMENT ? 1 : 0)).array());
        if (alignment != Gguf.DEFAULT_ALIGNMENT) {
            str(o, "general.alignment");
            value(o, (long) alignment, true);
        }
        metadata.forEach((k, v) -> { str(o, k); value(o, v, true); });
        long offset = 0;
        for (Tensor t : tensors) {
            str(o, t.name);
            o.writeBytes(le(4).putInt(t.ne.length).array());
            for (long d : t.ne) o.writeBytes(le(8).putLong(d).array());
            o.writeBytes(le(12).putInt(t.type.id).putLong(offset).array());
            offset += (t.data.length + alignment - 1) / alignment * alignment;
        }
        while (o.size() % alignment != 0) o.write(0);
        for (Tensor t : tensors) {
            o.writeBytes(t.data);
            for (int i = t.data.length; i % alignment != 0; i++) o.write(0);
        }
        return o.toByteArray();
    }

    public Path write(Path file) {
        try {
            Files.write(file, bytes());
            return file;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
