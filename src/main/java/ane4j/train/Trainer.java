package ane4j.train;

import ane4j.backend.Backend;
import ane4j.mil.DType;
import ane4j.model.EmbeddedCorpus;
import ane4j.model.Llama2Bin;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.Parameters;
import ane4j.model.Rng;
import ane4j.model.Safetensors;
import ane4j.model.TokenShard;
import ane4j.model.Tokenizer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A training run: data, the ANE-shaped {@link TrainingStep}, gradient accumulation, loss scaling, clipping, AdamW with
 * warm-up + cosine, checkpoints and metrics. Every bit of state that influences the numbers (weights, moments, AdamW
 * step, data RNG, loss-scale state) is in the checkpoint, so a resumed run continues bit-identically.
 */
public final class Trainer implements AutoCloseable {
    /**
     * One micro-step's figures (JSON line in metrics.jsonl). {@code stagedActivationBytes}/{@code stagedWeightBytes}: what
     * the step wrote into kernel inputs ({@link TrainingStep#stagedActivationBytes()}, {@link TrainingStep#stagedWeightBytes()}).
     */
    public record StepMetrics(long step, long steps, float loss, float lr, float lossScale, float gradNorm, boolean updated,
                              boolean skipped, double msPerStep, double tokensPerSecond, Map<String, Double> phaseMs,
                              long stagedActivationBytes, long stagedWeightBytes) {
        public StepMetrics(long step, long steps, float loss, float lr, float lossScale, float gradNorm, boolean updated,
                           boolean skipped, double msPerStep, double tokensPerSecond, Map<String, Double> phaseMs) {
            this(step, steps, loss, lr, lossScale, gradNorm, updated, skipped, msPerStep, tokensPerSecond, phaseMs, 0, 0);
        }

        public String json() {
            StringBuilder sb = new StringBuilder("{\"type\":\"step\",\"step\":").append(step).append(",\"loss\":").append(num(loss))
                    .append(",\"lr\":").append(num(lr)).append(",\"lossScale\":").append(num(lossScale)).append(",\"gradNorm\":").append(num(gradNorm))
                    .append(",\"updated\":").append(updated).append(",\"skipped\":").append(skipped)
                    .append(",\"ms\":").append(String.format(java.util.Locale.ROOT, "%.2f", msPerStep))
                    .append(",\"tokensPerSecond\":").append(String.format(java.util.Locale.ROOT, "%.1f", tokensPerSecond));
            phaseMs.forEach((k, v) -> sb.append(",\"t_").append(k).append("\":").append(String.format(java.util.Locale.ROOT, "%.3f", v)));
            sb.append(",\"stagedActivationBytes\":").append(stagedActivationBytes).append(",\"stagedWeightBytes\":").append(stagedWeightBytes);
            return sb.append('}').toString();
        }

        private static String num(float f) { return Float.isFinite(f) ? Float.toString(f) : "null"; }
    }

    /** Receives progress; implemented by the CLI progress bar and the notebook's live plot. */
    public interface Listener {
        void onStep(StepMetrics m);

        default void onMessage(String line) {}
    }

    private final TrainOptions o;
    private final ModelConfig config;
    private final Parameters params;
    private final float[] grads, m, v;
    private final TokenShard data;
    private final Tokenizer tokenizer;
    private final TrainingStep step;
    private final AdamW adamw;
    private final LrSchedule schedule;
    private final LossScaler scaler;
    private final Rng rng;
    private final String runId;
    private final List<StepMetrics> history = new ArrayList<>();
    private long nextStep;
    private int adamStep;
    private boolean staleWeights;

    public Trainer(TrainOptions options, Backend backend, Listener listener) {
        this.o = options;
        Listener log = listener != null ? listener : m -> {};
        // model: from a checkpoint file (its config comes with it) or a preset/config file, initialised from the seed
        if (o.init() != null) {
            this.params = loadInit(o.init());
            this.config = params.config();
        } else {
            ModelConfig c = resolveConfig(o.model());
            // the embedded corpus has a small vocabulary: rows of a larger one would never be trained (like maderix's
            // vocabulary compaction), so the model uses the corpus tokenizer's size
            int corpusVocab = o.data() == null ? EmbeddedCorpus.tokenizer().vocabSize() : c.vocabSize();
            if (corpusVocab < c.vocabSize()) {
                log.onMessage("[train] embedded corpus: vocabulary " + corpusVocab + " instead of " + c.name() + "'s " + c.vocabSize());
                c = c.withVocabSize(corpusVocab);
            }
            this.config = c;
            this.params = Parameters.init(config, o.seed());
        }
        ParameterLayout layout = params.layout();
        this.grads = new float[layout.size()];
        this.m = new float[layout.size()];
        this.v = new float[layout.size()];
        // data: a token shard, or the embedded corpus with its fitted tokenizer
        if (o.data() != null) {
            this.data = TokenShard.open(o.data(), config.vocabSize(), config.seqLen());
            Path tok = o.data().resolveSibling("tokenizer.bin");
            this.tokenizer = Files.exists(tok) ? Tokenizer.read(tok) : null;
        } else {
            this.tokenizer = EmbeddedCorpus.tokenizer();
            if (tokenizer.vocabSize() > config.vocabSize())
                throw new IllegalArgumentException("[train] the embedded corpus needs a vocabulary of " + tokenizer.vocabSize() + " but model " + config.name() + " has " + config.vocabSize());
            this.data = TokenShard.of(EmbeddedCorpus.train(o.seed(), 400_000), config.vocabSize(), config.seqLen());
        }
        this.rng = new Rng(o.seed() ^ 0x9E3779B97F4A7C15L);
        this.adamw = new AdamW(0.9f, 0.95f, 1e-8f, o.weightDecay());
        this.schedule = new LrSchedule(o.lr(), 0.1f * o.lr(), o.warmup(), o.steps());
        float initialScale = o.lossScale() > 0 ? o.lossScale() : 256f * config.nLayers();
        this.scaler = new LossScaler(LossScaler.Mode.valueOf(o.lossScaling().toUpperCase(java.util.Locale.ROOT)), initialScale);
        this.runId = Integer.toHexString((o.describe() + config.toFileText()).hashCode());
        if (o.resume()) resume(log);
        this.step = new TrainingStep(config, backend, o.storage().equals("fp32") ? DType.FP32 : DType.FP16, o.weights().equals("static"), o.attention().equals("threestage"));
        step.stageWeights(params.data());
        writeRunRecord(backend);
    }

    private static ModelConfig resolveConfig(String model) {
        Path p = Path.of(model);
        if (model.contains("/") || model.endsWith(".txt") || model.endsWith(".conf") || Files.isRegularFile(p)) return ModelConfig.load(p);
        return ModelConfig.parse(model);
    }

    private static Parameters loadInit(Path file) {
        String name = file.getFileName().toString();
        if (name.endsWith(".safetensors")) return Safetensors.read(file);
        return Llama2Bin.read(file);
    }

    private Path checkpointDir() { return o.runDir().resolve("checkpoints"); }

    private void resume(Listener log) {
        Checkpoint.Contents c = Checkpoint.loadNewest(checkpointDir(), log::onMessage);
        if (c == null) {
            log.onMessage("[train] no checkpoint in " + checkpointDir() + ": starting from step 0");
            return;
        }
        if (!c.state().config().equals(config))
            throw new CheckpointFormatException("checkpoint in " + checkpointDir() + " is for model " + c.state().config().name()
                    + " (dim " + c.state().config().dim() + ", " + c.state().config().nLayers() + " layers), not " + config.name() + "; use another runDir");
        if (c.params().length != params.data().length) throw new CheckpointFormatException("checkpoint has " + c.params().length + " parameters, the model " + params.data().length);
        System.arraycopy(c.params(), 0, params.data(), 0, c.params().length);
        System.arraycopy(c.m(), 0, m, 0, m.length);
        System.arraycopy(c.v(), 0, v, 0, v.length);
        nextStep = c.state().step();
        adamStep = c.state().adamStep();
        rng.restore(c.state().rngState());
        scaler.restore(c.state().lossScale(), c.state().cleanSteps());
        history.addAll(readMetrics(nextStep));
        log.onMessage("[train] resumed from step " + nextStep + " (" + Checkpoint.pathFor(checkpointDir(), nextStep).getFileName() + ")");
    }

    public ModelConfig config() { return config; }

    public Parameters parameters() { return params; }

    public Tokenizer tokenizer() { return tokenizer; }

    public List<StepMetrics> history() { return history; }

    public long nextStep() { return nextStep; }

    /** Runs until {@code steps} micro-steps are done (or {@code stopAfter} more, when positive). */
    public List<StepMetrics> run(Listener listener, long stopAfter) {
        Listener l = listener != null ? listener : x -> {};
        int s = config.seqLen();
        int[] tokens = new int[s], targets = new int[s], window = new int[s + 1];
        long end = stopAfter > 0 ? Math.min(o.steps(), nextStep + stopAfter) : o.steps();
        while (nextStep < end) {
            long t0 = System.nanoTime();
            // sample a window: inputs = tokens[pos..pos+S), targets shifted by one
            long pos = rng.nextInt((int) Math.min(Integer.MAX_VALUE, data.size() - s - 1));
            data.read(pos, window, 0, s + 1);
            System.arraycopy(window, 0, tokens, 0, s);
            System.arraycopy(window, 1, targets, 0, s);
            float loss = step.forwardBackward(params.data(), grads, tokens, targets, scaler.scale());
            boolean update = (nextStep + 1) % o.accum() == 0 || nextStep + 1 == o.steps();
            float lr = schedule.at(nextStep), norm = Float.NaN, usedScale = scaler.scale();
            boolean skipped = false;
            if (update) {
                int micro = (int) (nextStep % o.accum()) + 1;
                // one read pass (norm and finiteness), then one pass that unscales, clips, updates and zeroes
                float k = 1f / (micro * scaler.scale());
                double ss = AdamW.sumOfSquares(grads, k);
                if (scaler.afterBackward(Double.isFinite(ss))) {
                    norm = (float) Math.sqrt(ss);
                    adamw.step(params.layout().views(), params.data(), grads, m, v, ++adamStep, lr, k * AdamW.clipFactor(norm, o.clip()), true);
                    staleWeights = true;
                } else {
                    skipped = true;
                    l.onMessage("[train] step " + nextStep + ": gradient overflow at loss scale " + usedScale + (scaler.mode() == LossScaler.Mode.DYNAMIC ? ", scale now " + scaler.scale() + "; update skipped" : "; update skipped"));
                    Arrays.fill(grads, 0f);
                }
            }
            nextStep++;
            double ms = (System.nanoTime() - t0) / 1e6;
            Map<String, Double> phases = new LinkedHashMap<>();
            step.phaseNanos().forEach((p, ns) -> phases.put(p.name().toLowerCase(java.util.Locale.ROOT), ns / 1e6));
            StepMetrics sm = new StepMetrics(nextStep - 1, o.steps(), loss, lr, usedScale, norm, update, skipped, ms, s / (ms / 1000), phases,
                    step.stagedActivationBytes(), step.stagedWeightBytes());
            history.add(sm);
            appendMetrics(sm);
            l.onStep(sm);
            boolean atCheckpoint = update && o.checkpointEvery() > 0 && nextStep % o.checkpointEvery() == 0;
            if (atCheckpoint || (nextStep == o.steps())) saveCheckpoint(loss);
            // new weights into the kernels last: with static weights this recompiles, and a compile-budget exception
            // thrown here leaves a consistent state (update applied, step counted) for saveCheckpoint
            if (staleWeights && nextStep < o.steps()) {
                step.stageWeights(params.data());
                staleWeights = false;
            }
        }
        return history;
    }

    /** Writes a checkpoint of the state after the last completed micro-step (gradients are zero there). */
    public Path saveCheckpoint(float lastLoss) {
        TrainState st = new TrainState(config, runId, nextStep, adamStep, rng.state(), scaler.scale(), scaler.cleanSteps(), lastLoss);
        return Checkpoint.save(checkpointDir(), new Checkpoint.Contents(st, params.data(), m, v), o.keep());
    }

    /** The AdamW moments (for tests and checkpoints). */
    public float[] firstMoments() { return m; }

    public float[] secondMoments() { return v; }

    private Path metricsFile() { return o.runDir().resolve("metrics.jsonl"); }

    private void appendMetrics(StepMetrics sm) {
        try {
            Files.writeString(metricsFile(), sm.json() + "\n", java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("[train] cannot write " + metricsFile() + ": " + e.getMessage(), e);
        }
    }

    /** Keeps the metrics lines of steps before {@code upTo} (a resumed run rewrites the rest); returns their losses as metrics. */
    private List<StepMetrics> readMetrics(long upTo) {
        List<StepMetrics> kept = new ArrayList<>();
        Path f = metricsFile();
        if (!Files.exists(f)) return kept;
        try {
            List<String> keep = new ArrayList<>();
            for (String line : Files.readAllLines(f)) {
                long st = jsonLong(line, "\"step\":");
                if (st < 0 || st >= upTo) continue;
                keep.add(line);
                kept.add(new StepMetrics(st, o.steps(), jsonFloat(line, "\"loss\":"), jsonFloat(line, "\"lr\":"), jsonFloat(line, "\"lossScale\":"),
                        Float.NaN, false, false, 0, 0, Map.of()));
            }
            Files.write(f, keep);
        } catch (IOException e) {
            throw new UncheckedIOException("[train] cannot read " + f, e);
        }
        return kept;
    }

    private static long jsonLong(String line, String key) {
        int i = line.indexOf(key);
        if (i < 0) return -1;
        int j = i + key.length(), k = j;
        while (k < line.length() && (Character.isDigit(line.charAt(k)) || line.charAt(k) == '-')) k++;
        return k > j ? Long.parseLong(line.substring(j, k)) : -1;
    }

    private static float jsonFloat(String line, String key) {
        int i = line.indexOf(key);
        if (i < 0) return Float.NaN;
        int j = i + key.length(), k = j;
        while (k < line.length() && ",}".indexOf(line.charAt(k)) < 0) k++;
        String s = line.substring(j, k);
        return s.equals("null") ? Float.NaN : Float.parseFloat(s);
    }

    private void writeRunRecord(Backend backend) {
        try {
            Files.createDirectories(o.runDir());
            String record = "# ane4j training run " + runId + "\n" + o.describe() + "\n[model]\n" + config.toFileText()
                    + "\n[environment]\nbackend = " + backend.name() + "\njava = " + System.getProperty("java.version")
                    + "\nos = " + System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch")
                    + "\nane4j = " + version() + "\n";
            Files.writeString(o.runDir().resolve("run.txt"), record);
        } catch (IOException e) {
            throw new UncheckedIOException("[train] cannot write to " + o.runDir() + ": " + e.getMessage(), e);
        }
    }

    static String version() {
        String v = Trainer.class.getPackage().getImplementationVersion();
        return v != null ? v : "0.1.0-SNAPSHOT";
    }

    @Override public void close() { step.close(); }
}
