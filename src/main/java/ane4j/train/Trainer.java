package ane4j.train;

import ane4j.run.TrainOptions;
import ane4j.run.RunJson;
import ane4j.run.RunFolder;
import ane4j.run.RunRecord;
import ane4j.run.MetricsLog;
import ane4j.run.StepHistory;
import ane4j.run.SetupProgress;
import ane4j.run.StepMetrics;
import ane4j.run.StopFlag;
import ane4j.backend.Backend;
import ane4j.model.EmbeddedCorpus;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.Rng;
import ane4j.model.ModelFiles;
import ane4j.model.TokenData;
import ane4j.model.Tokenizer;
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
 *
 * <p>What trains is a preset transformer or, with {@code graph} set, a user's MIL graph (issue 31): the one loop below
 * drives either through a {@link RunStep} ({@link PresetRunStep}, {@link GraphRunStep}), so a graph run has the same
 * optimizer, loss scaling, validation, checkpoints, run folder and records as a preset run, in process or in a worker.
 */
public final class Trainer implements AutoCloseable {
    /** Receives progress; implemented by the CLI progress bar and the notebook's live plot. */
    public interface Listener {
        void onStep(StepMetrics m);

        default void onMessage(String line) {}

        /** What the run does before its first step (starting its worker, compiling kernel k of n): for progress lines. */
        default void onSetup(SetupProgress p) {}
    }

    private final TrainOptions o;
    private final ModelConfig config;                // null in a graph run
    private final Parameters params;                 // null in a graph run
    private final GraphData graph;                   // null in a preset run
    private final float[] weights;                   // the flat weights the steps read: the model's, or the graph's parameters
    private final List<ane4j.model.ParameterView> views;   // of the trained floats, for AdamW
    private final String modelText;                  // the model's config, or the graph's layout, as key = value lines
    private final float[] grads, m, v;               // of the trained parameters: the model's, or with LoRA the adapters'
    private final LoraAdapters lora;                 // null: every weight trains
    private final TokenData data;                      // null in a graph run
    private final boolean validates;                   // held-out data is there and evalEvery > 0
    private final Validation.HeldOut heldOut;          // a preset run's held-out tokens, or null
    private final TokenData valShard;                  // the held-out shard when it is not data (closed with the trainer)
    private final Tokenizer tokenizer;
    private final RunStep step;
    private final AdamW adamw;
    private final AdamW.Schedule schedule;
    private final LossScaler scaler;
    private final Divergence divergence = new Divergence();
    private float lostLoss;                            // the non-finite loss of a micro-step since the last update, else 0
    private final Rng rng;
    private final String runId;
    private final StepHistory history = new StepHistory();   // bounded: every step is in metrics.jsonl
    private final RunFolder folder;   // null in the worker JVM: the supervisor in the user's JVM holds the lock
    private RunFolder.Identity identity;   // the run folder and run.lock this run started with (checked before each write)
    private final MetricsLog metrics;
    private volatile long nextStep;   // read by status requests from other threads
    private int adamStep;
    private boolean staleWeights;
    private volatile StopFlag stop = new StopFlag();   // the run's: shared with the layers above ({@link #stopOn})
    private Path lastCheckpoint;
    private long lastCheckpointStep = -1;
    private final Listener log;
    private static final long LARGE_CHECKPOINT = 1L << 30;   // checkpoints from here up say how long they took

    /**
     * Prepares what a run with the default settings reads first, the embedded corpus's tokenizer and the training stream
     * of the default seed (and the checkout's commit the run record names, the BLAS library), so that a worker started ahead of its first run (the notebook's) has them ready; the run that
     * asks for them meanwhile waits for this instead of drawing them again.
     */
    public static void warmUp() {
        EmbeddedCorpus.train(TrainOptions.of(Map.of()).seed(), TrainingSetup.EMBEDDED_TRAIN_TOKENS);
        RunJson.git();   // and the checkout's commit for the run record
        ane4j.blas.Blas.get();   // and the CPU's BLAS, loaded and chosen
    }

    /** A run that locks its run folder for this process (a second run on it is refused). */
    public Trainer(TrainOptions options, Backend backend, Listener listener) { this(options, backend, listener, true, Map.of()); }

    /**
     * @param lockRunDir false in the worker JVM, whose supervisor (in the user's JVM) holds the run folder's lock
     * @param placement  where and how the run layer runs this (compileBudget, inProcess, heap → value as text), for the
     *                   run record only: a rerun from run.json gets them back
     */
    public Trainer(TrainOptions options, Backend backend, Listener listener, boolean lockRunDir, Map<String, String> placement) {
        this(options, TrainingSetup.resolve(requireRunDir(options), listener != null ? listener::onMessage : m -> {}), backend, listener, lockRunDir, placement);
    }

    /** A run of {@code setup} (its model and data, resolved from the same options: {@link TrainingSetup#resolve}). */
    public Trainer(TrainOptions options, TrainingSetup setup, Backend backend, Listener listener, boolean lockRunDir, Map<String, String> placement) {
        this.o = requireRunDir(options);
        Listener log = listener != null ? listener : m -> {};
        this.log = log;
        this.config = setup.config();
        this.params = setup.params();
        this.graph = setup.graph();
        this.weights = graph != null ? graph.init() : params.data();
        this.modelText = graph != null ? graph.layout().toText() : config.toFileText();
        this.tokenizer = setup.tokenizer();
        this.data = setup.data();
        this.validates = graph != null ? graph.heldOut() != null : setup.heldOut() != null;
        this.valShard = setup.valShard();
        this.heldOut = setup.heldOut();
        // LoRA: the base is frozen, so gradients and AdamW moments exist for the adapters only
        this.lora = o.lora() > 0 ? LoraAdapters.init(config, o.lora(), o.loraAlpha(), List.of(o.loraTargets().split(",")), o.seed(), o.loraDropout()) : null;
        this.views = lora != null ? lora.views() : graph != null ? graph.layout().views() : params.layout().views();
        int trained = lora != null ? lora.size() : weights.length;
        this.grads = new float[trained];
        this.m = new float[trained];
        this.v = new float[trained];
        this.rng = new Rng(o.seed() ^ 0x9E3779B97F4A7C15L);
        this.adamw = new AdamW(0.9f, 0.95f, 1e-8f, o.weightDecay());
        this.schedule = new AdamW.Schedule(o.lr(), 0.1f * o.lr(), o.warmup(), o.steps());
        float initialScale = o.lossScale() > 0 ? o.lossScale() : LossScaler.DEFAULT_SCALE;
        // capped below the chip's fp16 cliffs (LossScaler.capFor); off the ANE, or before the chip is known, fp16's 65536
        this.scaler = new LossScaler(LossScaler.Mode.valueOf(o.lossScaling().toUpperCase(java.util.Locale.ROOT)), initialScale, LossScaler.capFor(backend.describeChip().family()));
        this.runId = Integer.toHexString((o.describe() + modelText).hashCode());
        // the run folder: nothing in it is touched before this process holds its lock
        this.folder = lockRunDir ? RunFolder.lock(o.runDir()) : null;
        this.metrics = new MetricsLog(o.runDir().resolve("metrics.jsonl"));
        try {
            RunRecord record = RunRecord.read(o.runDir());
            String started = startOrResume(log, record);
            Backend used = backend;
            RunStep built;
            try {
                built = newStep(backend, setup);
            } catch (ane4j.backend.BackendException e) {
                // automatic on a Mac: the kernels compile before step 1; if one fails the run does not bet on the unproven
                // path but says so in one line and trains on the reference backend (an explicit --backend ane fails instead)
                if (!automaticBackend() || !"ane".equals(backend.name()) || e instanceof ane4j.backend.CompileBudgetExceededException) throw e;
                log.onMessage("[train] the ANE backend could not set up the training kernels (" + firstLine(e.getMessage())
                        + "); training on the reference backend instead. Run `ane4j doctor` and paste its report into an issue; --backend ane fails instead");
                used = ane4j.backend.Backends.reference();
                built = newStep(used, setup);
            }
            this.step = built;
            this.backendName = used.name();
            step.stageWeights(weights);
            record.write(o, modelText, runId, used.name(), used.describeChip().text(), nextStep > 0, started, inputs(), placement);
            this.identity = RunFolder.Identity.of(o.runDir());
        } catch (RuntimeException | Error e) {
            if (folder != null) folder.close();
            throw e;
        }
    }

    private String backendName;

    /** Updates skipped for a non-finite gradient in this process (also the "skipped" flag of each step's metrics). */
    public long skippedUpdates() { return scaler.skippedUpdates(); }

    private RunStep newStep(Backend b, TrainingSetup setup) {
        if (graph != null) return new GraphRunStep(graph, b);
        return new PresetRunStep(new TrainingStep(config, b, TrainingStep.Options.of(o, lora)), setup);
    }

    /** No backend was asked for: not in the options, {@code -Dane4j.backend} or {@code ANE4J_BACKEND}. */
    /** Whether the ANE was not asked for by name (the option, else -Dane4j.backend, else ANE4J_BACKEND): then a failure may fall back. */
    private boolean automaticBackend() {
        String p = System.getProperty(ane4j.backend.Backends.PROPERTY), env = System.getenv(ane4j.backend.Backends.ENV);
        String choice = o.backend() != null && !o.backend().isBlank() ? o.backend() : p != null && !p.isBlank() ? p : env;
        return choice == null || !choice.strip().equalsIgnoreCase("ane");
    }

    private static String firstLine(String s) {
        if (s == null) return "no message";
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    /** The backend the steps run on: the one given, or the reference backend after an automatic fallback. */
    public String backendName() { return backendName; }

    /** The run's input files for run.json; the embedded corpus as its token streams. */
    private List<RunJson.Input> inputs() {
        if (graph != null) return graph.inputs();
        List<RunJson.Input> in = new ArrayList<>();
        if (o.init() != null) in.add(RunJson.Input.file("init", o.init()));
        if (o.data() != null) in.add(RunJson.Input.file("data", o.data()));
        else in.add(RunJson.Input.memory("data", "embedded corpus, training stories of seed " + o.seed() + ", " + data.size() + " tokens (uint16)", tokenBytes(data)));
        if (o.valData() != null) in.add(RunJson.Input.file("valData", o.valData()));
        else if (o.data() == null && valShard != null) in.add(RunJson.Input.memory("valData", heldOut == null ? "embedded corpus validation stories" : heldOut.description() + ", " + valShard.size() + " tokens (uint16)", tokenBytes(valShard)));
        Path tok = o.data() == null ? null : ModelFiles.findTokenizer(o.tokenizer(), o.data(), o.init());
        if (tok != null) in.add(RunJson.Input.file("tokenizer", tok));
        return in;
    }

    private static byte[] tokenBytes(TokenData tokens) {
        int[] ids = new int[(int) tokens.size()];
        tokens.read(0, ids, 0, ids.length);
        byte[] b = new byte[2 * ids.length];
        for (int i = 0; i < ids.length; i++) {
            b[2 * i] = (byte) ids[i];
            b[2 * i + 1] = (byte) (ids[i] >>> 8);
        }
        return b;
    }

    private static TrainOptions requireRunDir(TrainOptions o) {
        if (o.runDir() == null) throw new IllegalArgumentException("[train] runDir is not set (the run layer, ane4j.session, chooses a new runs/<model>-<time>)");
        return o;
    }

    /** Targets whose mask is 0 become −1 (not counted in the loss), as mlx_lm's mask_prompt leaves only the completion. */
    static void maskTargets(int[] targets, byte[] mask) {
        for (int i = 0; i < targets.length; i++) if (mask[i] == 0) targets[i] = -1;
    }

    private Path checkpointDir() { return o.runDir().resolve("checkpoints"); }

    /** Where a LoRA run keeps its adapters in the PEFT layout: {@code runDir/adapter}. */
    public static Path adapterDir(TrainOptions o) { return o.runDir().resolve("adapter"); }

    /**
     * Makes the run folder ready: removes partial files of a dead run, sets the old run aside when asked to restart from
     * scratch, resumes from the newest readable checkpoint (refusing when there are checkpoints but none is readable,
     * or the settings differ from the record without --override), and truncates metrics.jsonl to the step it starts
     * at. Returns the run record's history line for this start.
     */
    private String startOrResume(Listener log, RunRecord record) {
        RunFolder.removeTempFiles(o.runDir(), log::onMessage);
        String how = "";
        if (o.restartFromScratch()) {
            Path aside = RunFolder.setAside(o.runDir());
            if (aside != null) {
                log.onMessage("[run] --restart-from-scratch: the earlier checkpoints and metrics are in " + aside + "; starting at step 0");
                how = " from scratch (earlier checkpoints and metrics in " + aside.getFileName() + ")";
            }
        } else if (!o.resume()) {
            Checkpoint.refuseUnresumed(o);
        } else {
            resume(log, record);
        }
        metrics.truncate(nextStep, o.steps(), log::onMessage).forEach(history::add);
        return nextStep == 0 ? "started at step 0" + how : "resumed at step " + nextStep;
    }

    private void resume(Listener log, RunRecord record) {
        // read straight into this run's arrays: a second copy of weights and moments would double a large model's memory
        long t0 = System.nanoTime();
        Checkpoint.Found found = Checkpoint.findNewest(checkpointDir(), new Checkpoint.Contents(null, weights, m, v, lora == null ? null : lora.data()));
        if (found.contents() == null && !found.unreadable().isEmpty()) {
            StringBuilder why = new StringBuilder();
            found.unreadable().forEach((f, reason) -> why.append(why.isEmpty() ? "" : "; ").append(reason));
            throw new CheckpointFormatException("none of the " + found.unreadable().size() + " checkpoints in " + checkpointDir() + " can be read (" + why
                    + "); they are left as they are: resume with the ane4j that wrote them, or pass --restart-from-scratch to set them aside and start at step 0");
        }
        for (var bad : found.unreadable().entrySet())
            log.onMessage("[checkpoint] skipping " + bad.getValue() + "; kept as " + RunFolder.keepUnreadable(bad.getKey()).getFileName() + ", resuming from the previous one");
        Checkpoint.Contents c = found.contents();
        if (c == null) {
            log.onMessage("[train] no checkpoint in " + checkpointDir() + ": starting from step 0");
            return;
        }
        if (graph != null || c.state().graph() != null) {
            // a graph run resumes a checkpoint of the same parameters (names, shapes, order) and loss
            GraphLayout had = c.state().graph(), now = graph == null ? null : graph.layout();
            if (had == null || now == null || !had.params().equals(now.params()) || !had.loss().equals(now.loss()))
                throw new CheckpointFormatException(found.file() + " is of " + (had == null ? "model " + describe(c.state().config()) : "a graph run training " + had.toText().replace('\n', ';'))
                        + ", this run trains " + (now == null ? "model " + describe(config) : now.toText().replace('\n', ';')) + "; resume with the checkpoint's graph and parameters, or use another --run-dir");
        } else if (!c.state().config().equals(config))
            throw new CheckpointFormatException(found.file() + " is for model " + describe(c.state().config()) + ", this run's model is " + describe(config)
                    + " (they differ in " + String.join(", ", differences(c.state().config(), config)) + "); resume with the checkpoint's model, or use another --run-dir");
        if (c.params().length != weights.length) throw new CheckpointFormatException(found.file() + " has " + c.params().length + " parameters, the model " + weights.length);
        int have = c.lora() == null ? 0 : c.lora().length, want = lora == null ? 0 : lora.size();
        if (have != want)
            throw new CheckpointFormatException(found.file() + (have == 0 ? " is of a full fine-tuning run, this run trains LoRA adapters (" + want + " floats)"
                    : " holds LoRA adapters of " + have + " floats, this run " + (want == 0 ? "has none" : "needs " + want)) + "; resume with the run's lora, loraTargets settings, or use another --run-dir");
        record.checkSettings(o, log::onMessage);
        if (c.params() != weights) System.arraycopy(c.params(), 0, weights, 0, c.params().length);
        if (c.m() != m) System.arraycopy(c.m(), 0, m, 0, m.length);
        if (c.v() != v) System.arraycopy(c.v(), 0, v, 0, v.length);
        if (lora != null && c.lora() != lora.data()) System.arraycopy(c.lora(), 0, lora.data(), 0, lora.size());
        nextStep = c.state().step();
        adamStep = c.state().adamStep();
        rng.restore(c.state().rngState());
        scaler.restore(c.state().lossScale(), c.state().cleanSteps());
        lastCheckpoint = found.file();
        lastCheckpointStep = nextStep;
        logIfLarge(found.file(), "read", t0);
        log.onMessage("[train] resumed from step " + nextStep + " (" + found.file().getFileName() + ")");
    }

    private void logIfLarge(Path checkpoint, String how, long startNanos) {
        try {
            long bytes = Files.size(checkpoint);
            if (bytes >= LARGE_CHECKPOINT)
                log.onMessage(String.format(java.util.Locale.ROOT, "[checkpoint] %s: %.2f GB %s in %.1f s", checkpoint.getFileName(), bytes / 1e9, how,
                        (System.nanoTime() - startNanos) / 1e9));
        } catch (java.io.IOException e) {
            // the size is only for the message
        }
    }

    private static String describe(ModelConfig c) {
        return c.name() + " (dim " + c.dim() + ", hidden " + c.hiddenDim() + ", " + c.nLayers() + " layers, " + c.nHeads() + " heads, vocabulary " + c.vocabSize() + ", seq " + c.seqLen() + ")";
    }

    /** "seqLen 64 → 128" for each config line that differs. */
    private static List<String> differences(ModelConfig was, ModelConfig now) {
        List<String> a = was.toFileText().lines().toList(), b = now.toFileText().lines().toList(), out = new ArrayList<>();
        for (int i = 0; i < a.size(); i++)
            if (!a.get(i).equals(b.get(i))) out.add(a.get(i).replace(" = ", " ") + " → " + b.get(i).substring(b.get(i).indexOf(" = ") + 3));
        return out;
    }

    /** The preset model's config; null in a graph run. */
    public ModelConfig config() { return config; }

    /** The preset model's weights; null in a graph run ({@link #weights()}, {@link #graphLayout()}). */
    public Parameters parameters() { return params; }

    /** The flat trained weights: the model's, or a graph run's parameters laid out by {@link #graphLayout()}. */
    public float[] weights() { return weights; }

    /** A graph run's parameter layout, or null in a preset run. */
    public GraphLayout graphLayout() { return graph == null ? null : graph.layout(); }

    /** The adapters of a LoRA run (trained in place), or null. */
    public LoraAdapters adapters() { return lora; }

    public Tokenizer tokenizer() { return tokenizer; }

    /** The steps of this run so far (a resumed run's earlier ones included), downsampled beyond {@link StepHistory#RECENT}. */
    public List<StepMetrics> history() { return history.list(); }

    /** How many steps {@link #history()} has seen. */
    public long stepCount() { return history.count(); }

    /** The last step so far, or null. */
    public StepMetrics lastStep() { return history.last(); }

    public long nextStep() { return nextStep; }

    /**
     * Asks {@link #run} to stop at the next step boundary where the gradients are zero (after an optimizer update; with
     * accum 1 the next step), write a checkpoint there and return. Safe from any thread (a signal handler).
     */
    public void requestStop() { stop.request(); }

    public boolean stopRequested() { return stop.requested(); }

    /** Serves the run's stop flag (the one the run handle and every layer above hold) instead of one of its own. */
    public Trainer stopOn(StopFlag flag) {
        this.stop = flag;
        return this;
    }

    /** True between optimizer updates' micro-steps: a checkpoint here holds all of the state (the gradients are zero). */
    public boolean atUpdateBoundary() { return nextStep % o.accum() == 0; }

    /** The newest checkpoint this run wrote or resumed from, or null. */
    public Path lastCheckpoint() { return lastCheckpoint; }

    /**
     * Runs until the run's {@code steps} micro-steps are done, or until a stop ({@link #requestStop}, the shared
     * {@link StopFlag}) is served at an update boundary with a checkpoint; the flag is cleared then, so that a later
     * call continues. Returns the history.
     */
    public List<StepMetrics> run(Listener listener) { return run(listener, 0); }

    /** {@link #run(Listener)}, but ending after {@code stopAfter} more micro-steps when positive (tests, benchmarks). */
    public List<StepMetrics> run(Listener listener, long stopAfter) {
        Listener l = listener != null ? listener : x -> {};
        int s = step.tokensPerStep();
        long end = stopAfter > 0 ? Math.min(o.steps(), nextStep + stopAfter) : o.steps();
        while (nextStep < end) {
            StopFlag flag = stop;
            if (flag.requested() && atUpdateBoundary()) {
                checkpointNow();
                flag.clear();
                break;
            }
            long t0 = System.nanoTime();
            // the micro-step's batch, drawn from the run's RNG (a token window, or a batch of samples), forward and backward
            float loss = step.forwardBackward(weights, grads, rng, scaler.scale(), nextStep);
            divergence.loss(loss);
            if (!Float.isFinite(loss)) lostLoss = loss;
            boolean update = (nextStep + 1) % o.accum() == 0 || nextStep + 1 == o.steps();
            float lr = schedule.at(nextStep), norm = Float.NaN, usedScale = scaler.scale();
            boolean skipped = false;
            if (update && !Float.isFinite(lostLoss)) {
                // the fp32 loss itself: no loss scale causes or cures this, so the scale stays
                skipped = true;
                l.onMessage("[train] step " + nextStep + ": the loss is not finite (" + lostLoss + ", fp32, before loss scaling); update skipped");
                Arrays.fill(grads, 0f);
            } else if (update) {
                int micro = (int) (nextStep % o.accum()) + 1;
                // one read pass (norm and finiteness), then one pass that unscales, clips, updates and zeroes
                float k = 1f / (micro * scaler.scale());
                double ss = AdamW.sumOfSquares(grads, k);
                if (scaler.afterBackward(Double.isFinite(ss))) {
                    norm = (float) Math.sqrt(ss);
                    adamw.step(views, lora != null ? lora.data() : weights, grads, m, v, ++adamStep, lr, k * AdamW.clipFactor(norm, o.clip()), true);
                    staleWeights = true;
                    divergence.applied();
                } else {
                    // an fp16 overflow of the scaled gradients (inf/NaN; the ANE's cliffs give inf too): skip, back off
                    skipped = true;
                    divergence.overflow(usedScale);
                    l.onMessage("[train] step " + nextStep + ": gradient overflow at loss scale " + usedScale + (scaler.mode() == LossScaler.Mode.DYNAMIC ? ", scale now " + scaler.scale() + "; update skipped" : "; update skipped"));
                    Arrays.fill(grads, 0f);
                }
            }
            if (update) lostLoss = 0;
            nextStep++;
            double ms = (System.nanoTime() - t0) / 1e6;
            Map<String, Double> phases = step.phaseMillis();
            StepMetrics sm = new StepMetrics(nextStep - 1, o.steps(), loss, lr, usedScale, norm, update, skipped, ms, s / (ms / 1000), phases,
                    step.stagedActivationBytes(), step.stagedWeightBytes());
            String symptom = divergence.symptom(scaler.mode());
            if (symptom == null && validates && (nextStep % o.evalEvery() == 0 || nextStep == o.steps())) sm = validate(sm);
            history.add(sm);
            if (identity != null) identity.check();
            metrics.append(sm);
            l.onStep(sm);
            if (symptom != null) throw diverged(symptom);
            boolean atCheckpoint = update && o.checkpointEvery() > 0 && nextStep % o.checkpointEvery() == 0;
            if (atCheckpoint || (nextStep == o.steps())) saveCheckpoint(loss);
            // new weights into the kernels last: with static weights this recompiles, and a compile-budget exception
            // thrown here leaves a consistent state (update applied, step counted) for saveCheckpoint
            if (staleWeights && nextStep < o.steps()) {
                step.stageWeights(weights);
                staleWeights = false;
            }
        }
        return history.list();
    }

    /**
     * The validation loss of the weights after this step, on the forward kernels (dynamic weights: staging the new weights
     * now instead of before the next step is a copy, not a compile). Reads no random number and writes no gradient.
     */
    private StepMetrics validate(StepMetrics sm) {
        long t0 = System.nanoTime();
        if (staleWeights) {
            step.stageWeights(weights);
            staleWeights = false;
        }
        float loss = step.validationLoss(weights);
        return sm.withValidation(loss, (System.nanoTime() - t0) / 1e6);
    }

    /**
     * Writes a checkpoint of the state after the last completed micro-step (gradients are zero there). A diverged state
     * (weights not finite or beyond the fp16 range, or the last loss not finite) is never written: that throws the
     * diagnosis instead and the older checkpoints stay as they are.
     */
    public Path saveCheckpoint(float lastLoss) {
        float maxAbs = Divergence.maxAbs(lora != null ? lora.data() : weights);
        if (Divergence.weightsBad(maxAbs))
            throw diverged("weights beyond the fp16 range (" + (Float.isFinite(maxAbs) ? "|w| = " + Divergence.magnitude(maxAbs) : maxAbs) + ") at the checkpoint");
        if (divergence.lossStreak()) throw diverged("the loss (fp32) was not finite at the last step");
        TrainState st = new TrainState(config, runId, nextStep, adamStep, rng.state(), scaler.scale(), scaler.cleanSteps(), lastLoss, graph == null ? null : graph.layout());
        if (identity != null) identity.check();
        long t0 = System.nanoTime();
        lastCheckpoint = Checkpoint.save(checkpointDir(), new Checkpoint.Contents(st, weights, m, v, lora == null ? null : lora.data()), o.keep());
        // the adapters as Python users load them (PEFT layout), beside the checkpoint that holds them
        if (lora != null) PeftAdapter.write(adapterDir(o), lora, o.init() != null ? o.init().toString() : config.name());
        lastCheckpointStep = nextStep;
        logIfLarge(lastCheckpoint, "written", t0);
        return lastCheckpoint;
    }

    /** A checkpoint of the current step unless one was written (or resumed from) at it; returns it. */
    public Path checkpointNow() {
        if (lastCheckpointStep == nextStep) return lastCheckpoint;
        return saveCheckpoint(history.isEmpty() ? Float.NaN : history.last().loss());
    }

    /** The one-line diagnosis of a diverged run: no checkpoint of this state is written, the last good one is kept. */
    private TrainingDivergedException diverged(String symptom) {
        String kept = lastCheckpoint != null ? "the last good checkpoint " + lastCheckpoint + " is kept (nothing written after it)"
                : "no checkpoint was written (none was good)";
        return new TrainingDivergedException(Divergence.diagnosis(nextStep - 1, symptom, Divergence.maxAbs(lora != null ? lora.data() : weights), o, scaler.mode(), scaler.scale(), kept));
    }

    /** The AdamW moments (for tests and checkpoints). */
    public float[] firstMoments() { return m; }

    public float[] secondMoments() { return v; }

    /** Closes the kernels and releases the run folder. */
    @Override public void close() {
        if (closed) return;   // a second close (the session's and a try-with-resources) is a no-op: the data's mapping closes once
        closed = true;
        try {
            step.close();
        } finally {
            if (data != null) data.close();
            if (valShard != null) valShard.close();
            if (folder != null) folder.close();
        }
    }

    private boolean closed;
}
