package ane4j.train;

import ane4j.backend.AneException;
import ane4j.backend.Backend;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.blas.Blas;
import ane4j.blas.Layout;
import ane4j.blas.Transpose;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.ParameterView;
import ane4j.run.SetupProgress;
import ane4j.run.TrainOptions;
import ane4j.train.TrainingKernels.Name;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static ane4j.train.TrainingKernels.INPUT;
import static ane4j.train.TrainingKernels.Name.*;
import static ane4j.train.TrainingKernels.OUTPUT;
import static ane4j.train.TrainingStep.Phase.*;

/**
 * Forward and backward of one sequence, ANE-shaped (docs/ane-facts.md §5.3): the ten kernels run on the backend with weights
 * staged into their inputs; embedding, RMSNorm, classifier, cross-entropy, SwiGLU/RoPE/QK-norm backward and every dW
 * run on the CPU, the dW sgemms on a background thread overlapping the backend's work.
 * <pre>Legend: S = seqLen, D = dim, H = hiddenDim, V = vocab, Q = nHeads·headDim, KV = nKvHeads·headDim, L = nLayers.</pre>
 * Activations are channel-first (C, S) float arrays; matrices are row-major (out, in).
 *
 * <p>How weights reach the kernels is a {@link WeightStaging} (bound inputs on the ANE, staged on demand on the reference
 * backend, or baked into recompiled kernels with static weights); LoRA's adapters are a {@link LoraPath}; phase times a
 * {@link StepTimer}. {@link #stagedActivationBytes()} and {@link #stagedWeightBytes()} count what the last step wrote
 * into kernel inputs.
 */
public final class TrainingStep implements AutoCloseable {
    /** Wall time of the phases of the last step, in nanoseconds (maderix-style breakdown). */
    public enum Phase { FORWARD_BACKEND, BACKWARD_BACKEND, IO, CPU, DW_WAIT, CLASSIFIER }

    /**
     * How a step is built.
     *
     * @param io            the kernels' tensors: fp16 as the ANE, fp32 for exact comparisons on the reference backend
     * @param staticWeights bake weights into the weight-bearing kernels as BLOBFILE constants and recompile them (8 per
     *                      layer) at every {@link #stageWeights}: the maderix "static" pipeline, which spends compiles
     * @param threeStage    scores on the backend, causal mask and softmax on the CPU, P·V on the backend (docs/ane-facts.md §5.5)
     * @param lora          adapters to train instead of the model's weights, or null. With adapters {@code grads} of
     *                      {@link #forwardBackward} is laid out as {@link LoraAdapters#data()}: no gradient of a frozen weight is formed
     */
    public record Options(DType io, boolean staticWeights, boolean threeStage, LoraAdapters lora) {
        public Options {
            if (lora != null) TrainOptions.refuseDropoutWithStaticWeights(lora.dropout().p(), staticWeights);
        }

        /** Dynamic weights, fused attention, every weight trains. */
        public static Options of(DType io) { return new Options(io, false, false, null); }

        /** A run's: its storage, weights and attention settings, and its adapters (or null). */
        public static Options of(TrainOptions o, LoraAdapters lora) {
            return new Options(o.storage().equals("fp32") ? DType.FP32 : DType.FP16, o.weights().equals("static"), o.attention().equals("threestage"), lora);
        }

        public Options withStaticWeights(boolean b) { return new Options(io, b, threeStage, lora); }

        public Options withThreeStage(boolean b) { return new Options(io, staticWeights, b, lora); }

        public Options withLora(LoraAdapters a) { return new Options(io, staticWeights, threeStage, a); }
    }

    /** Vocabulary rows per classifier sgemm. */
    private static final int CLS_BLOCK = 4096;

    private final ModelConfig c;
    private final ParameterLayout layout;
    private final int s, d, h, q, kv, v, nl;
    private final boolean threeStage;
    private final Map<Name, Kernel> kernels = new EnumMap<>(Name.class);                 // compiled here (static weights: not the weighted ones)
    private final Map<Name, TrainingKernels.Spec> specs = new EnumMap<>(Name.class);
    private final Map<Name, TensorBuffer> outputs = new EnumMap<>(Name.class);
    private final WeightStaging staging;
    private final LoraPath lora;
    private final StepTimer timer = new StepTimer();
    private final int gradCount;                       // floats of grads: the model's, or with LoRA the adapters'
    private int compiles;
    private long activationBytes;                      // written into kernel inputs by the last step (LoRA's apart)

    // the weight-free kernels' inputs
    private final TensorBuffer bwd1In;                 // sdpaBwd1 (4·Q, S): q, k, v tiled to NH heads, da
    private final TensorBuffer bwd2In;                 // sdpaBwd2 (2·NH·S + 2·Q, S): probs, dP, q, k
    /** Whether sdpaBwd1's output and sdpaBwd2's input share the probs and dP channels (buffers of floats). */
    private final boolean probsShared;
    private TensorBuffer valuesIn;                     // attnValues (NH·S + Q, S): probs and V tiled, three-stage attention only

    private final float[] cosT, sinT;                  // (HD,S) RoPE tables
    private final ExecutorService dwThread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "ane4j-dw");
        t.setDaemon(true);
        return t;
    });
    private final List<Future<?>> pendingDw = new ArrayList<>();

    /** Saved forward activations of one layer; acts[L] holds the final norm's (x, xnorm, rrmsAtt). */
    private static final class Activations {
        float[] x;                                     // (D,S) the block's input: the residual stream
        float[] xnorm;                                 // (D,S) rmsnorm(x)·rmsAtt, the q, k, v projections' input
        float[] rrmsAtt;                               // (S) 1/rms(x) per position
        float[] qRaw;                                  // (Q,S) wq·xnorm before QK-norm (QK-norm models only)
        float[] kRaw;                                  // (KV,S) wk·xnorm before QK-norm (QK-norm models only)
        float[] qRope;                                 // (Q,S) queries after QK-norm and RoPE
        float[] kRope;                                 // (KV,S) keys after QK-norm and RoPE
        float[] vh;                                    // (KV,S) values wv·xnorm
        float[] attn;                                  // (Q,S) softmax(q·kᵀ/√HD + mask)·v, wo's input
        float[] x2;                                    // (D,S) x + α·wo·attn: the residual stream after attention
        float[] x2norm;                                // (D,S) rmsnorm(x2)·rmsFfn, w1's and w3's input
        float[] rrmsFfn;                               // (S) 1/rms(x2) per position
        float[] h1;                                    // (H,S) w1·x2norm
        float[] h3;                                    // (H,S) w3·x2norm
        float[] gate;                                  // (H,S) silu(h1)⊙h3, w2's input
    }

    /**
     * Backward scratch of one layer. Two sets serve all layers (layer l uses set l mod 2): the weight-gradient thread
     * may still read layer l+1's set while layer l runs, and layer l−1 waits for layer l+1's last dW before reusing it.
     */
    private static final class Gradients {
        final float[] dffn;                            // (D,S) α·dy: the FFN branch's output gradient
        final float[] dgate;                           // (H,S) w2ᵀ·dffn
        final float[] dh1;                             // (H,S) through SwiGLU to h1
        final float[] dh3;                             // (H,S) through SwiGLU to h3
        final float[] dx2;                             // (D,S) the residual stream's after attention
        final float[] dO;                              // (D,S) α·dx2: the attention branch's output gradient
        final float[] dq;                              // (Q,S) the q projection's output (after RoPE and QK-norm backward)
        final float[] dk;                              // (KV,S) the k projection's output
        final float[] dv;                              // (KV,S) the v projection's output
        Future<?> lastReader;                          // the last dW task that reads this set

        Gradients(int d, int h, int q, int kv, int s) {
            dffn = new float[d * s];
            dgate = new float[h * s];
            dh1 = new float[h * s];
            dh3 = new float[h * s];
            dx2 = new float[d * s];
            dO = new float[d * s];
            dq = new float[q * s];
            dk = new float[kv * s];
            dv = new float[kv * s];
        }
    }

    private final Activations[] acts;                  // [L+1]
    private final Gradients[] gradSets;                // [2]
    // scratch reused by every step (no per-step garbage)
    private float[] logits;                            // (V,S) logits, overwritten in place by their gradient dlogits
    private final float[] dxf;                         // (D,S) the classifier's input gradient, before the final norm
    private final float[] dy;                          // (D,S) the residual stream's gradient at the current layer's output
    private final float[] dtmp;                        // (D,S) a norm's output gradient: dx2norm, then dxnorm
    private final float[] dxq;                         // (D,S) wqᵀ·dq
    private final float[] da;                          // (Q,S) woᵀ·dO: the attention output's gradient
    private final float[] kTiled, vTiled;              // (Q,S) K and V tiled to the query heads (grouped-query attention only)
    private final float[] dkFull, dvFull;              // (Q,S) their gradients before the group sums (GQA only)
    private final float[] dqRaw, dkRaw;                // (Q,S), (KV,S) the raw projections' gradients (QK-norm only)

    public TrainingStep(ModelConfig config, Backend backend, Options o) {
        LoraAdapters adapters = o.lora();
        if (adapters != null && !adapters.config().equals(config)) throw new IllegalArgumentException("[lora] the adapters are for model " + adapters.config().name() + ", not " + config.name());
        boolean loraInputs = adapters != null && !o.staticWeights();
        this.threeStage = o.threeStage();
        this.c = config;
        this.layout = new ParameterLayout(config);
        this.gradCount = adapters == null ? layout.size() : adapters.size();
        this.s = config.seqLen();
        this.d = config.dim();
        this.h = config.hiddenDim();
        this.q = config.qDim();
        this.kv = config.kvDim();
        this.v = config.vocabSize();
        this.nl = config.nLayers();

        // the kernels: compiled once (static weights: the weight-bearing ones at every stageWeights, by the staging)
        TrainingKernels.LoraInputs loraIn = loraInputs ? new TrainingKernels.LoraInputs(adapters.rank(), adapters.targets()) : null;
        TrainingKernels built = new TrainingKernels(config, o.io(), null, threeStage, loraIn);
        List<TrainingKernels.Spec> all = built.all();
        this.lora = new LoraPath(config, adapters, loraInputs, built, timer);
        int toCompile = o.staticWeights() ? all.size() - WeightStaging.WEIGHTED.size() : all.size(), compiling = 0;
        for (TrainingKernels.Spec k : all) {
            Name name = Name.of(k.name());
            specs.put(name, k);
            if (o.staticWeights() && name.weighted()) {
                outputs.put(name, TensorBuffer.allocate(k.program().main().outputs().get(0).type()));
                continue;
            }
            SetupProgress.reportCompiling(++compiling, toCompile, k.name());
            Kernel compiled;
            try {
                compiled = backend.compile(k.program());
            } catch (AneException e) {
                if (!e.isBundleCheck()) throw e;
                throw e.withMessage("[train] kernel " + k.name() + ": " + e.getMessage());   // which kernel, in the one line
            }
            kernels.put(name, compiled);
            compiles++;
            outputs.put(name, compiled.allocateDirectOutput(OUTPUT));   // the ANE: its output surface; ref: floats
        }
        this.staging = o.staticWeights() ? new WeightStaging.Baked(config, o.io(), threeStage, specs, backend, adapters, timer)
                : kernels.get(SDPA_FWD).prefersBoundInputs() ? new WeightStaging.Bound(config, specs, kernels, timer, loraInputs)
                : new WeightStaging.OnDemand(config, specs, kernels, timer, loraInputs);

        bwd1In = kernels.get(SDPA_BWD1).allocateDirectInput(INPUT);
        specs.get(SDPA_BWD1).writeConstants(bwd1In);                  // the mask and head pads: once, never per step
        TensorBuffer in2 = kernels.get(SDPA_BWD2).allocateDirectInput(INPUT), out1 = outputs.get(SDPA_BWD1);
        // buffers of floats (the reference backend): sdpaBwd1 writes probs and dP where sdpaBwd2 reads them, two views of
        // one buffer [dv | probs, dP | q, k], instead of a copy of 2·NH·S channels per layer between them
        int shift = specs.get(SDPA_BWD1).output().start("probs") - specs.get(SDPA_BWD2).input().start("probs");
        probsShared = in2.floatHeld() && out1.floatHeld() && shift >= 0 && in2.channelSize() == out1.channelSize()
                && out1.channelCount() <= shift + specs.get(SDPA_BWD2).input().start("q");
        if (probsShared) {
            int[] shape = in2.type().shape();
            shape[1] = shift + in2.channelCount();
            TensorBuffer both = TensorBuffer.allocateFloatHeld(in2.type().withShape(shape));
            outputs.put(SDPA_BWD1, both.channels(0, out1.channelCount()));
            in2 = both.channels(shift, in2.channelCount());
        }
        bwd2In = in2;
        if (threeStage) valuesIn = kernels.get(ATTN_VALUES).allocateDirectInput(INPUT);
        cosT = CpuOps.channelFirst(RopeTables.cos(config), s, config.headDim());
        sinT = CpuOps.channelFirst(RopeTables.sin(config), s, config.headDim());

        gradSets = new Gradients[] {new Gradients(d, h, q, kv, s), new Gradients(d, h, q, kv, s)};
        acts = new Activations[nl + 1];
        for (int l = 0; l <= nl; l++) acts[l] = allocate(l == nl);
        dxf = new float[d * s];
        dy = new float[d * s];
        dtmp = new float[d * s];
        dxq = new float[d * s];
        da = new float[q * s];
        boolean gqa = c.nKvHeads() != c.nHeads();
        kTiled = gqa ? new float[q * s] : null;
        vTiled = gqa ? new float[q * s] : null;
        dkFull = gqa ? new float[q * s] : null;
        dvFull = gqa ? new float[q * s] : null;
        dqRaw = c.qkNorm() ? new float[q * s] : null;
        dkRaw = c.qkNorm() ? new float[kv * s] : null;
    }

    private Activations allocate(boolean last) {
        Activations a = new Activations();
        a.x = new float[d * s];
        a.xnorm = new float[d * s];
        a.rrmsAtt = new float[s];
        if (last) return a;
        if (c.qkNorm()) {
            a.qRaw = new float[q * s];
            a.kRaw = new float[kv * s];
        }
        a.qRope = new float[q * s];
        a.kRope = new float[kv * s];
        a.vh = new float[kv * s];
        a.attn = new float[q * s];
        a.x2 = new float[d * s];
        a.x2norm = new float[d * s];
        a.rrmsFfn = new float[s];
        a.h1 = new float[h * s];
        a.h3 = new float[h * s];
        a.gate = new float[h * s];
        return a;
    }

    /** Kernels compiled by this step (10 at construction; static weights add 8 per layer per weight update). */
    public int compiles() { return compiles + staging.compiles(); }

    public Map<Phase, Long> phaseNanos() { return timer.nanos(); }

    /** Whether each layer's weight-bearing kernels have bound inputs of their own (the backend prefers them). */
    public boolean boundInputs() { return staging instanceof WeightStaging.Bound; }

    /** Activation bytes the last step wrote into kernel inputs (the S columns of the weight-bearing ones, all of the rest). */
    public long stagedActivationBytes() { return activationBytes + lora.activationBytes(); }

    /** Weight bytes the last step wrote into kernel inputs (bound inputs: once per {@link #stageWeights}). */
    public long stagedWeightBytes() { return staging.weightBytes() + lora.weightBytes(); }

    /**
     * The weights the following steps use. Dynamic weights are read lazily, layer by layer, inside {@link #forwardBackward}:
     * call this again after every change to {@code params}. Static weights recompile the weight-bearing kernels now.
     */
    public void stageWeights(float[] params) { staging.stageWeights(params); }

    // -----------------------------------------------------------------------------------------------------------------
    // one sequence: forward (shared by validation and training), loss, backward; gradients (times lossScale) are
    // ACCUMULATED into grads

    /**
     * The validation loss of one sequence: the forward kernels training compiled (no compile, no weight gradient),
     * the classifier and the mean cross-entropy over the counted targets; the gradient buffers and the weights staged
     * in the kernels are untouched.
     */
    public float forwardLoss(float[] params, int[] tokens, int[] targets) {
        forward(params, tokens, targets, -1);
        try (var _ = timer.phase(CLASSIFIER)) {
            logits(params);
            return CpuOps.crossEntropy(null, logits, targets, v, s, 1f);
        }
    }

    /**
     * @param targets the next token at each position, or −1 where the loss does not count (a prompt token under a
     *                completion mask): the loss is the mean over the counted positions, as torch's ignore_index
     */
    public float forwardBackward(float[] params, float[] grads, int[] tokens, int[] targets, float lossScale) {
        return forwardBackward(params, grads, tokens, targets, lossScale, 0);
    }

    /**
     * @param sequence the number of this training sequence in its run (the trainer's micro-step): with LoRA dropout it
     *                 selects the masks ({@link LoraDropout}), so a resumed run draws the same ones
     */
    public float forwardBackward(float[] params, float[] grads, int[] tokens, int[] targets, float lossScale, long sequence) {
        if (grads.length != gradCount) throw new IllegalArgumentException("[train] grads has " + grads.length + " floats, " + (lora.trainsBase() ? "the model " : "the adapters ") + gradCount);
        if (sequence < 0) throw new IllegalArgumentException("[train] sequence " + sequence + " must be at least 0");
        forward(params, tokens, targets, sequence);
        float loss = classifierBackward(params, grads, targets, lossScale);   // dy = the final norm's input gradient
        for (int l = nl - 1; l >= 0; l--) {
            Activations a = acts[l];
            Gradients g = gradSets[l & 1];
            awaitReader(g);
            ffnBackward(params, grads, l, a, g);          // dy → dx2
            attentionBackward(params, grads, l, a, g);    // dx2 → dq, dk, dv
            // LoRA: nothing below layer 0's projections trains (embedding and norms are frozen), so its input gradient is unused
            if (!lora.trainsBase() && l == 0) continue;
            qkvInputBackward(params, grads, l, a, g);     // dq, dk, dv (+ dx2) → dy of layer l−1
        }
        // every dW must land before the embedding scatter touches the (possibly tied) embedding gradient
        waitForDw();
        if (lora.trainsBase()) {
            // dtokenEmbedding[token] += dy columns
            ParameterView emb = layout.tokenEmbedding();
            for (int t = 0; t < s; t++) {
                int off = emb.offset() + tokens[t] * d;
                for (int ch = 0; ch < d; ch++) grads[off + ch] += dy[ch * s + t];
            }
        }
        return loss;
    }

    // -----------------------------------------------------------------------------------------------------------------
    // forward

    /**
     * Embedding and the transformer blocks on the backend: acts[0..L] hold the activations backward reads.
     * @param sequence the LoRA dropout masks' sequence number (the training step's), −1 for none (validation)
     */
    private void forward(float[] params, int[] tokens, int[] targets, long sequence) {
        if (tokens.length != s || targets.length != s) throw new IllegalArgumentException("[train] expected " + s + " tokens and targets, got " + tokens.length + " and " + targets.length);
        for (int t = 0; t < s; t++)
            if (targets[t] < -1 || targets[t] >= v)
                throw new IllegalArgumentException("[train] target " + targets[t] + " at position " + t + " is outside the vocabulary of " + v + " (−1 means ignore); check the data's tokenizer against the model's vocabSize");
        timer.clear();
        activationBytes = 0;
        staging.resetWeightBytes();
        lora.beginForward(sequence);

        // embedding: x0 (D,S) ← tokenEmbedding[token] columns
        ParameterView emb = layout.tokenEmbedding();
        float[] x0 = acts[0].x;
        for (int t = 0; t < s; t++) {
            int tok = tokens[t];
            if (tok < 0 || tok >= v) throw new IllegalArgumentException("[train] token " + tok + " at position " + t + " is outside the vocabulary of " + v);
            for (int ch = 0; ch < d; ch++) x0[ch * s + t] = params[emb.offset() + tok * d + ch];
        }
        // transformer blocks
        for (int l = 0; l < nl; l++) {
            attentionForward(params, l, acts[l]);                   // x → x2
            ffnForward(params, l, acts[l], acts[l + 1].x);          // x2 → the next block's x
        }
    }

    /** Attention with residual: x2 (D,S) = x + α·wo·attention(rmsnorm(x)), on sdpaFwd and woFwd. */
    private void attentionForward(float[] params, int l, Activations a) {
        ParameterLayout.Layer w = layout.layer(l);
        float alpha = c.residualScale();
        try (var _ = timer.phase(CPU)) {
            CpuOps.rmsnormForward(a.xnorm, a.rrmsAtt, a.x, params, w.rmsAtt().offset(), d, s, c.normEps());
        }
        // sdpaFwd: q, k, v projections (+ LoRA's), QK-norm, RoPE, causal softmax(q·kᵀ/√HD)·v
        TensorBuffer in = staging.input(l, SDPA_FWD);
        lora.writeInputs(in, SDPA_FWD, specs.get(SDPA_FWD).input(), l, a.xnorm, d);   // u = s·A·drop(xnorm), Bᵀ
        TensorBuffer out = run(SDPA_FWD, l, in, a.xnorm, FORWARD_BACKEND);
        PackedLayout o = specs.get(SDPA_FWD).output();
        try (var _ = timer.phase(IO)) {
            read(out, o.start("qRope"), a.qRope);
            read(out, o.start("kRope"), a.kRope);
            read(out, o.start("v"), a.vh);
            if (c.qkNorm()) {
                read(out, o.start("qRaw"), a.qRaw);
                read(out, o.start("kRaw"), a.kRaw);
            }
        }
        if (threeStage) threeStageAttention(out, o.start("scores"), a);
        else read(out, o.start("attn"), a.attn);
        // woFwd: x2 = x + α·(wo·attn + s·Bo·Ao·drop(attn))
        TensorBuffer wo = run(WO_FWD, l, staging.input(l, WO_FWD), a.attn, FORWARD_BACKEND);
        try (var _ = timer.phase(CPU)) {
            read(wo, 0, a.x2);
            for (int i = 0; i < d * s; i++) a.x2[i] = a.x[i] + alpha * a.x2[i];
        }
        lora.addForward(l, "o", a.attn, q, alpha, a.x2);
    }

    /** SwiGLU feed-forward with residual: xNext (D,S) = x2 + α·w2·(silu(w1·x2norm) ⊙ w3·x2norm), on ffnFused. */
    private void ffnForward(float[] params, int l, Activations a, float[] xNext) {
        ParameterLayout.Layer w = layout.layer(l);
        try (var _ = timer.phase(CPU)) {
            CpuOps.rmsnormForward(a.x2norm, a.rrmsFfn, a.x2, params, w.rmsFfn().offset(), d, s, c.normEps());
        }
        TensorBuffer in = staging.input(l, FFN_FUSED);
        try (var _ = timer.phase(IO)) {
            writeActivation(in, d, col(FFN_FUSED, "x2"), a.x2);
        }
        lora.writeInputs(in, FFN_FUSED, specs.get(FFN_FUSED).input(), l, a.x2norm, d);   // u = s·A·drop(x2norm), Bᵀ
        TensorBuffer out = run(FFN_FUSED, l, in, a.x2norm, FORWARD_BACKEND);
        PackedLayout o = specs.get(FFN_FUSED).output();
        try (var _ = timer.phase(IO)) {
            read(out, o.start("xNext"), xNext);
            read(out, o.start("h1"), a.h1);
            read(out, o.start("h3"), a.h3);
            read(out, o.start("gate"), a.gate);
        }
        lora.addForward(l, "w2", a.gate, h, c.residualScale(), xNext);   // xNext += α·s·B2·(A2·drop(gate))
    }

    /** Stages 2 and 3: causal mask + softmax of the scores on the CPU, then P·V on the backend into a.attn (Q,S). */
    private void threeStageAttention(TensorBuffer sdpaOut, int scoresChannel, Activations a) {
        try (var _ = timer.phase(CPU)) {
            int nh = c.nHeads();
            float[] row = new float[s];
            for (int r = 0; r < nh * s; r++) {
                int i = r % s;                                                       // query position of this row
                sdpaOut.copyTo((long) (scoresChannel + r) * s, row, 0, s);
                // softmax over keys 0..i (the causal mask), zeros after
                float max = Float.NEGATIVE_INFINITY;
                for (int j = 0; j <= i; j++) max = Math.max(max, row[j]);
                double sum = 0;
                for (int j = 0; j <= i; j++) sum += (row[j] = (float) Math.exp(row[j] - max));
                for (int j = 0; j < s; j++) row[j] = j <= i ? (float) (row[j] / sum) : 0f;
                valuesIn.copyFrom(row, 0, (long) r * s, s);
            }
            activationBytes += (long) nh * s * s * valuesIn.dtype().byteSize();
            float[] vt = new float[q * s];
            CpuOps.tileKv(vt, a.vh, nh, c.nKvHeads(), c.headDim(), s);
            valuesIn.copyFrom(vt, 0, (long) specs.get(ATTN_VALUES).input().start("v") * s, vt.length);
            activationBytes += (long) vt.length * valuesIn.dtype().byteSize();
        }
        read(eval(ATTN_VALUES, -1, valuesIn, FORWARD_BACKEND), 0, a.attn);
    }

    // -----------------------------------------------------------------------------------------------------------------
    // classifier and loss

    /** logits (V,S) = wcls (V,D) · rmsnorm(xf) (D,S), xf = acts[L].x. */
    private void logits(float[] params) {
        Activations last = acts[nl];
        CpuOps.rmsnormForward(last.xnorm, last.rrmsAtt, last.x, params, layout.rmsFinal().offset(), d, s, c.normEps());
        if (logits == null) logits = new float[v * s];
        // the classifier runs in blocks of CLS_BLOCK vocabulary rows: BLAS reads the float[] weights in place, and should
        // it copy heap operands instead (-Dane4j.blas.criticalMaxMacs) a block bounds the copy to CLS_BLOCK·D floats
        int cls = layout.classifier().offset();
        for (int v0 = 0; v0 < v; v0 += CLS_BLOCK) {
            int vb = Math.min(CLS_BLOCK, v - v0);
            Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, vb, s, d, 1f, params, cls + v0 * d, d, last.xnorm, 0, s, 0f, logits, v0 * s, s);
        }
    }

    /** Final norm, classifier, the loss and its gradient back to dy (D,S), the last block's output gradient. */
    private float classifierBackward(float[] params, float[] grads, int[] targets, float lossScale) {
        try (var _ = timer.phase(CLASSIFIER)) {
            logits(params);
            Activations last = acts[nl];
            // the loss gradient overwrites the logits in place: one (V,S) array, not two
            float[] dlogits = logits;
            float loss = CpuOps.crossEntropy(dlogits, logits, targets, v, s, lossScale);
            int cls = layout.classifier().offset();
            // dxf (D,S) = wclsᵀ · dlogits, summed over the blocks; dwcls (V,D) += dlogits · xfᵀ, block by block
            for (int v0 = 0; v0 < v; v0 += CLS_BLOCK) {
                int vb = Math.min(CLS_BLOCK, v - v0);
                Blas.sgemm(Layout.ROW_MAJOR, Transpose.YES, Transpose.NO, d, s, vb, 1f, params, cls + v0 * d, d, dlogits, v0 * s, s, v0 == 0 ? 0f : 1f, dxf, 0, s);
            }
            if (lora.trainsBase()) dw(() -> {
                for (int v0 = 0; v0 < v; v0 += CLS_BLOCK) {
                    int vb = Math.min(CLS_BLOCK, v - v0);
                    Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, vb, d, s, 1f, dlogits, v0 * s, s, last.xnorm, 0, s, 1f, grads, cls + v0 * d, d);
                }
            });
            // dy (D,S) = rmsnorm_bwd(dxf)
            CpuOps.rmsnormBackward(dy, lora.normGrads(grads), lora.normOffset(layout.rmsFinal()), dxf, last.x, params, layout.rmsFinal().offset(), last.rrmsAtt, d, s);
            return loss;
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // backward, block by block in reverse

    /** FFN backward: dy (D,S) → dx2 (D,S), through w2, SwiGLU, w1/w3, the norm and the residual; dW2, dW1, dW3 queued. */
    private void ffnBackward(float[] params, float[] grads, int l, Activations a, Gradients g) {
        ParameterLayout.Layer w = layout.layer(l);
        float alpha = c.residualScale();
        // dffn = α·dy; dgate (H,S) = w2ᵀ·dffn (+ s·m ⊙ A2ᵀ·B2ᵀ·dffn); dW2 (D,H) += dffn·gateᵀ
        for (int i = 0; i < d * s; i++) g.dffn[i] = alpha * dy[i];
        read(run(FFN_BWD_W2T, l, staging.input(l, FFN_BWD_W2T), g.dffn, BACKWARD_BACKEND), 0, g.dgate);
        lora.backward(l, "w2", g.dffn, g.dgate, h);
        dw(() -> projectionGrad(grads, l, "w2", g.dffn, a.gate, h));
        try (var _ = timer.phase(CPU)) {
            CpuOps.swigluBackward(g.dh1, g.dh3, g.dgate, a.h1, a.h3, h * s);
        }
        // dx2norm (D,S) = w1ᵀ·dh1 + w3ᵀ·dh3 (+ the adapters'); dW1, dW3 (H,D) += dh·x2normᵀ
        TensorBuffer w13 = staging.input(l, FFN_BWD_W13T);
        writeActivation(w13, h, col(FFN_BWD_W13T, "dh3"), g.dh3);
        read(run(FFN_BWD_W13T, l, w13, g.dh1, BACKWARD_BACKEND), 0, dtmp);
        lora.backward(l, "w1", g.dh1, dtmp, d);
        lora.backward(l, "w3", g.dh3, dtmp, d);
        dw(() -> {
            projectionGrad(grads, l, "w1", g.dh1, a.x2norm, d);
            projectionGrad(grads, l, "w3", g.dh3, a.x2norm, d);
        });
        // dx2 = rmsnorm_bwd(dx2norm) + dy (residual); dO = α·dx2
        try (var _ = timer.phase(CPU)) {
            CpuOps.rmsnormBackward(g.dx2, lora.normGrads(grads), lora.normOffset(w.rmsFfn()), dtmp, a.x2, params, w.rmsFfn().offset(), a.rrmsFfn, d, s);
            for (int i = 0; i < d * s; i++) {
                g.dx2[i] += dy[i];
                g.dO[i] = alpha * g.dx2[i];
            }
        }
    }

    /**
     * Attention backward: dO (D,S) → dq (Q,S), dk, dv (KV,S), through wo, the attention core (recomputing the
     * probabilities: sdpaBwd1 gives dV and dP, sdpaBwd2 dQ and dK, on heads tiled to NH), RoPE and QK-norm; dWo, dWq,
     * dWk, dWv queued.
     */
    private void attentionBackward(float[] params, float[] grads, int l, Activations a, Gradients g) {
        ParameterLayout.Layer w = layout.layer(l);
        // da (Q,S) = woᵀ·dO (+ s·m ⊙ Aoᵀ·Boᵀ·dO, before sdpaBwd1 reads it); dWo (D,Q) += dO·attnᵀ
        read(run(WOT_BWD, l, staging.input(l, WOT_BWD), g.dO, BACKWARD_BACKEND), 0, da);
        lora.backward(l, "o", g.dO, da, q);
        dw(() -> projectionGrad(grads, l, "o", g.dO, a.attn, q));
        // (multi-head attention, NKV = NH: the heads are already tiled, K and V go in as they are)
        boolean mha = c.nKvHeads() == c.nHeads();
        PackedLayout b1 = specs.get(SDPA_BWD1).input(), b2 = specs.get(SDPA_BWD2).input();
        try (var _ = timer.phase(IO)) {
            if (!mha) {
                CpuOps.tileKv(kTiled, a.kRope, c.nHeads(), c.nKvHeads(), c.headDim(), s);
                CpuOps.tileKv(vTiled, a.vh, c.nHeads(), c.nKvHeads(), c.headDim(), s);
            }
            // head by head where sdpaBwd1's heads are padded (R4)
            b1.writeChannels(bwd1In, "q", a.qRope, 0);
            b1.writeChannels(bwd1In, "k", mha ? a.kRope : kTiled, 0);
            b1.writeChannels(bwd1In, "v", mha ? a.vh : vTiled, 0);
            b1.writeChannels(bwd1In, "da", da, 0);
            activationBytes += 4L * q * s * bwd1In.dtype().byteSize();
        }
        // sdpaBwd1: probs, dV, dP
        TensorBuffer o1 = eval(SDPA_BWD1, -1, bwd1In, BACKWARD_BACKEND);
        try (var _ = timer.phase(IO)) {
            read(o1, specs.get(SDPA_BWD1).output().start("dv"), mha ? g.dv : dvFull);
            int o1probs = specs.get(SDPA_BWD1).output().start("probs");
            if (!probsShared) bwd2In.copyChannels(o1, o1probs, b2.start("probs"), 2 * c.nHeads() * s);   // probs and dp, adjacent in both
            PackedLayout.Range hq = b1.get("q");                   // q and k tiled, adjacent in both; sdpaBwd2's heads unpadded
            for (int i = 0; i < 2 * hq.blocks(); i++) bwd2In.copyChannels(bwd1In, hq.start() + i * hq.stride(), b2.start("q") + i * hq.block(), hq.block());
            activationBytes += ((probsShared ? 0 : 2L * c.nHeads() * s) + 2L * q) * s * bwd2In.dtype().byteSize();
        }
        // sdpaBwd2: dQ, dK
        TensorBuffer o2 = eval(SDPA_BWD2, -1, bwd2In, BACKWARD_BACKEND);
        try (var _ = timer.phase(CPU)) {
            PackedLayout l2 = specs.get(SDPA_BWD2).output();
            read(o2, l2.start("dq"), g.dq);
            read(o2, l2.start("dk"), mha ? g.dk : dkFull);
            if (!mha) {
                // the tiled heads' gradients summed per KV group
                CpuOps.reduceKv(g.dk, dkFull, c.nHeads(), c.nKvHeads(), c.headDim(), s);
                CpuOps.reduceKv(g.dv, dvFull, c.nHeads(), c.nKvHeads(), c.headDim(), s);
            }
            // RoPE backward, then QK-norm backward to the raw projections
            CpuOps.ropeBackward(g.dq, c, c.nHeads(), cosT, sinT);
            CpuOps.ropeBackward(g.dk, c, c.nKvHeads(), cosT, sinT);
            if (c.qkNorm()) {
                CpuOps.headNormBackward(dqRaw, lora.normGrads(grads), lora.normOffset(w.qNorm()), g.dq, a.qRaw, params, w.qNorm().offset(), c.nHeads(), c.headDim(), s, c.normEps());
                CpuOps.headNormBackward(dkRaw, lora.normGrads(grads), lora.normOffset(w.kNorm()), g.dk, a.kRaw, params, w.kNorm().offset(), c.nKvHeads(), c.headDim(), s, c.normEps());
                System.arraycopy(dqRaw, 0, g.dq, 0, q * s);
                System.arraycopy(dkRaw, 0, g.dk, 0, kv * s);
            }
        }
        // the q, k, v adapter paths' dx (added in qkvInputBackward); dWq, dWk, dWv (out,D) += d·xnormᵀ
        lora.qkvBackward(l, g.dq, g.dk, g.dv);
        g.lastReader = dw(() -> {
            projectionGrad(grads, l, "q", g.dq, a.xnorm, d);
            projectionGrad(grads, l, "k", g.dk, a.xnorm, d);
            projectionGrad(grads, l, "v", g.dv, a.xnorm, d);
        });
    }

    /** dy (D,S) of the layer below = rmsnorm_bwd(wqᵀ·dq + wkᵀ·dk + wvᵀ·dv (+ the adapters')) + dx2 (residual). */
    private void qkvInputBackward(float[] params, float[] grads, int l, Activations a, Gradients g) {
        ParameterLayout.Layer w = layout.layer(l);
        read(run(Q_BWD, l, staging.input(l, Q_BWD), g.dq, BACKWARD_BACKEND), 0, dxq);
        TensorBuffer kvIn = staging.input(l, KV_BWD);
        writeActivation(kvIn, kv, col(KV_BWD, "dv"), g.dv);
        read(run(KV_BWD, l, kvIn, g.dk, BACKWARD_BACKEND), 0, dtmp);
        try (var _ = timer.phase(CPU)) {
            for (int i = 0; i < d * s; i++) dtmp[i] += dxq[i];
            lora.addQkvDx(dtmp);
            // dy is not read after this point of the layer, so it is reused
            CpuOps.rmsnormBackward(dy, lora.normGrads(grads), lora.normOffset(w.rmsAtt()), dtmp, a.x, params, w.rmsAtt().offset(), a.rrmsAtt, d, s);
            for (int i = 0; i < d * s; i++) dy[i] += g.dx2[i];
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // weight gradients, on the dW thread

    /**
     * The gradient of layer l's projection {@code target} (q … w3) from its output gradient dY (out,S) and input
     * x (in,S): dW (out,in) += dY·xᵀ, or with LoRA the adapters' (never the frozen dW).
     */
    private void projectionGrad(float[] grads, int l, String target, float[] dY, float[] x, int in) {
        if (!lora.trainsBase()) {
            lora.weightGrad(grads, l, target, dY, x, in);
            return;
        }
        ParameterView w = LoraAdapters.baseMatrix(layout.layer(l), target);
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, w.rows(), w.cols(), s, 1f, dY, 0, s, x, 0, s, 1f, grads, w.offset(), w.cols());
    }

    private Future<?> dw(Runnable task) {
        Future<?> f = dwThread.submit(task);
        pendingDw.add(f);
        return f;
    }

    /** Waits until the weight-gradient thread has finished reading a scratch set (tasks run in order: the last one). */
    private void awaitReader(Gradients g) {
        if (g.lastReader == null) return;
        try (var _ = timer.phase(DW_WAIT)) {
            await(g.lastReader);
            g.lastReader = null;
        }
    }

    private static void await(Future<?> f) {
        try {
            f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("[train] interrupted while waiting for weight gradients", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("[train] a weight-gradient sgemm failed: " + e.getCause(), e.getCause());
        }
    }

    private void waitForDw() {
        try (var _ = timer.phase(DW_WAIT)) {
            for (Future<?> f : pendingDw) await(f);
        } finally {
            pendingDw.clear();
            for (Gradients g : gradSets) g.lastReader = null;
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // kernel inputs and outputs

    private int col(Name kernel, String segment) { return specs.get(kernel).input().start(segment); }

    /** Writes act (C,S) into the first S columns of in (layer's input of a weight-bearing kernel), then evaluates the kernel. */
    private TensorBuffer run(Name kernel, int layer, TensorBuffer in, float[] act, Phase phase) {
        try (var _ = timer.phase(IO)) {
            writeActivation(in, in.channelCount(), 0, act);
        }
        return eval(kernel, layer, in, phase);
    }

    /** act (C,S) into columns [column, column+S) of the first C channels of in. */
    private void writeActivation(TensorBuffer in, int channels, int column, float[] act) {
        in.writeColumns(0, channels, column, s, act, 0, s);
        activationBytes += (long) channels * s * in.dtype().byteSize();
    }

    /** Evaluates a kernel: a weight-bearing one as the staging holds it for the layer, a weight-free one (layer −1) on in. */
    private TensorBuffer eval(Name kernel, int layer, TensorBuffer in, Phase phase) {
        try (var _ = timer.phase(phase)) {
            TensorBuffer out = outputs.get(kernel);
            Map<String, TensorBuffer> outs = Map.of(OUTPUT, out);
            if (kernel.weighted()) staging.evaluate(kernel, layer, in, outs);
            else kernels.get(kernel).evaluate(Map.of(INPUT, in), outs);
            return out;
        }
    }

    /** Channels [from, from + dst.length/S) of a (C,S) output into dst. */
    private void read(TensorBuffer out, int fromChannel, float[] dst) {
        out.copyTo((long) fromChannel * s, dst, 0, dst.length);
    }

    @Override public void close() {
        dwThread.shutdownNow();
        staging.close();
        for (Kernel k : kernels.values()) k.close();
    }
}
