package ane4j.model;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * How a model's RoPE frequencies depart from the base {@code theta^(-2i/HD)} of pair i. Every place that builds RoPE
 * tables (the CPU forward, the training kernels' tables, the generation kernels, the MIL graph) takes its frequencies
 * from {@link ModelConfig#ropeFrequencies()}, which applies this to the base frequencies.
 * <ul>
 *   <li>{@link None}: the base frequencies (Llama 2, Qwen3, the Stories models).
 *   <li>{@link Linear}: every frequency divided by {@code factor} (Hugging Face {@code rope_type "linear"}; llama.cpp
 *       {@code rope.scaling.type linear} with {@code freq_scale = 1/factor}).
 *   <li>{@link Llama3}: Llama 3.1/3.2/3.3's rule (Hugging Face {@code rope_type "llama3"},
 *       transformers/modeling_rope_utils.py {@code _compute_llama3_parameters}). With {@code L} the original context and
 *       the wavelength {@code λ = 2π/f} of base frequency f:
 *       <pre>
 *   λ &lt; L/highFreqFactor            f                 (high frequencies kept)
 *   λ &gt; L/lowFreqFactor             f / factor        (low frequencies slowed down)
 *   otherwise                        (1 − s)·f/factor + s·f,  s = (L/λ − lowFreqFactor) / (highFreqFactor − lowFreqFactor)
 *       </pre>
 *   <li>{@link Factors}: each frequency divided by its own factor, as llama.cpp applies a GGUF's {@code rope_freqs.weight}
 *       tensor ({@code ggml_rope_ext}'s freq_factors: {@code theta / freq_factor}); llama.cpp's convert_hf_to_gguf.py
 *       writes Llama 3's rule as such a tensor (1 for high, {@code factor} for low frequencies,
 *       {@code 1/((1 − s)/factor + s)} between). A GGUF whose tensor is exactly Llama 3's rule is read as {@link Llama3}.
 * </ul>
 * Goldens: {@code tools/gen_rope_scaling_golden.py} (PyTorch, the published formula) → {@code golden/rope/}.
 */
public sealed interface RopeScaling {

    /** The frequencies of pairs 0..HD/2−1 after scaling {@code base} (one per pair, the base frequencies). */
    double[] apply(double[] base);

    /** The {@code ropeScaling} value of a config file: {@code none}, {@code linear factor=2}, … ({@link #parse} reads it back). */
    String text();

    RopeScaling NONE = new None();

    record None() implements RopeScaling {
        public double[] apply(double[] base) { return base.clone(); }
        public String text() { return "none"; }
    }

    record Linear(double factor) implements RopeScaling {
        public Linear {
            if (!(factor >= 1) || Double.isInfinite(factor))
                throw new IllegalArgumentException("[config] linear RoPE scaling factor " + factor + " must be a number ≥ 1");
        }

        public double[] apply(double[] base) {
            double[] f = base.clone();
            for (int i = 0; i < f.length; i++) f[i] = base[i] / factor;
            return f;
        }

        public String text() { return "linear factor=" + num(factor); }
    }

    record Llama3(double factor, double lowFreqFactor, double highFreqFactor, int originalContext) implements RopeScaling {
        public Llama3 {
            if (!(factor >= 1) || Double.isInfinite(factor))
                throw new IllegalArgumentException("[config] llama3 RoPE scaling factor " + factor + " must be a number ≥ 1");
            if (!(lowFreqFactor > 0) || !(highFreqFactor > lowFreqFactor) || Double.isInfinite(highFreqFactor))
                throw new IllegalArgumentException("[config] llama3 RoPE scaling needs 0 < low_freq_factor < high_freq_factor, got "
                        + lowFreqFactor + " and " + highFreqFactor);
            if (originalContext <= 0)
                throw new IllegalArgumentException("[config] llama3 RoPE scaling original_max_position_embeddings must be positive, got " + originalContext);
        }

        public double[] apply(double[] base) {
            double lowWavelen = originalContext / lowFreqFactor, highWavelen = originalContext / highFreqFactor;
            double[] f = new double[base.length];
            for (int i = 0; i < f.length; i++) {
                double wavelen = 2 * Math.PI / base[i];
                if (wavelen < highWavelen) f[i] = base[i];                           // high frequency: kept
                else if (wavelen > lowWavelen) f[i] = base[i] / factor;              // low frequency: interpolated
                else {                                                              // between: blend the two
                    double s = (originalContext / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
                    f[i] = (1 - s) * base[i] / factor + s * base[i];
                }
            }
            return f;
        }

        /** llama.cpp's rope_freqs.weight for this rule: base[i] / scaled[i] (convert_hf_to_gguf.py, LlamaModel). */
        public float[] freqFactors(double[] base) {
            double[] scaled = apply(base);
            float[] ff = new float[base.length];
            for (int i = 0; i < ff.length; i++) ff[i] = (float) (base[i] / scaled[i]);
            return ff;
        }

        public String text() {
            return "llama3 factor=" + num(factor) + " lowFreqFactor=" + num(lowFreqFactor) + " highFreqFactor=" + num(highFreqFactor)
                    + " originalContext=" + originalContext;
        }
    }

    /** Per-pair divisors (a GGUF's rope_freqs.weight); a list so that configs compare by value. */
    record Factors(List<Float> factors) implements RopeScaling {
        public Factors {
            factors = List.copyOf(factors);
            for (float v : factors)
                if (!(v > 0) || Float.isInfinite(v))
                    throw new IllegalArgumentException("[config] RoPE frequency factor " + v + " must be a positive number");
        }

        public double[] apply(double[] base) {
            if (base.length != factors.size())
                throw new IllegalArgumentException("[config] " + factors.size() + " RoPE frequency factors for " + base.length
                        + " rotation pairs; the head dimension must be twice the number of factors");
            double[] f = new double[base.length];
            for (int i = 0; i < f.length; i++) f[i] = base[i] / factors.get(i);
            return f;
        }

        public String text() {
            StringBuilder b = new StringBuilder("factors");
            for (float v : factors) b.append(' ').append(v);
            return b.toString();
        }
    }

    /** The base frequencies {@code 1 / theta^(2i/HD)} of pairs i = 0..HD/2−1 (Hugging Face's inv_freq, in double). */
    static double[] baseFrequencies(double theta, int headDim) {
        double[] f = new double[headDim / 2];
        for (int i = 0; i < f.length; i++) f[i] = 1.0 / Math.pow(theta, (2.0 * i) / headDim);
        return f;
    }

    /**
     * Recognises llama.cpp's rope_freqs tensor: {@link Llama3} when it equals that rule's factors (in fp32, as
     * convert_hf_to_gguf.py writes them) for the factor it ends with and the defaults every Llama 3.x uses (low 1,
     * high 4, original context 8192), else the factors as they are.
     */
    static RopeScaling fromFreqFactors(float[] ff, double theta, int headDim) {
        double[] base = baseFrequencies(theta, headDim);
        if (ff.length == base.length && ff.length > 0 && ff[ff.length - 1] >= 1 && Float.isFinite(ff[ff.length - 1])) {
            Llama3 guess = new Llama3(ff[ff.length - 1], 1, 4, 8192);
            float[] want = guess.freqFactors(base);
            boolean same = true;
            for (int i = 0; i < ff.length && same; i++) same = Math.abs(want[i] - ff[i]) <= 1e-6 * Math.abs(want[i]);
            if (same) return guess;
        }
        List<Float> l = new ArrayList<>(ff.length);
        for (float v : ff) l.add(v);
        return new Factors(l);
    }

    /** Reads {@link #text()}: {@code none}, {@code linear factor=F}, {@code llama3 factor=F lowFreqFactor=L highFreqFactor=H originalContext=N}, {@code factors a b …}. */
    static RopeScaling parse(String text) {
        String[] w = text.strip().split("\\s+");
        String kind = w[0].toLowerCase(Locale.ROOT);
        try {
            return switch (kind) {
                case "none" -> {
                    if (w.length != 1) throw new IllegalArgumentException("'none' takes no values");
                    yield NONE;
                }
                case "linear" -> new Linear(named(w, "factor"));
                case "llama3" -> new Llama3(named(w, "factor"), named(w, "lowFreqFactor"), named(w, "highFreqFactor"), (int) named(w, "originalContext"));
                case "factors" -> {
                    List<Float> l = new ArrayList<>();
                    for (int i = 1; i < w.length; i++) l.add(Float.parseFloat(w[i]));
                    if (l.isEmpty()) throw new IllegalArgumentException("'factors' needs one number per rotation pair");
                    yield new Factors(l);
                }
                default -> throw new IllegalArgumentException("unknown kind '" + w[0] + "'");
            };
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("ropeScaling = '" + text.strip() + "': " + e.getMessage() + " is not a number"
                    + "; use none, linear factor=F, llama3 factor=F lowFreqFactor=L highFreqFactor=H originalContext=N or factors a b …");
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("ropeScaling = '" + text.strip() + "': " + e.getMessage().replace("[config] ", "")
                    + "; use none, linear factor=F, llama3 factor=F lowFreqFactor=L highFreqFactor=H originalContext=N or factors a b …");
        }
    }

    /**
     * A Hugging Face config.json's {@code rope_scaling} (or transformers 5's {@code rope_parameters}) object: {@code rope_type}
     * (older files: {@code type}) {@code default}, {@code linear} or {@code llama3}; any other type (yarn, dynamic, longrope …)
     * is refused in one line naming it. Llama 3's keys default as transformers' and convert_hf_to_gguf.py's do
     * (low 1, high 4, original 8192); {@code factor} is required.
     */
    static RopeScaling fromHf(java.util.Map<?, ?> m) {
        Object type = m.get("rope_type") != null ? m.get("rope_type") : m.get("type");
        String t = type == null ? "default" : type.toString().toLowerCase(Locale.ROOT);
        return switch (t) {
            case "default", "none" -> NONE;
            case "linear" -> new Linear(hfNumber(m, "factor", null));
            case "llama3" -> new Llama3(hfNumber(m, "factor", null), hfNumber(m, "low_freq_factor", 1.0), hfNumber(m, "high_freq_factor", 4.0),
                    (int) hfNumber(m, "original_max_position_embeddings", 8192.0));
            default -> throw new IllegalArgumentException("RoPE scaling type '" + type + "' is not supported (ane4j applies none, linear and llama3)"
                    + "; its logits would differ from the original's");
        };
    }

    private static double hfNumber(java.util.Map<?, ?> m, String key, Double dflt) {
        Object v = m.get(key);
        if (v == null) {
            if (dflt == null) throw new IllegalArgumentException("rope_scaling has no '" + key + "'");
            return dflt;
        }
        if (v instanceof Number n) return n.doubleValue();
        try {
            return Double.parseDouble(v.toString());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("rope_scaling " + key + " = '" + v + "' is not a number");
        }
    }

    /** The Hugging Face {@code rope_scaling} object of this scaling (null for none); {@link Factors} have none. */
    default java.util.Map<String, Object> toHf() {
        java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
        switch (this) {
            case None n -> { return null; }
            case Linear l -> {
                m.put("rope_type", "linear");
                m.put("factor", l.factor());
            }
            case Llama3 l -> {
                m.put("rope_type", "llama3");
                m.put("factor", l.factor());
                m.put("low_freq_factor", l.lowFreqFactor());
                m.put("high_freq_factor", l.highFreqFactor());
                m.put("original_max_position_embeddings", l.originalContext());
            }
            case Factors f -> throw new IllegalArgumentException("the model's RoPE frequencies come from a GGUF rope_freqs tensor that is not "
                    + "Llama 3's rule, and a Hugging Face config.json has no way to carry per-pair factors; export it as GGUF");
        }
        return m;
    }

    private static double named(String[] words, String key) {
        for (int i = 1; i < words.length; i++)
            if (words[i].startsWith(key + "=")) return Double.parseDouble(words[i].substring(key.length() + 1));
        throw new IllegalArgumentException("'" + key + "=' is missing");
    }

    /** A double as the shortest text that reads back to it ({@code 8} rather than {@code 8.0}). */
    private static String num(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
    }
}
