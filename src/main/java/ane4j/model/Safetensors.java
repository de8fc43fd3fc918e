package ane4j.model;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Hugging Face safetensors checkpoints with Llama/Qwen3 tensor names.
 *
 * <pre>
 * file: u64 LE header length N, N bytes of JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {…}},
 *       then the data; offsets are relative to the end of the header
 * names (i = layer):   model.embed_tokens.weight = tokenEmbedding   model.norm.weight = rmsFinal   lm_head.weight = wcls
 *   model.layers.i.input_layernorm.weight = rmsAtt          model.layers.i.post_attention_layernorm.weight = rmsFfn
 *   model.layers.i.self_attn.{q,k,v,o}_proj.weight = wq, wk, wv, wo
 *   model.layers.i.self_attn.{q,k}_norm.weight = qNorm, kNorm  (Qwen3)
 *   model.layers.i.mlp.gate_proj.weight = w1, up_proj = w3, down_proj = w2
 * </pre>
 * Hugging Face's Llama and Qwen3 code applies RoPE with rotate-half pairs, and Meta's interleaved Llama weights
 * are converted to it by permuting the q/k rows. So every file read here is {@link RopeStyle#HALF}, and an
 * interleaved model (llama2.c) is permuted on export: the exported model computes the same logits.
 *
 * <p>dtypes F32, F16 and BF16 are read and written. The config comes from a {@code config.json} next to
 * the file, else from our own {@code __metadata__}, else it is inferred from shapes (enough for Qwen3-style
 * files, whose q_norm gives headDim). Files do not define a training sequence length: seqLen is
 * {@link #DEFAULT_SEQ_LEN} unless our metadata has one; change it with {@link ModelConfig#withSeqLen}.
 * Sharded checkpoints are read from their {@code model.safetensors.index.json} ({@link #readSharded}); bias tensors are not supported.
 */
public final class Safetensors {
    private Safetensors() {}

    private static final String TAG = "[safetensors] ";
    public static final int DEFAULT_SEQ_LEN = 256;

    public enum DType {
        F32(4), F16(2), BF16(2);
        final int bytes;

        DType(int bytes) { this.bytes = bytes; }
    }

    /** One tensor entry of a header. */
    public record Entry(String name, DType dtype, int[] shape, long begin, long end) {
        public long elements() {
            long n = 1;
            for (int d : shape) n *= d;
            return n;
        }
    }

    // ----------------------------------------------------------------------------------------------
    // names

    /** Our layout name → safetensors name. */
    static String hfName(String name) {
        if (name.equals("tokenEmbedding")) return "model.embed_tokens.weight";
        if (name.equals("rmsFinal")) return "model.norm.weight";
        if (name.equals("wcls")) return "lm_head.weight";
        int dot = name.indexOf('.', "layers.".length());
        String layer = name.substring("layers.".length(), dot), w = name.substring(dot + 1);
        String p = "model.layers." + layer + ".";
        return p + switch (w) {
            case "rmsAtt" -> "input_layernorm.weight";
            case "rmsFfn" -> "post_attention_layernorm.weight";
            case "wq" -> "self_attn.q_proj.weight";
            case "wk" -> "self_attn.k_proj.weight";
            case "wv" -> "self_attn.v_proj.weight";
            case "wo" -> "self_attn.o_proj.weight";
            case "qNorm" -> "self_attn.q_norm.weight";
            case "kNorm" -> "self_attn.k_norm.weight";
            case "w1" -> "mlp.gate_proj.weight";
            case "w2" -> "mlp.down_proj.weight";
            case "w3" -> "mlp.up_proj.weight";
            default -> throw new IllegalArgumentException("no safetensors name for " + name);
        };
    }

    // ----------------------------------------------------------------------------------------------
    // header

    /** The parsed header: tensor entries in file order, metadata, and where the data starts. */
    public record Header(Map<String, Entry> entries, Map<String, String> metadata, long dataStart) {}

    static Header header(MemorySegment seg, String file) {
        long size = seg.byteSize();
        if (size < 8) throw new ModelFormatException(TAG + file + ": " + size + " bytes, too short for a safetensors header");
        long n = seg.get(LeFiles.LONG, 0);
        if (n <= 1 || n > size - 8 || n > (100 << 20))
            throw new ModelFormatException(TAG + file + ": header length " + n + " does not fit the file of " + size + " bytes; not a safetensors file");
        byte[] hb = new byte[(int) n];
        MemorySegment.copy(seg, java.lang.foreign.ValueLayout.JAVA_BYTE, 8, hb, 0, hb.length);
        Object root;
        try {
            root = Json.parseNoDuplicateKeys(new String(hb, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(TAG + file + ": malformed header: " + e.getMessage(), e);
        }
        if (!(root instanceof Map<?, ?> top)) throw new ModelFormatException(TAG + file + ": header is not a JSON object");
        long dataSize = size - 8 - n;
        Map<String, Entry> entries = new LinkedHashMap<>();
        Map<String, String> metadata = new LinkedHashMap<>();
        for (var e : top.entrySet()) {
            String name = (String) e.getKey();
            if (name.equals("__metadata__")) {
                if (!(e.getValue() instanceof Map<?, ?> md)) throw new ModelFormatException(TAG + file + ": __metadata__ is not an object");
                for (var m : md.entrySet()) {
                    if (!(m.getValue() instanceof String v)) throw new ModelFormatException(TAG + file + ": __metadata__ value of " + m.getKey() + " is not a string");
                    metadata.put((String) m.getKey(), v);
                }
                continue;
            }
            entries.put(name, entry(file, name, e.getValue(), dataSize));
        }
        checkContiguous(entries, dataSize, file);
        return new Header(entries, metadata, 8 + n);
    }

    private static Entry entry(String file, String name, Object v, long dataSize) {
        String where = TAG + file + ": tensor '" + name + "': ";
        if (!(v instanceof Map<?, ?> m)) throw new ModelFormatException(where + "entry is not an object");
        if (!(m.get("dtype") instanceof String dt)) throw new ModelFormatException(where + "no dtype");
        DType dtype;
        try {
            dtype = DType.valueOf(dt);
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(where + "dtype " + dt + " is not supported (F32, F16, BF16)");
        }
        if (!(m.get("shape") instanceof List<?> sl)) throw new ModelFormatException(where + "no shape");
        int[] shape = new int[sl.size()];
        long elements = 1;
        for (int i = 0; i < shape.length; i++) {
            if (!(sl.get(i) instanceof Long d) || d < 0 || d > Integer.MAX_VALUE) throw new ModelFormatException(where + "bad shape " + sl);
            shape[i] = (int) (long) d;
            try {
                elements = Math.multiplyExact(elements, d);
            } catch (ArithmeticException ex) {
                throw new ModelFormatException(where + "shape " + sl + " is too large");
            }
        }
        if (!(m.get("data_offsets") instanceof List<?> ol) || ol.size() != 2 || !(ol.get(0) instanceof Long b) || !(ol.get(1) instanceof Long en))
            throw new ModelFormatException(where + "data_offsets must be [begin, end]");
        if (b < 0 || en < b || en > dataSize)
            throw new ModelFormatException(where + "data_offsets [" + b + ", " + en + "] out of range (data is " + dataSize + " bytes; truncated file?)");
        if (elements > dataSize || en - b != elements * dtype.bytes)
            throw new ModelFormatException(where + "data_offsets span " + (en - b) + " bytes but shape " + sl + " of " + dt + " needs "
                    + (elements > dataSize ? "more than the file's " + dataSize : elements * dtype.bytes));
        return new Entry(name, dtype, shape, b, en);
    }

    /**
     * The data buffer "needs to be entirely indexed, and cannot contain holes" (the safetensors format spec, and its
     * reference reader's {@code validate}): sorted by offset, each tensor starts where the previous one ends, the last ends at
     * the end of the file. Overlapping tensors would alias each other; a hole hides bytes no tensor names.
     */
    private static void checkContiguous(Map<String, Entry> entries, long dataSize, String file) {
        List<Entry> sorted = new ArrayList<>(entries.values());
        sorted.sort(java.util.Comparator.comparingLong(Entry::begin).thenComparingLong(Entry::end));
        long at = 0;
        String prev = null;
        for (Entry e : sorted) {
            if (e.begin() < at)
                throw new ModelFormatException(TAG + file + ": tensor '" + e.name() + "' data_offsets [" + e.begin() + ", " + e.end() + "] overlap tensor '" + prev
                        + "' (ends at " + at + "); the file is corrupt, re-export it");
            if (e.begin() > at)
                throw new ModelFormatException(TAG + file + ": bytes [" + at + ", " + e.begin() + ") of the data belong to no tensor (a hole before '" + e.name()
                        + "' in data_offsets); the file is corrupt, re-export it");
            at = e.end();
            prev = e.name();
        }
        if (at != dataSize)
            throw new ModelFormatException(TAG + file + ": the tensors end at data byte " + at + " but the file has " + dataSize + " data bytes"
                    + (prev == null ? "" : " after '" + prev + "'") + " (trailing bytes or a missing tensor); re-export it");
    }

    /** Reads a tensor's elements (any supported dtype) as floats into {@code dst[dstIndex…]}. */
    static void readFloats(MemorySegment seg, long dataStart, Entry e, float[] dst, int dstIndex) {
        long base = dataStart + e.begin();
        int n = (int) e.elements();
        switch (e.dtype()) {
            case F32 -> LeFiles.readFloats(seg, base, dst, dstIndex, n);
            case F16 -> {
                for (int i = 0; i < n; i++) dst[dstIndex + i] = Float.float16ToFloat(seg.get(LeFiles.SHORT, base + 2L * i));
            }
            case BF16 -> {
                for (int i = 0; i < n; i++) dst[dstIndex + i] = Float.intBitsToFloat(seg.get(LeFiles.SHORT, base + 2L * i) << 16);
            }
        }
    }

    /** All tensors of a file as floats, by name (for tests and inspection). */
    public static Map<String, float[]> readTensors(Path file) {
        try (LeFiles.Mapped m = LeFiles.map(file, "safetensors")) {
            Header h = header(m.segment(), file.getFileName().toString());
            Map<String, float[]> out = new LinkedHashMap<>();
            for (Entry e : h.entries().values()) {
                float[] a = new float[Math.toIntExact(e.elements())];
                readFloats(m.segment(), h.dataStart(), e, a, 0);
                out.put(e.name(), a);
            }
            return out;
        }
    }

    public static Header readHeader(Path file) {
        try (LeFiles.Mapped m = LeFiles.map(file, "safetensors")) {
            return header(m.segment(), file.getFileName().toString());
        }
    }

    // ----------------------------------------------------------------------------------------------
    // model import

    /** Reads a model; the config from config.json next to the file, our metadata, or the tensor shapes. */
    public static Parameters read(Path file) { return read(file, null); }

    /** Reads a model with a given config (its shapes must match the file); null infers the config. */
    public static Parameters read(Path file, ModelConfig config) {
        String name = file.getFileName().toString();
        try (LeFiles.Mapped m = LeFiles.map(file, "safetensors")) {
            Header h = header(m.segment(), name);
            ModelConfig c = config != null ? config : inferConfig(file, h);
            Map<String, Source> tensors = new LinkedHashMap<>();
            for (Entry e : h.entries().values()) tensors.put(e.name(), new Source(m.segment(), h.dataStart(), e));
            return load(name, tensors, c);
        }
    }

    /** The name of a sharded checkpoint's index (transformers' SAFE_WEIGHTS_INDEX_NAME). */
    public static final String INDEX_FILE = "model.safetensors.index.json";

    /**
     * Reads a sharded checkpoint from its index, as transformers' {@code save_pretrained(max_shard_size=…)} writes it:
     * {@code {"metadata": {"total_size": …}, "weight_map": {tensor name: shard file name}}} next to the shards
     * ({@code model-00001-of-00002.safetensors} …). Each shard follows the single-file rules; every tensor must be in
     * the shard the index names, and every shard tensor must be in the index. The config comes from config.json beside it.
     */
    public static Parameters readSharded(Path index) {
        String name = index.getFileName().toString();
        Map<String, String> weightMap = weightMap(index);
        Map<String, LeFiles.Mapped> shards = new LinkedHashMap<>();
        try {
            Map<String, Source> tensors = new LinkedHashMap<>();
            Map<String, Entry> entries = new LinkedHashMap<>();
            Map<String, String> metadata = new LinkedHashMap<>();
            for (String shard : new java.util.LinkedHashSet<>(weightMap.values())) {
                Path file = index.resolveSibling(shard);
                if (!Files.isRegularFile(file))
                    throw new ModelFormatException(TAG + name + " names shard " + shard + ", which is not in " + index.toAbsolutePath().getParent()
                            + "; copy every model-*.safetensors file of the checkpoint next to its index");
                LeFiles.Mapped m = LeFiles.map(file, "safetensors");
                shards.put(shard, m);
                Header h = header(m.segment(), shard);
                if (metadata.isEmpty()) metadata.putAll(h.metadata());
                for (Entry e : h.entries().values()) {
                    String listed = weightMap.get(e.name());
                    if (!shard.equals(listed))
                        throw new ModelFormatException(TAG + shard + ": tensor '" + e.name() + "' is " + (listed == null ? "not in " + name : "listed in " + name + " under " + listed)
                                + "; the index and its shards are from different checkpoints, re-download or re-save them together");
                    tensors.put(e.name(), new Source(m.segment(), h.dataStart(), e));
                    entries.put(e.name(), e);
                }
            }
            for (var w : weightMap.entrySet())
                if (!tensors.containsKey(w.getKey()))
                    throw new ModelFormatException(TAG + name + " lists tensor '" + w.getKey() + "' in " + w.getValue() + ", which does not hold it; the shard is "
                            + "from another checkpoint, re-download or re-save them together");
            ModelConfig c = inferConfig(index, new Header(entries, metadata, 0));
            return load(name, tensors, c);
        } finally {
            shards.values().forEach(LeFiles.Mapped::close);
        }
    }

    private static Map<String, String> weightMap(Path index) {
        String name = index.getFileName().toString();
        Object root;
        try {
            if (Files.size(index) > 64 << 20) throw new ModelFormatException(TAG + index + ": " + Files.size(index) + " bytes is not a safetensors index (over 64 MB)");
            InputFile.requireRegular(index, "safetensors");
            root = Json.parse(Files.readString(index));
        } catch (java.nio.file.NoSuchFileException e) {
            throw new ModelFormatException(TAG + index + ": no such file");
        } catch (IOException e) {
            throw new ModelFormatException(TAG + "cannot read " + index + ": " + LeFiles.reason(e));
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(TAG + name + ": not JSON (" + e.getMessage() + "); re-download the checkpoint's " + INDEX_FILE);
        }
        if (!(root instanceof Map<?, ?> top) || !(top.get("weight_map") instanceof Map<?, ?> wm) || wm.isEmpty())
            throw new ModelFormatException(TAG + name + ": no \"weight_map\" object; not a sharded safetensors index (" + INDEX_FILE + ")");
        Map<String, String> out = new LinkedHashMap<>();
        for (var e : wm.entrySet()) {
            if (!(e.getValue() instanceof String shard) || shard.isEmpty() || shard.contains("/") || shard.contains("\\") || shard.equals("..") || shard.equals("."))
                throw new ModelFormatException(TAG + name + ": weight_map entry '" + e.getKey() + "' names " + e.getValue() + ", not a shard file name beside the index");
            out.put((String) e.getKey(), shard);
        }
        return out;
    }

    // where a tensor's bytes are: its file's mapping, the file's data start, its header entry
    private record Source(MemorySegment seg, long dataStart, Entry entry) {}

    // checks every tensor against the config (before anything is allocated), then reads them into a new Parameters
    private static Parameters load(String name, Map<String, Source> tensors, ModelConfig c) {
        if (c.ropeStyle() != RopeStyle.HALF)
            throw new IllegalArgumentException(TAG + name + ": safetensors checkpoints use rotate-half RoPE; the config must have ropeStyle half");
        ParameterLayout layout;
        try {
            layout = new ParameterLayout(c);
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(TAG + name + ": " + e.getMessage(), e);
        }
        // every shape against the config before anything is allocated: the floats then number what the file holds
        Set<String> used = new java.util.HashSet<>();
        for (ParameterView v : layout.views()) {
            String hf = hfName(v.name());
            Source s = tensors.get(hf);
            if (s == null)
                throw new ModelFormatException(TAG + name + ": missing tensor '" + hf + "' (" + v.name() + " of " + c.name() + ")");
            Entry e = s.entry();
            long[] want = v.isMatrix() ? new long[]{v.rows(), v.cols()} : new long[]{v.rows()};
            if (!java.util.Arrays.equals(want, java.util.Arrays.stream(e.shape()).asLongStream().toArray()))
                throw new ModelFormatException(TAG + name + ": tensor '" + hf + "' has shape " + java.util.Arrays.toString(e.shape())
                        + ", the config needs " + java.util.Arrays.toString(want) + " (" + v.name() + " of " + c.name() + "); fix config.json or the file");
            used.add(hf);
        }
        for (String t : tensors.keySet()) {
            if (used.contains(t) || t.endsWith("rotary_emb.inv_freq")) continue;
            if (t.equals("lm_head.weight") && c.tiedEmbedding()) continue; // some tied checkpoints store a copy
            throw new ModelFormatException(TAG + name + ": tensor '" + t + "' is not part of a Llama/Qwen3 model with this config"
                    + (t.endsWith(".bias") ? " (bias tensors are not supported)" : ""));
        }
        long bytes = 4L * layout.size(), free = Runtime.getRuntime().maxMemory() - (Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory());
        if (bytes > free)
            throw new ModelFormatException(TAG + name + ": " + layout.size() + " parameters need " + (bytes >> 20) + " MB as fp32 but the JVM has "
                    + (free >> 20) + " MB free; raise the heap (--heap, or -Xmx in ANE4J_JAVA_OPTS)");
        Parameters p = Parameters.zeros(layout);
        for (ParameterView v : layout.views()) {
            Source s = tensors.get(hfName(v.name()));
            readFloats(s.seg(), s.dataStart(), s.entry(), p.data(), v.offset());
        }
        String nonFinite = NonFinite.check(p.data(), layout, name, Safetensors::hfName);
        if (nonFinite != null) throw new ModelFormatException(TAG + nonFinite);
        return p;
    }

    private static ModelConfig inferConfig(Path file, Header h) {
        String name = file.getFileName().toString();
        Map<String, Object> cfg = new LinkedHashMap<>();
        Path json = file.toAbsolutePath().resolveSibling("config.json");
        if (Files.isRegularFile(json)) {
            try {
                if (Files.size(json) > 1 << 20) throw new ModelFormatException(TAG + json + ": " + Files.size(json) + " bytes is not a model config.json (over 1 MB)");
                InputFile.requireRegular(json, "safetensors");
                if (!(Json.parse(Files.readString(json)) instanceof Map<?, ?> mm)) throw new ModelFormatException(TAG + json + ": not a JSON object");
                for (var e : mm.entrySet()) cfg.put((String) e.getKey(), e.getValue());
            } catch (IOException | IllegalArgumentException e) {
                throw new ModelFormatException(TAG + json + ": cannot read: " + e.getMessage(), e);
            }
        } else {
            for (var e : h.metadata().entrySet()) cfg.put(e.getKey(), e.getValue());
        }
        Map<String, Entry> t = h.entries();
        Entry embed = t.get("model.embed_tokens.weight");
        if (embed == null || embed.shape().length != 2) throw new ModelFormatException(TAG + name + ": missing tensor 'model.embed_tokens.weight'; not a Llama/Qwen3 checkpoint");
        int vocab = embed.shape()[0], dim = embed.shape()[1];
        int layers = 0;
        while (t.containsKey("model.layers." + layers + ".self_attn.q_proj.weight")) layers++;
        if (layers == 0) throw new ModelFormatException(TAG + name + ": no 'model.layers.0.self_attn.q_proj.weight'; not a Llama/Qwen3 checkpoint");
        Entry q = t.get("model.layers.0.self_attn.q_proj.weight"), k = t.get("model.layers.0.self_attn.k_proj.weight");
        Entry gate = t.get("model.layers.0.mlp.gate_proj.weight"), qn = t.get("model.layers.0.self_attn.q_norm.weight");
        if (k == null || gate == null) throw new ModelFormatException(TAG + name + ": layer 0 lacks k_proj or gate_proj; not a Llama/Qwen3 checkpoint");
        for (Entry e : new Entry[] {q, k, gate})
            if (e.shape().length != 2) throw new ModelFormatException(TAG + name + ": tensor '" + e.name() + "' has shape " + java.util.Arrays.toString(e.shape()) + ", a matrix expected; not a Llama/Qwen3 checkpoint");
        boolean qkNorm = qn != null;
        if (qn != null && qn.shape().length != 1)
            throw new ModelFormatException(TAG + name + ": tensor '" + qn.name() + "' has shape " + java.util.Arrays.toString(qn.shape()) + ", a vector [head_dim] expected; the file is corrupt");
        Integer headDim = intKey(cfg, "head_dim", name);
        if (headDim == null && qn != null) headDim = qn.shape()[0];
        Integer nHeads = intKey(cfg, "num_attention_heads", name);
        if (headDim == null && nHeads != null) {
            if (dim % nHeads != 0)
                throw new ModelFormatException(TAG + name + ": num_attention_heads " + nHeads + " does not divide hidden_size " + dim
                        + ", so head_dim is unknown; set head_dim in config.json or fix num_attention_heads");
            headDim = dim / nHeads;
        }
        if (headDim == null)
            throw new ModelFormatException(TAG + name + ": cannot infer the number of heads from the shapes; put the model's config.json next to the file");
        if (headDim <= 0 || q.shape()[0] % headDim != 0 || k.shape()[0] % headDim != 0)
            throw new ModelFormatException(TAG + name + ": head_dim " + headDim + " does not divide the q_proj rows " + q.shape()[0] + " and k_proj rows " + k.shape()[0]
                    + "; fix head_dim or num_attention_heads in config.json");
        if (nHeads == null) nHeads = q.shape()[0] / headDim;
        Integer nKv = intKey(cfg, "num_key_value_heads", name);
        if (nKv == null) nKv = k.shape()[0] / headDim;
        checkKey(cfg, "hidden_size", dim, name);
        checkKey(cfg, "vocab_size", vocab, name);
        checkKey(cfg, "num_hidden_layers", layers, name);
        Integer hidden = intKey(cfg, "intermediate_size", name);
        Object tieV = cfg.get("tie_word_embeddings");
        boolean tied = tieV == null ? !t.containsKey("lm_head.weight") : Boolean.parseBoolean(tieV.toString());
        Double theta = numKey(cfg, "rope_theta", name), eps = numKey(cfg, "rms_norm_eps", name);
        RopeScaling scaling = RopeScaling.NONE;
        Object rs = cfg.get("rope_scaling") != null ? cfg.get("rope_scaling") : cfg.get("rope_parameters");   // transformers 5 names it rope_parameters
        if (rs instanceof String text && !text.isBlank()) {   // our own __metadata__ holds it as JSON text
            try {
                rs = Json.parse(text);
            } catch (IllegalArgumentException e) {
                throw new ModelFormatException(TAG + name + ": rope_scaling '" + text + "' is not JSON; the file is corrupt");
            }
        }
        if (rs instanceof Map<?, ?> rm) {
            try {
                scaling = RopeScaling.fromHf(rm);
            } catch (IllegalArgumentException e) {
                throw new ModelFormatException(TAG + name + ": " + e.getMessage());
            }
            if (theta == null && rm.get("rope_theta") instanceof Number n) theta = n.doubleValue();
        } else if (rs != null && !(rs instanceof String))
            throw new ModelFormatException(TAG + name + ": rope_scaling is " + rs + ", not an object; fix config.json");
        Integer seq = intKey(cfg, "ane4j_seq_len", name);
        Double alpha = numKey(cfg, "ane4j_residual_scale", name);
        String stem = name.replaceFirst("\\.safetensors(\\.index\\.json)?$", "");
        if (stem.equals("model") && file.toAbsolutePath().getParent() != null && file.toAbsolutePath().getParent().getFileName() != null)
            stem = file.toAbsolutePath().getParent().getFileName().toString();
        Object modelName = cfg.get("ane4j_name");
        try {
            return new ModelConfig(modelName instanceof String s ? s : stem, dim, hidden != null ? hidden : gate.shape()[0], layers, nHeads, nKv, headDim,
                    vocab, seq != null ? seq : DEFAULT_SEQ_LEN,
                    theta != null ? theta.floatValue() : (qkNorm ? 1e6f : 10000f), RopeStyle.HALF, qkNorm, tied,
                    eps != null ? eps.floatValue() : (qkNorm ? 1e-6f : 1e-5f), alpha != null ? alpha.floatValue() : 1f, scaling);
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(TAG + name + ": inferred config is invalid: " + e.getMessage(), e);
        }
    }

    private static Double numKey(Map<String, Object> cfg, String key, String file) {
        Object v = cfg.get(key);
        if (v == null) return null;
        if (v instanceof Number n) return n.doubleValue();
        try {
            return Double.parseDouble(v.toString());
        } catch (NumberFormatException e) {
            throw new ModelFormatException(TAG + file + ": config value " + key + " = " + v + " is not a number");
        }
    }

    private static Integer intKey(Map<String, Object> cfg, String key, String file) {
        Double d = numKey(cfg, key, file);
        if (d == null) return null;
        if (d != Math.rint(d) || d <= 0 || d > Integer.MAX_VALUE)
            throw new ModelFormatException(TAG + file + ": config value " + key + " = " + cfg.get(key) + " is not a positive integer");
        return d.intValue();
    }

    private static void checkKey(Map<String, Object> cfg, String key, int actual, String file) {
        Integer v = intKey(cfg, key, file);
        if (v != null && v != actual)
            throw new ModelFormatException(TAG + file + ": config " + key + " = " + v + " but the tensors say " + actual);
    }

    // ----------------------------------------------------------------------------------------------
    // model export

    /**
     * Writes a model (F32, F16 or BF16); interleaved-RoPE models are permuted to rotate-half. The config is stored
     * in {@code __metadata__} under Hugging Face key names (plus ane4j_seq_len, ane4j_name), so {@link #read}
     * restores it without a config.json.
     */
    public static void write(Path file, Parameters params, DType dtype) {
        Parameters p = RopePermutation.convert(params, RopeStyle.HALF);
        ModelConfig c = p.config();
        Map<String, Object> header = new LinkedHashMap<>();
        Map<String, String> md = new LinkedHashMap<>();
        md.put("format", "pt");
        configKeys(c).forEach((k, v) -> md.put(k, v instanceof Map<?, ?> ? Json.compact(v) : v.toString()));
        md.put("ane4j_seq_len", Integer.toString(c.seqLen()));
        md.put("ane4j_name", c.name());
        md.put("ane4j_residual_scale", Float.toString(c.residualScale()));
        header.put("__metadata__", md);
        long offset = 0;
        for (ParameterView v : p.layout().views()) {
            long bytes = (long) v.size() * dtype.bytes;
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("dtype", dtype.toString());
            entry.put("shape", v.isMatrix() ? List.of(v.rows(), v.cols()) : List.of(v.rows()));
            entry.put("data_offsets", List.of(offset, offset + bytes));
            header.put(hfName(v.name()), entry);
            offset += bytes;
        }
        StringBuilder hdr = new StringBuilder(Json.compact(header));
        while ((hdr.length() + 8) % 8 != 0) hdr.append(' '); // the data starts 8-byte aligned
        byte[] hb = hdr.toString().getBytes(StandardCharsets.UTF_8);
        try (LeFiles.Writer w = new LeFiles.Writer(file, "safetensors")) {
            w.i64(hb.length).bytes(hb);
            for (ParameterView v : p.layout().views()) {
                switch (dtype) {
                    case F32 -> w.floats(p.data(), v.offset(), v.size());
                    case F16 -> { for (int i = v.offset(); i < v.end(); i++) w.u16(Float.floatToFloat16(p.data()[i])); }
                    case BF16 -> { for (int i = v.offset(); i < v.end(); i++) w.u16(toBf16(p.data()[i])); }
                }
            }
            w.commit();
        }
    }

    /** The bfloat16 nearest to {@code f} (ties to even, as PyTorch's {@code .bfloat16()}); NaN stays a quiet NaN. */
    static short toBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) return (short) ((bits >>> 16) | 0x40);
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    /** The Hugging Face config.json keys of a config. */
    static Map<String, Object> configKeys(ModelConfig c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("hidden_size", c.dim());
        m.put("intermediate_size", c.hiddenDim());
        m.put("num_hidden_layers", c.nLayers());
        m.put("num_attention_heads", c.nHeads());
        m.put("num_key_value_heads", c.nKvHeads());
        m.put("head_dim", c.headDim());
        m.put("vocab_size", c.vocabSize());
        m.put("rope_theta", c.ropeTheta());
        try {
            Map<String, Object> scaling = c.ropeScaling().toHf();
            if (scaling != null) m.put("rope_scaling", scaling);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(TAG + c.name() + ": " + e.getMessage(), e);
        }
        m.put("rms_norm_eps", c.normEps());
        m.put("tie_word_embeddings", c.tiedEmbedding());
        return m;
    }

    /** A minimal Hugging Face config.json for a config (the keys {@link #read} uses). */
    public static String configJson(ModelConfig c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("architectures", List.of(c.qkNorm() ? "Qwen3ForCausalLM" : "LlamaForCausalLM"));
        m.put("model_type", c.qkNorm() ? "qwen3" : "llama");
        m.putAll(configKeys(c));
        return Json.pretty(m);
    }
}
