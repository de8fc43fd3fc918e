package ane4j.run;

import ane4j.model.ModelConfig;
import ane4j.run.KeyTable.Key;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A training run's configuration: the training part of the run layer's key table ({@link RunSpec#KEYS} adds
 * where and how the run is placed). One line of {@link #KEYS} is one key: a CLI flag ({@code --steps 200}), a
 * {@code %%train} line ({@code steps = 200}), a map entry and a line of the run record. The value is the resolved
 * map of every key ({@link #toMap}), which is also how it crosses to the worker JVM.
 */
public final class TrainOptions {
    /** The loss scale a run starts at when {@code lossScale} is 0 (maderix's). */
    public static final float DEFAULT_LOSS_SCALE = 256f;

    public static final List<String> BACKENDS = List.of("ane", "ref");
    public static final List<String> LORA_TARGETS = List.of("q", "k", "v", "o", "w1", "w2", "w3");

    /** The training keys, in the order of the run record. */
    public static final KeyTable KEYS = new KeyTable("train", List.of(
            Key.text("model", "tiny", "preset (" + String.join(", ", ModelConfig.PRESETS) + ") or a model config file; ignored with init (a Hugging Face id org/name here is the init)"),
            Key.path("init", "model to start from: llama2.c .bin, safetensors file or folder, GGUF file, or a Hugging Face id (org/name)"),
            Key.path("data", "token file, see dataDtype (default: the embedded corpus)"),
            Key.path("tokenizer", "tokenizer.bin, tokenizer.json or a Hugging Face id wherever it is (default: next to data or init, else the embedded one)"),
            Key.choice("dataDtype", "uint16", List.of("uint16", "uint32"), "token width of data: uint16 (llama2.c/llm.c shards, vocab ≤ 65536) or uint32"),
            Key.integer("steps", 1, "2000", "micro-steps (one sequence each)"),
            Key.positive("lr", "3e-3", "peak learning rate"),
            Key.integer("warmup", 0, "50", "warm-up micro-steps"),
            Key.integer("accum", 1, "1", "micro-steps per optimizer update"),
            Key.number("clip", "1.0", "global gradient-norm clip (0: off)"),
            Key.number("weightDecay", "0.1", "AdamW decay of matrices and embedding (norms: 0)"),
            Key.longInt("seed", Long.MIN_VALUE, "42", "parameter init and data sampling"),
            Key.choice("backend", "", BACKENDS, "backend (default: the ANE where it is available, else ref)"),
            Key.choice("lossScaling", "dynamic", List.of("static", "dynamic", "none"), "dynamic: an fp16 overflow backs off (docs/ane-audit.md F4)"),
            Key.number("lossScale", "0", "initial/static loss scale (0: 256, maderix's)"),
            Key.choice("storage", "fp16", List.of("fp16", "fp32"), "fp16 as the ANE; fp32: the reference backend computes in fp32"),
            Key.choice("weights", "dynamic", List.of("dynamic", "static"), "dynamic: compile once; static: bake weights, recompile after every update"),
            Key.choice("attention", "fused", List.of("fused", "threestage"), "fused: one kernel; threestage: softmax on the CPU"),
            Key.path("runDir", "checkpoints, metrics.jsonl, loss.png, run.txt (default: a new runs/<model>-<time>)"),
            Key.integer("checkpointEvery", 0, "100", "micro-steps between checkpoints (0: only at the end)"),
            Key.integer("keep", 1, "3", "checkpoints kept"),
            Key.integer("evalEvery", 0, "100", "micro-steps between validation losses on held-out data, and at the end (0: off)"),
            Key.integer("evalTokens", 1, "1024", "held-out tokens per validation (whole windows of seqLen, at least one; 1024 costs tiny ~6% of its steps)"),
            Key.path("valData", "held-out token file (default: the embedded corpus's validation split, else the data file's tail)"),
            Key.fraction("valFraction", "0.1", "share of a data file held out at its end when no valData is given (0: none)"),
            Key.bool("resume", "continue from the newest readable checkpoint in runDir (alone: runs/latest)"),
            Key.bool("restartFromScratch", "set the run folder's checkpoints and metrics aside and start at step 0"),
            Key.bool("override", "resume although optimiser/data settings differ from the run record (the change is recorded)"),
            Key.integer("lora", 0, "0", "LoRA rank: 0 trains every weight; r > 0 freezes the base and trains rank-r adapters"),
            Key.number("loraAlpha", "16", "adapter scale α/r (PEFT's lora_alpha)"),
            Key.list("loraTargets", "q,v", List.of("q", "k", "v", "o", "w1", "w2", "w3"), "the adapted matrices (PEFT's Llama default: q,v)"),
            Key.fraction("loraDropout", "0", "dropout on the adapters' input (PEFT's lora_dropout), in [0, 1)"),
            // model settings over the preset (empty: the preset's; changing dim derives hiddenDim and headDim unless given)
            Key.integer("dim", 1, "", "model width"),
            Key.integer("hiddenDim", 1, "", "FFN width (default with dim: llama's rule, " + "4·dim·2/3 rounded up to 32)"),
            Key.integer("nLayers", 1, "", "transformer blocks"),
            Key.integer("nHeads", 1, "", "query heads"),
            Key.integer("nKvHeads", 1, "", "key/value heads (GQA; default with nHeads: nHeads)"),
            Key.integer("headDim", 1, "", "width of one head (default with dim or nHeads: dim/nHeads)"),
            Key.integer("seqLen", 1, "", "sequence length").alias("seq"),
            Key.integer("vocabSize", 1, "", "vocabulary size").alias("vocab"),
            // a user graph instead of a preset (docs/autograd.md): data and valData are then folders of NAME.npy, init a folder too
            Key.path("graph", "a MIL program to train instead of a preset: data is then a folder of NAME.npy per data input (samples along the first axis), init a folder of NAME.npy per parameter (default: from the seed)"),
            Key.text("loss", "", "the graph's loss output (default: its output named loss, else its only output)"),
            Key.text("logits", "", "instead of loss: the graph's logits output [N, C]; the loss is then their mean cross-entropy against labels, on the CPU"),
            Key.text("labels", "", "with logits: the int32 class ids, one per row of the logits (a data input of the graph, or data/NAME.npy; -1 ignores a row)"),
            Key.text("params", "", "the graph inputs to train, comma-separated (default: every float input without a data file)")));

    /** The keys that describe the preset transformer: a graph run refuses them (their defaults aside). */
    public static final List<String> PRESET_KEYS = List.of("model", "tokenizer", "dataDtype", "attention", "weights", "lora", "loraAlpha", "loraTargets", "loraDropout",
            "dim", "hiddenDim", "nLayers", "nHeads", "nKvHeads", "headDim", "seqLen", "vocabSize");

    /** The model settings among {@link #KEYS}, as {@link ModelConfig#override} names them. */
    public static final List<String> MODEL_KEYS = List.of("dim", "hiddenDim", "nLayers", "nHeads", "nKvHeads", "headDim", "seqLen", "vocabSize");

    /** key → default value. */
    public static final Map<String, String> DEFAULTS = defaults();
    private static final Map<String, String> CANONICAL_DEFAULTS = KEYS.resolve(Map.of());

    private static Map<String, String> defaults() {
        Map<String, String> m = new LinkedHashMap<>();
        for (Key k : KEYS.keys()) m.put(k.name(), k.defaultValue());
        return java.util.Collections.unmodifiableMap(m);
    }

    private final Map<String, String> values;   // every key of KEYS, checked and canonical

    private TrainOptions(Map<String, String> values) {
        this.values = java.util.Collections.unmodifiableMap(values);
        checkLora();
        checkGraph();
    }

    // a graph run trains the graph it names: a setting of the preset transformer would be ignored, so it is refused, as
    // are the graph's keys without a graph
    private void checkGraph() {
        if (graph() == null) {
            for (String key : List.of("loss", "params", "logits", "labels"))
                if (!values.get(key).isEmpty())
                    throw new IllegalArgumentException("[train] " + key + " = " + values.get(key) + " without graph: it names outputs and inputs of a graph; add graph = FILE.mil (--graph FILE.mil) or drop " + key);
            return;
        }
        // the loss is the graph's output, or the CPU loss head's cross-entropy of its logits: one or the other
        if (!logits().isEmpty() && !loss().isEmpty())
            throw new IllegalArgumentException("[train] loss = " + loss() + " and logits = " + logits() + " both name the loss: with logits the loss is their cross-entropy against labels, computed on the CPU; drop loss, or drop logits and labels to train the graph's own loss");
        if (!logits().isEmpty() && labels().isEmpty())
            throw new IllegalArgumentException("[train] logits = " + logits() + " needs labels = NAME, the int32 class ids of its rows (a data input of the graph, or data/NAME.npy); add labels");
        if (logits().isEmpty() && !labels().isEmpty())
            throw new IllegalArgumentException("[train] labels = " + labels() + " without logits: the labels are the CPU loss head's, which needs the graph's logits output; add logits = NAME or drop labels");
        for (String key : PRESET_KEYS)
            if (!values.get(key).equals(CANONICAL_DEFAULTS.get(key)))
                throw new IllegalArgumentException("[train] " + key + " = " + values.get(key) + " is a setting of the preset transformer, but graph = " + graph()
                        + " trains that graph; drop " + key + " (or drop graph to train the preset)");
    }

    // the LoRA keys that mean nothing, or something else, with the other settings: refused as the options are read,
    // before a run folder exists
    private void checkLora() {
        if (lora() == 0 && loraDropout() > 0)
            throw new IllegalArgumentException("[train] loraDropout = " + loraDropout() + " without lora: the dropout is on LoRA adapters' input; add lora = RANK (--lora RANK) or drop loraDropout");
        if (lora() > 0) refuseDropoutWithStaticWeights(loraDropout(), weights().equals("static"));
        // without lora these would be ignored, and the run a full fine-tune nobody asked for
        for (String key : List.of("loraTargets", "loraAlpha"))
            if (lora() == 0 && !values.get(key).equals(CANONICAL_DEFAULTS.get(key)))
                throw new IllegalArgumentException("[train] " + key + " = " + values.get(key) + " without lora: it is a setting of LoRA adapters, and this run would train every weight; add lora = RANK (--lora RANK) or drop " + key);
    }

    /**
     * The one refusal of LoRA dropout with static weights, for these options and for a training step built without them
     * (TrainingStep.Options): the adapters are merged into the baked weights, which cannot drop their input per step.
     */
    public static void refuseDropoutWithStaticWeights(float loraDropout, boolean staticWeights) {
        if (loraDropout > 0 && staticWeights)
            throw new IllegalArgumentException("[train] loraDropout = " + loraDropout + " with weights = static: the adapters are merged into the baked weights, which cannot drop their input per step; use weights = dynamic (the default) for dropout");
    }

    /** Options from key/value pairs (any spelling) over the defaults; unknown keys and bad values give a one-line error naming the key. */
    public static TrainOptions of(Map<String, String> given) {
        return new TrainOptions(KEYS.resolve(given));
    }

    /** Every key → its value as text: what {@link #of} reads back to equal options. */
    public Map<String, String> toMap() { return values; }

    /** The same options with one key changed. */
    public TrainOptions with(String key, String value) {
        Map<String, String> m = new LinkedHashMap<>(values);
        m.put(key, value);
        return of(m);
    }

    /** The same options with {@code resume = true}: a restarted backend takes the run up from its checkpoint. */
    public TrainOptions resuming() {
        return with("resume", "true");
    }

    public String get(String key) {
        String v = values.get(key);
        if (v == null) throw KEYS.unknown(key);
        return v;
    }

    public String model() { return get("model"); }
    public Path init() { return path("init"); }
    public Path data() { return path("data"); }
    public int steps() { return integer("steps"); }
    public float lr() { return number("lr"); }
    public int warmup() { return integer("warmup"); }
    public int accum() { return integer("accum"); }
    public float clip() { return number("clip"); }
    public float weightDecay() { return number("weightDecay"); }
    public long seed() { return Long.parseLong(get("seed")); }
    /** {@code ane}, {@code ref}, or null: automatic. */
    public String backend() { return get("backend").isEmpty() ? null : get("backend"); }
    public String lossScaling() { return get("lossScaling"); }
    public float lossScale() { return number("lossScale"); }
    public String storage() { return get("storage"); }
    public String weights() { return get("weights"); }
    public String attention() { return get("attention"); }
    /** The run folder, or null before the run layer chose one. */
    public Path runDir() { return path("runDir"); }
    public int checkpointEvery() { return integer("checkpointEvery"); }
    public int keep() { return integer("keep"); }
    public Path tokenizer() { return path("tokenizer"); }
    public String dataDtype() { return get("dataDtype"); }
    public int lora() { return integer("lora"); }
    public float loraAlpha() { return number("loraAlpha"); }
    public String loraTargets() { return get("loraTargets"); }
    public float loraDropout() { return number("loraDropout"); }
    public int evalEvery() { return integer("evalEvery"); }
    public int evalTokens() { return integer("evalTokens"); }
    public Path valData() { return path("valData"); }
    public float valFraction() { return number("valFraction"); }
    public boolean resume() { return Boolean.parseBoolean(get("resume")); }
    public boolean restartFromScratch() { return Boolean.parseBoolean(get("restartFromScratch")); }
    public boolean override() { return Boolean.parseBoolean(get("override")); }
    /** The MIL program a graph run trains, or null: a preset run. */
    public Path graph() { return path("graph"); }
    /** The graph's loss output, or "" for its output named loss, else its only one. */
    public String loss() { return get("loss"); }
    /** The graph's logits output for the CPU loss head, or "": the graph's own loss output ({@link #loss}). */
    public String logits() { return get("logits"); }
    /** The CPU loss head's int32 class ids (a data input of the graph, or a data file), or "" without {@link #logits}. */
    public String labels() { return get("labels"); }
    /** The graph inputs to train, or empty: every float input without a data file. */
    public List<String> params() { return get("params").isEmpty() ? List.of() : java.util.Arrays.stream(get("params").split(",")).map(String::strip).filter(x -> !x.isEmpty()).toList(); }

    /** The model settings given (name → value), in {@link #MODEL_KEYS} order; empty: the preset as it is. */
    public Map<String, Integer> modelSettings() {
        Map<String, Integer> m = new LinkedHashMap<>();
        for (String k : MODEL_KEYS) if (!get(k).isEmpty()) m.put(k, integer(k));
        return m;
    }

    private Path path(String key) { return get(key).isEmpty() ? null : Path.of(get(key)); }
    private int integer(String key) { return Integer.parseInt(get(key)); }
    private float number(String key) { return Float.parseFloat(get(key)); }

    /** The options as key = value lines (the run record); model settings left to the preset are left out. */
    public String describe() {
        StringBuilder b = new StringBuilder();
        for (var e : values.entrySet()) {
            String k = e.getKey(), v = e.getValue();
            if (MODEL_KEYS.contains(k) && v.isEmpty()) continue;
            if (graph() != null && PRESET_KEYS.contains(k)) continue;   // a graph run has no preset settings (all at their defaults)
            if (k.equals("data") && v.isEmpty()) v = "embedded corpus";
            if (k.equals("backend") && v.isEmpty()) v = "auto";
            if (!b.isEmpty()) b.append('\n');
            b.append(k).append(" = ").append(v);
        }
        return b.toString();
    }

    @Override public boolean equals(Object o) { return o instanceof TrainOptions t && t.values.equals(values); }

    @Override public int hashCode() { return values.hashCode(); }

    @Override public String toString() { return "TrainOptions" + values; }
}
