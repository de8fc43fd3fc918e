package ane4j.model;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * llama2.c's model files: the legacy version 0 ({@code export.py legacy_export}, read by {@code run.c}; read and written)
 * and version 1 ({@code version1_export}: read). Version 1 starts with uint32 magic "ak42", int32 version 1, the same
 * 7 int32 (vocab_size always positive), uint8 shared_classifier, zeros to byte 256; then float32 arrays in the order
 * rms_att (L, D), rms_ffn (L, D), rms_final (D), token_embedding (V, D), wq, wk, wv, wo, w1, w2, w3 (each over all
 * layers), wcls (V, D) only when unshared; no freq_cis. Version 2 (int8 Q8_0) is refused in one line.
 *
 * <pre>
 * header: 7 int32 LE: dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
 *         vocab_size &lt; 0 means the classifier is not shared with the embedding
 * then float32 LE arrays, each over all layers (L) before the next:
 *   token_embedding (V, D), rms_att (L, D), wq (L, D, D), wk (L, KV, D), wv (L, KV, D), wo (L, D, D),
 *   rms_ffn (L, D), w1 (L, H, D), w2 (L, D, H), w3 (L, H, D), rms_final (D),
 *   freq_cis_real (seq_len, HS/2), freq_cis_imag (seq_len, HS/2), wcls (V, D) only when unshared
 * HS = D / n_heads, KV = n_kv_heads · HS
 * </pre>
 * The freq_cis tables are skipped on read and computed (cos/sin of pos·10000^(-2i/HS)) on write.
 * Files carry no RoPE base, norm eps or name: a read config has ropeTheta 10000, eps 1e-5, interleaved RoPE.
 */
public final class Llama2Bin {
    private Llama2Bin() {}

    private static final String TAG = "[llama2.bin] ";
    static final int HEADER_BYTES = 28;
    /** "ak42" read as a little-endian uint32, the first field of llama2.c's version 1 and 2 files. */
    static final int LLAMA2C_MAGIC = 0x616b3432;
    static final int V1_HEADER_BYTES = 256;

    /** Bytes a file with this header must have, or -1 on overflow. */
    static long expectedBytes(int dim, int hidden, int layers, int heads, int kvHeads, int vocab, int seqLen, boolean shared) {
        try {
            long d = dim, h = hidden, l = layers, v = vocab, hs = dim / heads, kv = (long) kvHeads * hs;
            long floats = Math.multiplyExact(v, d)
                    + Math.multiplyExact(l, d)                                  // rms_att
                    + Math.multiplyExact(Math.multiplyExact(l, d), d) * 2       // wq, wo
                    + Math.multiplyExact(Math.multiplyExact(l, kv), d) * 2      // wk, wv
                    + Math.multiplyExact(l, d)                                  // rms_ffn
                    + Math.multiplyExact(Math.multiplyExact(l, h), d) * 3       // w1, w2, w3
                    + d                                                         // rms_final
                    + Math.multiplyExact((long) seqLen, hs)                     // freq_cis_real + imag (2 · seq · HS/2)
                    + (shared ? 0 : Math.multiplyExact(v, d));
            return Math.addExact(HEADER_BYTES, Math.multiplyExact(floats, 4L));
        } catch (ArithmeticException e) {
            return -1;
        }
    }

    /** Reads a model; the config's name is the file name without extension. */
    public static Parameters read(Path file) {
        try (LeFiles.Mapped m = LeFiles.map(file, "llama2.bin")) {
            long fileSize = m.size();
            String name = file.getFileName().toString();
            if (fileSize < HEADER_BYTES)
                throw new ModelFormatException(TAG + name + ": " + fileSize + " bytes is shorter than the 28-byte header; not a llama2.c model file");
            // llama2.c export.py version1_export/version2_export: uint32 magic 0x616b3432 ("ak42"), int32 version, then a header padded to 256 bytes
            int version = 0;
            long headerBytes = HEADER_BYTES, at = 0;
            if (m.segment().get(LeFiles.INT, 0) == LLAMA2C_MAGIC) {
                version = fileSize >= 8 ? m.segment().get(LeFiles.INT, 4) : -1;
                if (version == 2)
                    throw new ModelFormatException(TAG + name + ": a llama2.c version-2 file (magic ak42, int8 group-quantized Q8_0 weights), which ane4j does not "
                            + "read; re-export it as float32 with llama2.c's `python export.py OUT.bin --version 1 --checkpoint CKPT.pt` (or --version 0)");
                if (version != 1)
                    throw new ModelFormatException(TAG + name + ": a llama2.c file (magic ak42) of version " + version + ", which ane4j does not know (it reads "
                            + "versions 0 and 1); re-export it with llama2.c's `python export.py OUT.bin --version 1 --checkpoint CKPT.pt`");
                if (fileSize < V1_HEADER_BYTES)
                    throw new ModelFormatException(TAG + name + ": " + fileSize + " bytes is shorter than the 256-byte header of a llama2.c version-1 file; truncated?");
                headerBytes = V1_HEADER_BYTES;
                at = 8;
            }
            int[] h = new int[7];
            for (int i = 0; i < 7; i++) h[i] = m.segment().get(LeFiles.INT, at + 4L * i);
            // v0 flags an unshared classifier with a negative vocab_size; v1 has a shared_classifier byte after the 7 ints
            boolean shared = version == 1 ? m.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 36) != 0 : h[5] > 0;
            int dim = h[0], hidden = h[1], layers = h[2], heads = h[3], kvHeads = h[4], vocab = Math.abs(h[5]), seqLen = h[6];
            String header = (version == 1 ? "version=1 " : "") + "dim=" + dim + " hidden_dim=" + hidden + " n_layers=" + layers + " n_heads=" + heads
                    + " n_kv_heads=" + kvHeads + " vocab_size=" + h[5] + " seq_len=" + seqLen + (version == 1 ? " shared_classifier=" + shared : "");
            if (dim <= 0 || hidden <= 0 || layers <= 0 || heads <= 0 || kvHeads <= 0 || h[5] == 0 || h[5] == Integer.MIN_VALUE || seqLen <= 0
                    || (version == 1 && h[5] < 0) || dim % heads != 0 || heads % kvHeads != 0 || (dim / heads) % 2 != 0)
                throw new ModelFormatException(TAG + name + ": header " + header + " is not a valid llama2.c model (foreign or corrupt file)");
            long expected = expectedBytes(dim, hidden, layers, heads, kvHeads, vocab, seqLen, shared);
            if (expected >= 0 && version == 1) expected += V1_HEADER_BYTES - HEADER_BYTES - 4L * seqLen * (dim / heads); // no freq_cis in v1
            if (expected != fileSize)
                throw new ModelFormatException(TAG + name + ": expected " + (expected < 0 ? "an impossible number of" : expected)
                        + " bytes for " + header + ", found " + fileSize + (fileSize < expected ? " (truncated?)" : " (foreign file or other version?)"));
            String stem = name.replaceFirst("\\.[^.]*$", "");
            Parameters p;
            try {
                p = Parameters.zeros(new ModelConfig(stem.isEmpty() ? "llama2" : stem, dim, hidden, layers, heads, kvHeads, dim / heads,
                        vocab, seqLen, 10000f, RopeStyle.INTERLEAVED, false, shared, 1e-5f, 1f));
            } catch (IllegalArgumentException e) {
                throw new ModelFormatException(TAG + name + ": header " + header + ": " + e.getMessage(), e);
            }
            long pos = headerBytes;
            for (Section s : version == 1 ? v1Sections(p.layout()) : sections(p.layout())) {
                if (s.views == null) { // freq_cis: skipped
                    pos += 4L * s.skip;
                    continue;
                }
                for (ParameterView v : s.views) {
                    LeFiles.readFloats(m.segment(), pos, p.data(), v.offset(), v.size());
                    pos += 4L * v.size();
                }
            }
            assert pos == fileSize;
            String nonFinite = NonFinite.check(p.data(), p.layout(), name, n -> n);
            if (nonFinite != null) throw new ModelFormatException(TAG + nonFinite);
            return p;
        }
    }

    /**
     * Writes {@code params} as a llama2.c legacy file. A rotate-half model is converted to interleaved pairs
     * (q/k rows permuted); QK-norm and headDim ≠ dim/nHeads cannot be stored in this format.
     */
    public static void write(Path file, Parameters params) {
        ModelConfig c = params.config();
        if (c.qkNorm())
            throw new IllegalArgumentException(TAG + c.name() + " uses QK-norm, which llama2.c files cannot hold; export it as safetensors");
        if (c.headDim() * c.nHeads() != c.dim())
            throw new IllegalArgumentException(TAG + c.name() + ": headDim " + c.headDim() + " × nHeads " + c.nHeads() + " ≠ dim " + c.dim()
                    + ", which llama2.c files cannot hold; export it as safetensors");
        if (c.residualScale() != 1f)
            throw new IllegalArgumentException(TAG + c.name() + ": residualScale " + c.residualScale() + " ≠ 1 cannot be stored in a llama2.c file");
        if (!(c.ropeScaling() instanceof RopeScaling.None))
            throw new IllegalArgumentException(TAG + c.name() + " uses RoPE scaling (" + c.ropeScaling().text() + "), which llama2.c files cannot hold "
                    + "(run.c computes theta^(-2i/HD)); export it as safetensors or GGUF");
        Parameters p = RopePermutation.convert(params, RopeStyle.INTERLEAVED);
        try (LeFiles.Writer w = new LeFiles.Writer(file, "llama2.bin")) {
            w.i32(c.dim()).i32(c.hiddenDim()).i32(c.nLayers()).i32(c.nHeads()).i32(c.nKvHeads())
                    .i32(c.tiedEmbedding() ? c.vocabSize() : -c.vocabSize()).i32(c.seqLen());
            for (Section s : sections(p.layout())) {
                if (s.views == null) {
                    writeFreqCis(w, c);
                    continue;
                }
                for (ParameterView v : s.views) w.floats(p.data(), v.offset(), v.size());
            }
            w.commit();
        }
    }

    // freq_cis_real (seq_len, HS/2) then freq_cis_imag, as llama2.c's precompute_freqs_cis
    private static void writeFreqCis(LeFiles.Writer w, ModelConfig c) {
        int half = c.headDim() / 2;
        double[] freq = c.ropeFrequencies();
        for (int part = 0; part < 2; part++) {
            for (int pos = 0; pos < c.seqLen(); pos++) {
                for (int i = 0; i < half; i++) {
                    double angle = pos * freq[i];
                    w.f32((float) (part == 0 ? Math.cos(angle) : Math.sin(angle)));
                }
            }
        }
    }

    // the file's array order; views == null marks the freq_cis block (skip floats)
    private record Section(List<ParameterView> views, long skip) {}

    // version1_export's order: norms first (att, ffn per layer, final), embedding, the matrices by kind over layers, wcls when unshared
    private static List<Section> v1Sections(ParameterLayout layout) {
        ModelConfig c = layout.config();
        List<Section> out = new ArrayList<>();
        for (String n : new String[]{"rmsAtt", "rmsFfn"}) out.add(new Section(perLayer(layout, n), 0));
        out.add(new Section(List.of(layout.rmsFinal()), 0));
        out.add(new Section(List.of(layout.tokenEmbedding()), 0));
        for (String n : new String[]{"wq", "wk", "wv", "wo", "w1", "w2", "w3"}) out.add(new Section(perLayer(layout, n), 0));
        if (!c.tiedEmbedding()) out.add(new Section(List.of(layout.wcls()), 0));
        return out;
    }

    private static List<ParameterView> perLayer(ParameterLayout layout, String n) {
        List<ParameterView> vs = new ArrayList<>();
        for (int l = 0; l < layout.config().nLayers(); l++) vs.add(layout.view("layers." + l + "." + n));
        return vs;
    }

    private static List<Section> sections(ParameterLayout layout) {
        ModelConfig c = layout.config();
        List<Section> out = new ArrayList<>();
        out.add(new Section(List.of(layout.tokenEmbedding()), 0));
        String[] perLayer = {"rmsAtt", "wq", "wk", "wv", "wo", "rmsFfn", "w1", "w2", "w3"};
        for (String n : perLayer) {
            List<ParameterView> vs = new ArrayList<>();
            for (int l = 0; l < c.nLayers(); l++) vs.add(layout.view("layers." + l + "." + n));
            out.add(new Section(vs, 0));
        }
        out.add(new Section(List.of(layout.rmsFinal()), 0));
        out.add(new Section(null, (long) c.seqLen() * c.headDim()));
        if (!c.tiedEmbedding()) out.add(new Section(List.of(layout.wcls()), 0));
        return out;
    }
}
