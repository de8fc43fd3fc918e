package ane4j.train;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A training run's configuration. The same keys serve the CLI ({@code --steps 200}), a {@code %%train} cell
 * ({@code steps = 200}) and the run record written next to the metrics.
 */
public record TrainOptions(
        String model,          // preset name or a config file (ignored when init is given)
        Path init,             // llama2.c .bin or safetensors checkpoint to start from, or null
        Path data,             // token file (see dataDtype), or null for the embedded corpus
        Path tokenizer,        // tokenizer.bin or tokenizer.json wherever it is, or null (next to data or init, else the embedded one)
        String dataDtype,      // uint16 (llama2.c/llm.c shards, vocab ≤ 65536) | uint32 (larger vocabularies, e.g. qwen3's 151936)
        int steps,             // micro-steps (one sequence each)
        float lr,              // peak learning rate
        int warmup,            // warm-up micro-steps
        int accum,             // micro-steps per optimizer update
        float clip,            // global gradient-norm clip (0: off)
        float weightDecay,     // AdamW decay for matrices and embedding (norms: 0)
        long seed,             // parameter init and data sampling
        String backend,        // ane | ref | null (auto)
        String lossScaling,    // dynamic (default: an fp16 overflow backs off, ane-audit.md F4) | static | none
        float lossScale,       // initial/static scale; 0 = LossScaler.DEFAULT_SCALE (256, maderix's)
        String storage,        // fp16 (as the ANE) | fp32 (the reference backend computes in fp32)
        String weights,        // dynamic (compile once) | static (bake weights, recompile after every update)
        String attention,      // fused (one kernel, explicit causal mask) | threestage (scores on the backend, softmax on the CPU)
        Path runDir,           // checkpoints, metrics.jsonl, loss.png, run.txt
        int checkpointEvery,   // micro-steps between checkpoints (0: only at the end)
        int keep,              // checkpoints kept
        int evalEvery,         // micro-steps between validation losses on held-out data, and at the end (0: off)
        int evalTokens,        // held-out tokens per validation (whole windows of seqLen, at least one)
        Path valData,          // held-out token file, or null: the embedded corpus's validation split, else the data file's tail
        float valFraction,     // share of a data file held out at its end when no valData is given (0: none, no validation)
        boolean resume,        // continue from the newest readable checkpoint in runDir
        boolean restartFromScratch,  // set the run folder's checkpoints and metrics aside and start at step 0
        boolean override,      // resume although optimiser/data settings differ from the run record (the change is recorded)
        int lora,              // LoRA rank: 0 trains every weight; r > 0 freezes the base and trains rank-r adapters
        float loraAlpha,       // adapter scale α/r (PEFT's lora_alpha)
        String loraTargets,    // comma list of the adapted matrices, of q,k,v,o,w1,w2,w3 (PEFT's Llama default: q,v)
        float loraDropout) {   // dropout on the adapters' input (PEFT's lora_dropout), in [0, 1)

    /** The matrices LoRA may adapt, in the order adapters are laid out. */
    public static final java.util.List<String> LORA_TARGETS = java.util.List.of("q", "k", "v", "o", "w1", "w2", "w3");

    public static final Map<String, String> DEFAULTS = defaults();

    private static Map<String, String> defaults() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("model", "tiny");
        m.put("init", "");
        m.put("data", "");
        m.put("tokenizer", "");
        m.put("dataDtype", "uint16");
        m.put("steps", "2000");
        m.put("lr", "3e-3");
        m.put("warmup", "50");
        m.put("accum", "1");
        m.put("clip", "1.0");
        m.put("weightDecay", "0.1");
        m.put("seed", "42");
        m.put("backend", "");
        m.put("lossScaling", "dynamic");
        m.put("lossScale", "0");
        m.put("storage", "fp16");
        m.put("weights", "dynamic");
        m.put("attention", "fused");
        m.put("runDir", "runs/latest");
        m.put("checkpointEvery", "100");
        m.put("keep", "3");
        m.put("evalEvery", "100");
        m.put("evalTokens", "4096");
        m.put("valData", "");
        m.put("valFraction", "0.1");
        m.put("resume", "false");
        m.put("restartFromScratch", "false");
        m.put("override", "false");
        m.put("lora", "0");
        m.put("loraAlpha", "16");
        m.put("loraTargets", "q,v");
        m.put("loraDropout", "0");
        return m;
    }

    /** Options from key/value pairs over the defaults; unknown keys and bad values give a one-line error naming the key. */
    public static TrainOptions of(Map<String, String> given) {
        Map<String, String> m = new LinkedHashMap<>(DEFAULTS);
        for (var e : given.entrySet()) {
            String key = canonical(e.getKey());
            if (!m.containsKey(key)) throw new IllegalArgumentException("[train] unknown option '" + e.getKey() + "' (options: " + String.join(", ", DEFAULTS.keySet()) + ")");
            m.put(key, e.getValue().trim());
        }
        TrainOptions o = new TrainOptions(m.get("model"), path(m.get("init")), path(m.get("data")), path(m.get("tokenizer")), oneOf(m, "dataDtype", "uint16", "uint32"), integer(m, "steps", 1),
                number(m, "lr"), integer(m, "warmup", 0), integer(m, "accum", 1), number(m, "clip"), number(m, "weightDecay"),
                seed(m), m.get("backend").isEmpty() ? null : oneOf(m, "backend", "ane", "ref"),
                oneOf(m, "lossScaling", "static", "dynamic", "none"), number(m, "lossScale"), oneOf(m, "storage", "fp16", "fp32"),
                oneOf(m, "weights", "dynamic", "static"), oneOf(m, "attention", "fused", "threestage"), Path.of(m.get("runDir")), integer(m, "checkpointEvery", 0), integer(m, "keep", 1),
                integer(m, "evalEvery", 0), integer(m, "evalTokens", 1), path(m.get("valData")), number(m, "valFraction"), bool(m, "resume"),
                bool(m, "restartFromScratch"), bool(m, "override"), integer(m, "lora", 0), number(m, "loraAlpha"), loraTargets(m),
                number(m, "loraDropout"));
        if (o.valFraction >= 1) throw new IllegalArgumentException("[train] valFraction must be below 1 (the share of the data file held out for validation), got " + o.valFraction);
        if (o.lr <= 0) throw new IllegalArgumentException("[train] lr must be positive, got " + o.lr);
        if (o.loraDropout >= 1) throw new IllegalArgumentException("[train] loraDropout must be below 1, got " + o.loraDropout);
        return o;
    }

    /** {@code weight-decay} and {@code weight_decay} both mean {@code weightDecay}. */
    static String canonical(String key) {
        StringBuilder sb = new StringBuilder();
        boolean up = false;
        for (char ch : key.trim().toCharArray()) {
            if (ch == '-' || ch == '_') { up = true; continue; }
            sb.append(up ? Character.toUpperCase(ch) : ch);
            up = false;
        }
        String k = sb.toString();
        for (String d : DEFAULTS.keySet()) if (d.equalsIgnoreCase(k)) return d;
        return k;
    }

    /** The options as key = value lines (the run record). */
    public String describe() {
        return String.join("\n", "model = " + model, "init = " + (init == null ? "" : init), "data = " + (data == null ? "embedded corpus" : data),
                "tokenizer = " + (tokenizer == null ? "" : tokenizer),
                "dataDtype = " + dataDtype,
                "steps = " + steps, "lr = " + lr, "warmup = " + warmup, "accum = " + accum, "clip = " + clip, "weightDecay = " + weightDecay,
                "seed = " + seed, "backend = " + (backend == null ? "auto" : backend), "lossScaling = " + lossScaling, "lossScale = " + lossScale,
                "storage = " + storage, "weights = " + weights, "attention = " + attention, "runDir = " + runDir, "checkpointEvery = " + checkpointEvery, "keep = " + keep,
                "evalEvery = " + evalEvery, "evalTokens = " + evalTokens, "valData = " + (valData == null ? "" : valData), "valFraction = " + valFraction, "resume = " + resume,
                "restartFromScratch = " + restartFromScratch, "override = " + override, "lora = " + lora, "loraAlpha = " + loraAlpha,
                "loraTargets = " + loraTargets, "loraDropout = " + loraDropout);
    }

    /** The targets as given, without spaces, each one of {@link #LORA_TARGETS} and none twice. */
    private static String loraTargets(Map<String, String> m) {
        java.util.List<String> given = new java.util.ArrayList<>();
        for (String t : m.get("loraTargets").split(",")) {
            String name = t.trim().toLowerCase(Locale.ROOT);
            if (!LORA_TARGETS.contains(name) || given.contains(name))
                throw new IllegalArgumentException("[train] loraTargets = '" + m.get("loraTargets") + "': '" + t.trim() + "' is " + (given.contains(name) ? "given twice" : "not one of " + String.join(",", LORA_TARGETS)));
            given.add(name);
        }
        return String.join(",", given);
    }

    private static Path path(String s) { return s.isEmpty() ? null : Path.of(s); }

    private static String check(Map<String, String> m, String key, String regex) {
        String v = m.get(key);
        if (!v.matches(regex)) throw new IllegalArgumentException("[train] " + key + " = '" + v + "' is not valid");
        return v;
    }

    private static long seed(Map<String, String> m) {
        String v = check(m, "seed", "-?\\d+");
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("[train] seed = " + v + " is out of range (" + Long.MIN_VALUE + " to " + Long.MAX_VALUE + ")");
        }
    }

    private static int integer(Map<String, String> m, String key, int min) {
        int v;
        try {
            v = Integer.parseInt(m.get(key));
        } catch (NumberFormatException e) {
            if (m.get(key).matches("[-+]?\\d+"))
                throw new IllegalArgumentException("[train] " + key + " = " + m.get(key) + " is out of range (at most " + Integer.MAX_VALUE + ")");
            throw new IllegalArgumentException("[train] " + key + " = '" + m.get(key) + "' is not an integer");
        }
        if (v < min) throw new IllegalArgumentException("[train] " + key + " must be at least " + min + ", got " + v);
        return v;
    }

    private static float number(Map<String, String> m, String key) {
        try {
            float v = Float.parseFloat(m.get(key));
            if (!Float.isFinite(v) || v < 0) throw new NumberFormatException();
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("[train] " + key + " = '" + m.get(key) + "' is not a non-negative number");
        }
    }

    private static boolean bool(Map<String, String> m, String key) {
        String v = m.get(key).toLowerCase(Locale.ROOT);
        if (v.equals("true") || v.equals("false")) return Boolean.parseBoolean(v);
        throw new IllegalArgumentException("[train] " + key + " = '" + m.get(key) + "' is not true or false");
    }

    private static String oneOf(Map<String, String> m, String key, String... allowed) {
        String v = m.get(key).toLowerCase(Locale.ROOT);
        for (String a : allowed) if (a.equals(v)) return v;
        throw new IllegalArgumentException("[train] " + key + " = '" + m.get(key) + "' is not one of " + String.join(", ", allowed));
    }
}
