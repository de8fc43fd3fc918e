package ane4j.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Shape and hyper-parameters of a llama-family decoder (llama2.c Stories models and Qwen3).
 *
 * <p>Architecture: pre-norm blocks {@code x += α·attn(rmsnorm(x)); x += α·ffn(rmsnorm(x))} with SwiGLU FFN
 * {@code w2(silu(w1 x) ⊙ w3 x)}, RoPE, optional per-head RMSNorm of q and k before RoPE (Qwen3 "QK-norm"),
 * GQA where query head h uses KV head {@code h / (nHeads / nKvHeads)}, and a tied or separate classifier.
 *
 * <p>{@code residualScale} is the α above. It is 1.0 for every preset, which is what Llama and Qwen3 compute;
 * maderix/ANE's dynamic pipeline uses 1/sqrt(2·nLayers) ("DeepNet α"), which gives a different model than
 * the pretrained weights expect, so only set it for from-scratch experiments.
 *
 * @param headDim may differ from dim/nHeads (Qwen3-0.6B: dim 1024, 16 heads, headDim 128)
 * @param ropeScaling how the RoPE frequencies depart from theta^(-2i/HD) (Llama 3.1/3.2's llama3 rule, linear, a GGUF's
 *                    per-pair factors; {@link RopeScaling#NONE} for most models); {@link #ropeFrequencies()} applies it
 */
public record ModelConfig(
        String name,
        int dim,
        int hiddenDim,
        int nLayers,
        int nHeads,
        int nKvHeads,
        int headDim,
        int vocabSize,
        int seqLen,
        float ropeTheta,
        RopeStyle ropeStyle,
        boolean qkNorm,
        boolean tiedEmbedding,
        float normEps,
        float residualScale,
        RopeScaling ropeScaling) {

    /** A config without RoPE scaling (the presets, llama2.c files, Qwen3). */
    public ModelConfig(String name, int dim, int hiddenDim, int nLayers, int nHeads, int nKvHeads, int headDim, int vocabSize, int seqLen,
                       float ropeTheta, RopeStyle ropeStyle, boolean qkNorm, boolean tiedEmbedding, float normEps, float residualScale) {
        this(name, dim, hiddenDim, nLayers, nHeads, nKvHeads, headDim, vocabSize, seqLen, ropeTheta, ropeStyle, qkNorm, tiedEmbedding,
                normEps, residualScale, RopeScaling.NONE);
    }

    public ModelConfig {
        if (ropeScaling == null) ropeScaling = RopeScaling.NONE;
        if (name == null || name.isBlank()) throw new IllegalArgumentException("[config] name is empty");
        positive(name, "dim", dim);
        positive(name, "hiddenDim", hiddenDim);
        positive(name, "nLayers", nLayers);
        positive(name, "nHeads", nHeads);
        positive(name, "nKvHeads", nKvHeads);
        positive(name, "headDim", headDim);
        positive(name, "vocabSize", vocabSize);
        positive(name, "seqLen", seqLen);
        if (nHeads % nKvHeads != 0)
            throw new IllegalArgumentException("[config] " + name + ": nHeads " + nHeads + " is not a multiple of nKvHeads "
                    + nKvHeads + " (GQA needs whole groups of query heads per KV head)");
        if (headDim % 2 != 0)
            throw new IllegalArgumentException("[config] " + name + ": headDim " + headDim + " is odd; RoPE rotates pairs, use an even headDim");
        if (!(ropeTheta > 0) || Float.isInfinite(ropeTheta))
            throw new IllegalArgumentException("[config] " + name + ": ropeTheta " + ropeTheta + " must be a positive number");
        if (!(normEps > 0) || normEps >= 1)
            throw new IllegalArgumentException("[config] " + name + ": normEps " + normEps + " must be in (0, 1)");
        if (!(residualScale > 0) || Float.isInfinite(residualScale))
            throw new IllegalArgumentException("[config] " + name + ": residualScale " + residualScale + " must be a positive number");
        if (ropeStyle == null) throw new IllegalArgumentException("[config] " + name + ": ropeStyle is missing (interleaved or half)");
        if (ropeScaling instanceof RopeScaling.Factors f && f.factors().size() != headDim / 2)
            throw new IllegalArgumentException("[config] " + name + ": " + f.factors().size() + " RoPE frequency factors for headDim " + headDim
                    + "; give one per rotation pair (" + headDim / 2 + ")");
        long qDim = (long) nHeads * headDim;
        if (qDim > Integer.MAX_VALUE / 16) throw new IllegalArgumentException("[config] " + name + ": nHeads*headDim = " + qDim + " is too large");
        // the training kernels' attention scores are one tensor [1, nHeads, seqLen, seqLen]; a MIL tensor holds at most 2^31-1 elements
        long scores = (long) nHeads * seqLen * seqLen;
        if (scores > Integer.MAX_VALUE)
            throw new IllegalArgumentException("[config] " + name + ": seqLen " + seqLen + " with " + nHeads + " heads makes attention scores [1, " + nHeads + ", "
                    + seqLen + ", " + seqLen + "] of " + scores + " elements, over 2^31-1; use seqLen ≤ " + (long) Math.sqrt((double) Integer.MAX_VALUE / nHeads));
    }

    private static void positive(String name, String key, int v) {
        if (v <= 0) throw new IllegalArgumentException("[config] " + name + ": " + key + " must be positive, got " + v);
    }

    /**
     * The RoPE frequency of each rotation pair i = 0..headDim/2−1: {@code 1 / ropeTheta^(2i/headDim)}, then
     * {@link #ropeScaling}. The one place frequencies are computed: the CPU forward, the training and generation
     * kernels' tables and the MIL graph all rotate pair i of a head by {@code position · ropeFrequencies()[i]}.
     */
    public double[] ropeFrequencies() {
        return ropeScaling.apply(RopeScaling.baseFrequencies(ropeTheta, headDim));
    }

    /** Width of all query heads together: nHeads·headDim (the rows of wq). */
    public int qDim() { return nHeads * headDim; }

    /** Width of all key (or value) heads together: nKvHeads·headDim (the rows of wk and wv). */
    public int kvDim() { return nKvHeads * headDim; }

    /** Query heads per KV head. */
    public int groupSize() { return nHeads / nKvHeads; }

    /** Parameters in one transformer block. */
    public long layerParameterCount() {
        long d = dim, q = qDim(), kv = kvDim(), h = hiddenDim;
        return 2 * d                     // rmsAtt, rmsFfn
                + q * d + 2 * kv * d     // wq, wk, wv
                + d * q                  // wo
                + 3 * h * d              // w1, w2, w3
                + (qkNorm ? 2L * headDim : 0);
    }

    /** All parameters: blocks, token embedding, final norm and (when untied) the classifier. */
    public long parameterCount() {
        long embed = (long) vocabSize * dim;
        return nLayers * layerParameterCount() + embed + dim + (tiedEmbedding ? 0 : embed);
    }

    public ModelConfig withSeqLen(int newSeqLen) {
        return new ModelConfig(name, dim, hiddenDim, nLayers, nHeads, nKvHeads, headDim, vocabSize, newSeqLen,
                ropeTheta, ropeStyle, qkNorm, tiedEmbedding, normEps, residualScale, ropeScaling);
    }

    public ModelConfig withVocabSize(int newVocabSize) {
        return new ModelConfig(name, dim, hiddenDim, nLayers, nHeads, nKvHeads, headDim, newVocabSize, seqLen,
                ropeTheta, ropeStyle, qkNorm, tiedEmbedding, normEps, residualScale, ropeScaling);
    }

    public ModelConfig withRopeScaling(RopeScaling scaling) {
        return new ModelConfig(name, dim, hiddenDim, nLayers, nHeads, nKvHeads, headDim, vocabSize, seqLen,
                ropeTheta, ropeStyle, qkNorm, tiedEmbedding, normEps, residualScale, scaling);
    }

    public ModelConfig withName(String newName) {
        return new ModelConfig(newName, dim, hiddenDim, nLayers, nHeads, nKvHeads, headDim, vocabSize, seqLen,
                ropeTheta, ropeStyle, qkNorm, tiedEmbedding, normEps, residualScale, ropeScaling);
    }

    // ----------------------------------------------------------------------------------------------
    // presets

    /** The names {@link #parse} accepts. */
    public static final List<String> PRESETS = List.of("tiny", "stories15m", "stories42m", "stories110m", "qwen3-0.6b");

    /** Default vocabulary of the embedded corpus tokenizer ({@code EmbeddedCorpus.tokenizer()}). */
    public static final int TINY_VOCAB = 512;

    /**
     * A preset by name (case-insensitive). {@code tiny} is for the embedded corpus: dim 64, hidden 192
     * (a multiple of 32, which the ANE wants for matmul inner dims; llama's 8/3·dim rule would give 176),
     * 2 layers, 2 heads of 32 (a head dim that is a multiple of 32: Q·Kᵀ contracts over it, chip rule
     * matmul-contraction-32, maderix issue #47), seq 64, vocab 512; about 0.14M parameters.
     */
    public static ModelConfig parse(String preset) {
        String p = preset == null ? "" : preset.trim().toLowerCase(Locale.ROOT);
        return switch (p) {
            case "tiny" -> llama("tiny", 64, 192, 2, 2, TINY_VOCAB, 64);
            case "stories15m" -> llama("stories15m", 288, 768, 6, 6, 32000, 256);
            case "stories42m" -> llama("stories42m", 512, 1376, 8, 8, 32000, 1024);
            case "stories110m" -> llama("stories110m", 768, 2048, 12, 12, 32000, 256);
            case "qwen3-0.6b" -> new ModelConfig("qwen3-0.6b", 1024, 3072, 28, 16, 8, 128, 151936, 256,
                    1_000_000f, RopeStyle.HALF, true, true, 1e-6f, 1f);
            default -> throw new IllegalArgumentException("[config] unknown model '" + preset + "'; use one of "
                    + String.join(", ", PRESETS) + " or a config file");
        };
    }

    /** A llama2.c-style config: MHA, headDim = dim/nHeads, interleaved RoPE base 10000, eps 1e-5, tied. */
    public static ModelConfig llama(String name, int dim, int hiddenDim, int nLayers, int nHeads, int vocabSize, int seqLen) {
        if (nHeads <= 0 || dim % nHeads != 0)
            throw new IllegalArgumentException("[config] " + name + ": dim " + dim + " is not divisible by nHeads " + nHeads);
        return new ModelConfig(name, dim, hiddenDim, nLayers, nHeads, nHeads, dim / nHeads, vocabSize, seqLen,
                10000f, RopeStyle.INTERLEAVED, false, true, 1e-5f, 1f);
    }

    /**
     * llama's FFN width for {@code dim} (llama2.c model.py, multiple_of 32): {@code 4·dim}, then {@code ⌊2/3⌋}, rounded up
     * to a multiple of 32. It gives the Stories presets' 768 (dim 288), 1376 (512), 2048 (768) and tiny's 192 (64).
     */
    public static int llamaHiddenDim(int dim) {
        long h = 2 * (4L * dim) / 3, rounded = 32 * ((h + 31) / 32);   // in long: 4 * dim overflows an int from dim 2^29
        if (rounded > Integer.MAX_VALUE)
            throw new IllegalArgumentException("[config] dim " + dim + " is too large (its hidden size " + rounded + " is over 2^31 - 1); use a smaller --dim");
        return (int) rounded;
    }

    /**
     * {@code base} with some of dim, hiddenDim, nLayers, nHeads, nKvHeads, headDim, seqLen, vocabSize replaced, and what
     * follows from them re-derived unless given too: a new dim gives llama's hiddenDim ({@link #llamaHiddenDim}); a new
     * dim or nHeads gives headDim = dim/nHeads; a new nHeads on an MHA base gives nKvHeads = nHeads. Checked as every
     * config is.
     */
    public static ModelConfig override(ModelConfig base, Map<String, Integer> given) {
        for (String k : given.keySet())
            if (!List.of("dim", "hiddenDim", "nLayers", "nHeads", "nKvHeads", "headDim", "seqLen", "vocabSize").contains(k))
                throw new IllegalArgumentException("[config] " + k + " is not a model setting");
        if (given.isEmpty()) return base;
        int dim = given.getOrDefault("dim", base.dim), nHeads = given.getOrDefault("nHeads", base.nHeads);
        int hidden = given.getOrDefault("hiddenDim", given.containsKey("dim") ? llamaHiddenDim(dim) : base.hiddenDim);
        int kv = given.getOrDefault("nKvHeads", given.containsKey("nHeads") && base.nKvHeads == base.nHeads ? nHeads : base.nKvHeads);
        Integer head = given.get("headDim");
        if (head == null && (given.containsKey("dim") || given.containsKey("nHeads"))) {
            if (dim % nHeads != 0)
                throw new IllegalArgumentException("[config] " + base.name + ": dim " + dim + " is not divisible by nHeads " + nHeads + "; set headDim too");
            head = dim / nHeads;
        }
        return new ModelConfig(base.name, dim, hidden, given.getOrDefault("nLayers", base.nLayers), nHeads, kv, head == null ? base.headDim : head,
                given.getOrDefault("vocabSize", base.vocabSize), given.getOrDefault("seqLen", base.seqLen), base.ropeTheta, base.ropeStyle,
                base.qkNorm, base.tiedEmbedding, base.normEps, base.residualScale, base.ropeScaling);
    }

    // ----------------------------------------------------------------------------------------------
    // config files

    private static final List<String> KEYS = List.of("preset", "name", "dim", "hiddenDim", "nLayers", "nHeads", "nKvHeads",
            "headDim", "vocabSize", "seqLen", "ropeTheta", "ropeStyle", "qkNorm", "tiedEmbedding", "normEps", "residualScale", "ropeScaling");

    /**
     * Reads a config file of {@code key = value} lines ({@code #} starts a comment). Keys are the record
     * components; {@code preset = stories15m} starts from a preset and the other lines override it. Without a
     * preset, dim, hiddenDim, nLayers, nHeads, vocabSize and seqLen are required; nKvHeads defaults to nHeads,
     * headDim to dim/nHeads, ropeTheta 10000, ropeStyle interleaved, qkNorm false, tiedEmbedding true,
     * normEps 1e-5, residualScale 1, ropeScaling none, name the file name without extension. {@code ropeScaling} is one
     * line such as {@code llama3 factor=32 lowFreqFactor=1 highFreqFactor=4 originalContext=8192} ({@link RopeScaling#parse}).
     */
    public static ModelConfig load(Path file) {
        List<String> lines;
        InputFile.requireRegular(file, "config");
        try {
            lines = Files.readAllLines(file);
        } catch (IOException e) {
            throw new ModelFormatException("[config] cannot read " + file + ": " + LeFiles.reason(e), e);
        }
        return fromLines(lines, file.toString(), file.getFileName().toString().replaceFirst("\\.[^.]*$", ""));
    }

    /** {@link #load} of text already in memory (a checkpoint's state section); {@code source} names it in errors. */
    public static ModelConfig fromFileText(String text, String source) {
        return fromLines(text.lines().toList(), source, "model");
    }

    private static ModelConfig fromLines(List<String> lines, String file, String stem) {
        Map<String, String> values = new LinkedHashMap<>();
        Map<String, Integer> lineOf = new LinkedHashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (i == 0 && line.startsWith("\uFEFF")) line = line.substring(1);   // a UTF-8 BOM, skipped as the JSON readers do
            int hash = line.indexOf('#');
            if (hash >= 0) line = line.substring(0, hash);
            line = line.strip();
            if (line.isEmpty()) continue;
            String where = file + ":" + (i + 1);
            int eq = line.indexOf('=');
            if (eq < 0) throw new ModelFormatException("[config] " + where + ": expected 'key = value', got '" + line + "'");
            String key = line.substring(0, eq).strip();
            String value = line.substring(eq + 1).strip();
            if (!KEYS.contains(key))
                throw new ModelFormatException("[config] " + where + ": unknown key '" + key + "'; known keys: " + String.join(", ", KEYS));
            if (values.containsKey(key))
                throw new ModelFormatException("[config] " + where + ": key '" + key + "' repeated (first on line " + lineOf.get(key) + ")");
            if (value.isEmpty()) throw new ModelFormatException("[config] " + where + ": key '" + key + "' has no value");
            values.put(key, value);
            lineOf.put(key, i + 1);
        }
        var r = new ConfigReader(file, values, lineOf);
        ModelConfig base = null;
        if (values.containsKey("preset")) {
            try {
                base = parse(values.get("preset"));
            } catch (IllegalArgumentException e) {
                throw new ModelFormatException("[config] " + r.where("preset") + ": " + e.getMessage().replace("[config] ", ""));
            }
        }
        String name = values.getOrDefault("name", base != null ? base.name() : stem);
        int dim = r.integer("dim", base == null ? null : base.dim());
        int hiddenDim = r.integer("hiddenDim", base == null ? null : base.hiddenDim());
        int nLayers = r.integer("nLayers", base == null ? null : base.nLayers());
        int nHeads = r.integer("nHeads", base == null ? null : base.nHeads());
        int nKvHeads = r.integer("nKvHeads", base != null && !values.containsKey("nHeads") ? base.nKvHeads() : nHeads);
        Integer headDefault = base != null && !values.containsKey("dim") && !values.containsKey("nHeads") ? Integer.valueOf(base.headDim()) : null;
        if (headDefault == null && !values.containsKey("headDim")) {
            if (nHeads <= 0 || dim % nHeads != 0)
                throw new ModelFormatException("[config] " + r.where("nHeads") + ": dim " + dim + " is not divisible by nHeads "
                        + nHeads + "; set headDim explicitly");
            headDefault = dim / nHeads;
        }
        int headDim = r.integer("headDim", headDefault);
        int vocabSize = r.integer("vocabSize", base == null ? null : base.vocabSize());
        int seqLen = r.integer("seqLen", base == null ? null : base.seqLen());
        float ropeTheta = r.number("ropeTheta", base == null ? 10000f : base.ropeTheta());
        RopeStyle ropeStyle = r.rope(base == null ? RopeStyle.INTERLEAVED : base.ropeStyle());
        boolean qkNorm = r.bool("qkNorm", base != null && base.qkNorm());
        boolean tied = r.bool("tiedEmbedding", base == null || base.tiedEmbedding());
        float normEps = r.number("normEps", base == null ? 1e-5f : base.normEps());
        float residualScale = r.number("residualScale", base == null ? 1f : base.residualScale());
        RopeScaling scaling = base == null ? RopeScaling.NONE : base.ropeScaling();
        if (values.containsKey("ropeScaling")) {
            try {
                scaling = RopeScaling.parse(values.get("ropeScaling"));
            } catch (IllegalArgumentException e) {
                throw new ModelFormatException("[config] " + r.where("ropeScaling") + ": " + e.getMessage());
            }
        }
        try {
            return new ModelConfig(name, dim, hiddenDim, nLayers, nHeads, nKvHeads, headDim, vocabSize, seqLen,
                    ropeTheta, ropeStyle, qkNorm, tied, normEps, residualScale, scaling);
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(e.getMessage().replace("[config] " + name + ":", "[config] " + file + ":"), e);
        }
    }

    private record ConfigReader(String file, Map<String, String> values, Map<String, Integer> lineOf) {
        String where(String key) {
            Integer line = lineOf.get(key);
            return line == null ? file : file + ":" + line;
        }

        int integer(String key, Integer dflt) {
            String v = values.get(key);
            if (v == null) {
                if (dflt == null) throw new ModelFormatException("[config] " + file + ": missing key '" + key + "' (add a line '" + key + " = …')");
                return dflt;
            }
            try {
                return Integer.parseInt(v.replace("_", ""));
            } catch (NumberFormatException e) {
                throw new ModelFormatException("[config] " + where(key) + ": " + key + " = '" + v + "' is not an integer");
            }
        }

        float number(String key, float dflt) {
            String v = values.get(key);
            if (v == null) return dflt;
            try {
                return Float.parseFloat(v.replace("_", ""));
            } catch (NumberFormatException e) {
                throw new ModelFormatException("[config] " + where(key) + ": " + key + " = '" + v + "' is not a number");
            }
        }

        boolean bool(String key, boolean dflt) {
            String v = values.get(key);
            if (v == null) return dflt;
            return switch (v.toLowerCase(Locale.ROOT)) {
                case "true", "yes", "1" -> true;
                case "false", "no", "0" -> false;
                default -> throw new ModelFormatException("[config] " + where(key) + ": " + key + " = '" + v + "' is not true or false");
            };
        }

        RopeStyle rope(RopeStyle dflt) {
            String v = values.get("ropeStyle");
            if (v == null) return dflt;
            return switch (v.toLowerCase(Locale.ROOT)) {
                case "interleaved" -> RopeStyle.INTERLEAVED;
                case "half" -> RopeStyle.HALF;
                default -> throw new ModelFormatException("[config] " + where("ropeStyle") + ": ropeStyle = '" + v + "'; use interleaved or half");
            };
        }
    }

    /** The config as a {@link #load}-able file text. */
    public String toFileText() {
        return String.join("\n",
                "name = " + name, "dim = " + dim, "hiddenDim = " + hiddenDim, "nLayers = " + nLayers, "nHeads = " + nHeads,
                "nKvHeads = " + nKvHeads, "headDim = " + headDim, "vocabSize = " + vocabSize, "seqLen = " + seqLen,
                "ropeTheta = " + ropeTheta, "ropeStyle = " + ropeStyle.name().toLowerCase(Locale.ROOT), "qkNorm = " + qkNorm,
                "tiedEmbedding = " + tiedEmbedding, "normEps = " + normEps, "residualScale = " + residualScale)
                + (ropeScaling instanceof RopeScaling.None ? "" : "\nropeScaling = " + ropeScaling.text()) + "\n";
    }
}
