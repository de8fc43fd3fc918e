package ane4j.train;

import ane4j.backend.Backend;
import ane4j.backend.TensorBuffer;
import ane4j.blas.Blas;
import ane4j.blas.Layout;
import ane4j.blas.Transpose;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.ParameterView;
import ane4j.run.TrainOptions;
import ane4j.train.StepBuffers.Activations;
import ane4j.train.StepBuffers.Gradients;

import java.util.Map;

import static ane4j.train.TrainingKernels.Name.*;
import static ane4j.train.TrainingStep.Phase.*;

/**
 * Forward and backward of one sequence, ANE-shaped (docs/ane-facts.md §5.3): the ten kernels run on the backend with weights
 * staged into their inputs; embedding, RMSNorm, classifier, cross-entropy, SwiGLU/RoPE/QK-norm backward and every dW
 * run on the CPU, the dW sgemms on a background thread overlapping the backend's work.
 * <pre>Legend: S = seqLen, D = dim, H = hiddenDim, V = vocab, Q = nHeads·headDim, KV = nKvHeads·headDim, L = nLayers.</pre>
 * Activations are channel-first (C, S) float arrays; matrices are row-major (out, in).
 *
 * <p>This file is the step's math, block by block, as llm.c's gpt2_forward and gpt2_backward. What is not lives beside it:
 * the kernels, their inputs and outputs in {@link StepKernels} (how weights reach them: a {@link WeightStaging}, bound
 * inputs on the ANE, staged on demand on the reference backend, or baked into recompiled kernels with static weights);
 * LoRA's adapters in {@link LoraPath}; the float arrays, a shape on each, in {@link StepBuffers}; the dW thread in
 * {@link DwThread}; phase times in {@link StepTimer}. {@link #stagedActivationBytes()} and {@link #stagedWeightBytes()}
 * count what the last step wrote into kernel inputs.
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
    private final int gradCount;                       // floats of grads: the model's, or with LoRA the adapters'
    private final StepTimer timer = new StepTimer();
    private final StepKernels kernels;                 // the ten kernels, their inputs and outputs, the weight staging
    private final LoraPath lora;                       // the adapters' rank-r path, or nothing
    private final DwThread dw = new DwThread(timer);   // the dW sgemms, overlapping the backend
    private final StepBuffers buf;                     // activations and scratch, a shape on each
    private final float[] cosT, sinT;                  // (HD,S) RoPE tables

    public TrainingStep(ModelConfig config, Backend backend, Options o) {
        LoraAdapters adapters = o.lora();
        if (adapters != null && !adapters.config().equals(config)) throw new IllegalArgumentException("[lora] the adapters are for model " + adapters.config().name() + ", not " + config.name());
        boolean loraInputs = adapters != null && !o.staticWeights();
        this.c = config;
        this.layout = new ParameterLayout(config);
        this.threeStage = o.threeStage();
        this.gradCount = adapters == null ? layout.size() : adapters.size();
        this.s = config.seqLen();
        this.d = config.dim();
        this.h = config.hiddenDim();
        this.q = config.qDim();
        this.kv = config.kvDim();
        this.v = config.vocabSize();
        this.nl = config.nLayers();
        TrainingKernels built = new TrainingKernels(config, o.io(), null, threeStage, loraInputs ? new TrainingKernels.LoraInputs(adapters.rank(), adapters.targets()) : null);
        this.lora = new LoraPath(config, adapters, loraInputs, built, timer);
        this.kernels = new StepKernels(config, backend, o, built, loraInputs, timer);
        this.buf = new StepBuffers(config);
        this.cosT = CpuOps.channelFirst(RopeTables.cos(config), s, config.headDim());
        this.sinT = CpuOps.channelFirst(RopeTables.sin(config), s, config.headDim());
    }

    /** Kernels compiled by this step (10 at construction; static weights add 8 per layer per weight update). */
    public int compiles() { return kernels.compiles(); }

    public Map<Phase, Long> phaseNanos() { return timer.nanos(); }

    /** Whether each layer's weight-bearing kernels have bound inputs of their own (the backend prefers them). */
    public boolean boundInputs() { return kernels.staging() instanceof WeightStaging.Bound; }

    /** Activation bytes the last step wrote into kernel inputs (the S columns of the weight-bearing ones, all of the rest). */
    public long stagedActivationBytes() { return kernels.activationBytes() + lora.activationBytes(); }

    /** Weight bytes the last step wrote into kernel inputs (bound inputs: once per {@link #stageWeights}). */
    public long stagedWeightBytes() { return kernels.staging().weightBytes() + lora.weightBytes(); }

    /**
     * The weights the following steps use. Dynamic weights are read lazily, layer by layer, inside {@link #forwardBackward}:
     * call this again after every change to {@code params}. Static weights recompile the weight-bearing kernels now.
     */
    public void stageWeights(float[] params) { kernels.staging().stageWeights(params); }

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
            return CpuOps.crossEntropy(null, buf.logits(), targets, v, s, 1f);
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
            Activations a = buf.acts[l];
            Gradients g = buf.sets[l & 1];
            if (g.lastReader != null) {
                dw.await(g.lastReader);                   // the dW thread has done reading this set (layer l+2's)
                g.lastReader = null;
            }
            ffnBackward(params, grads, l, a, g);          // dy → dx2
            attentionBackward(params, grads, l, a, g);    // dx2 → dq, dk, dv
            // LoRA: nothing below layer 0's projections trains (embedding and norms are frozen), so its input gradient is unused
            if (!lora.trainsBase() && l == 0) continue;
            qkvInputBackward(params, grads, l, a, g);     // dq, dk, dv (+ dx2) → dy of layer l−1
        }
        // every dW must land before the embedding scatter touches the (possibly tied) embedding gradient
        try {
            dw.awaitAll();
        } finally {
            for (Gradients g : buf.sets) g.lastReader = null;
        }
        if (lora.trainsBase()) {
            // dtokenEmbedding[token] += dy columns
            ParameterView emb = layout.tokenEmbedding();
            for (int t = 0; t < s; t++) {
                int off = emb.offset() + tokens[t] * d;
                for (int ch = 0; ch < d; ch++) grads[off + ch] += buf.dy[ch * s + t];
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
        kernels.resetCounts();
        lora.beginForward(sequence);

        // embedding: x0 (D,S) ← tokenEmbedding[token] columns
        ParameterView emb = layout.tokenEmbedding();
        float[] x0 = buf.acts[0].x;
        for (int t = 0; t < s; t++) {
            int tok = tokens[t];
            if (tok < 0 || tok >= v) throw new IllegalArgumentException("[train] token " + tok + " at position " + t + " is outside the vocabulary of " + v);
            for (int ch = 0; ch < d; ch++) x0[ch * s + t] = params[emb.offset() + tok * d + ch];
        }
        // transformer blocks
        for (int l = 0; l < nl; l++) {
            attentionForward(params, l, buf.acts[l]);                   // x → x2
            ffnForward(params, l, buf.acts[l], buf.acts[l + 1].x);      // x2 → the next block's x
        }
    }

    /** Attention with residual: x2 (D,S) = x + α·wo·attention(rmsnorm(x)), on sdpaFwd and woFwd. */
    private void attentionForward(float[] params, int l, Activations a) {
        ParameterLayout.Layer w = layout.layer(l);
        float alpha = c.residualScale();
        // xnorm (D,S) = rmsnorm(x)·rmsAtt
        try (var _ = timer.phase(CPU)) {
            CpuOps.rmsnormForward(a.xnorm, a.rrmsAtt, a.x, params, w.rmsAtt().offset(), d, s, c.normEps());
        }
        // sdpaFwd: q, k, v projections (+ LoRA's u = s·A·drop(xnorm), Bᵀ), QK-norm, RoPE, causal softmax(q·kᵀ/√HD)·v
        TensorBuffer in = kernels.input(l, SDPA_FWD);
        lora.writeInputs(in, SDPA_FWD, kernels.inputLayout(SDPA_FWD), l, a.xnorm, d);
        kernels.run(SDPA_FWD, l, in, a.xnorm, FORWARD_BACKEND);
        kernels.read(SDPA_FWD, "qRope", a.qRope);       // (Q,S)
        kernels.read(SDPA_FWD, "kRope", a.kRope);       // (KV,S)
        kernels.read(SDPA_FWD, "v", a.vh);              // (KV,S)
        if (c.qkNorm()) {
            kernels.read(SDPA_FWD, "qRaw", a.qRaw);     // (Q,S)
            kernels.read(SDPA_FWD, "kRaw", a.kRaw);     // (KV,S)
        }
        if (threeStage) {
            // three-stage: sdpaFwd stopped at the scores; causal softmax on the CPU, attn = P·V on attnValues
            boolean mha = c.nKvHeads() == c.nHeads();
            if (!mha) try (var _ = timer.phase(CPU)) {
                CpuOps.tileKv(buf.vTiled, a.vh, c.nHeads(), c.nKvHeads(), c.headDim(), s);
            }
            kernels.attnValues(mha ? a.vh : buf.vTiled, a.attn);
        } else kernels.read(SDPA_FWD, "attn", a.attn);  // (Q,S)
        // woFwd: x2 (D,S) = x + α·(wo·attn + s·Bo·Ao·drop(attn))
        kernels.run(WO_FWD, l, a.attn, FORWARD_BACKEND);
        kernels.read(WO_FWD, a.x2);
        try (var _ = timer.phase(CPU)) {
            for (int i = 0; i < d * s; i++) a.x2[i] = a.x[i] + alpha * a.x2[i];
        }
        lora.addForward(l, "o", a.attn, q, alpha, a.x2);
    }

    /** SwiGLU feed-forward with residual: xNext (D,S) = x2 + α·w2·(silu(w1·x2norm) ⊙ w3·x2norm), on ffnFused. */
    private void ffnForward(float[] params, int l, Activations a, float[] xNext) {
        ParameterLayout.Layer w = layout.layer(l);
        // x2norm (D,S) = rmsnorm(x2)·rmsFfn
        try (var _ = timer.phase(CPU)) {
            CpuOps.rmsnormForward(a.x2norm, a.rrmsFfn, a.x2, params, w.rmsFfn().offset(), d, s, c.normEps());
        }
        // ffnFused: h1, h3 (H,S) = w1·x2norm, w3·x2norm (+ LoRA's); gate = silu(h1)⊙h3; xNext = x2 + α·w2·gate
        TensorBuffer in = kernels.input(l, FFN_FUSED);
        kernels.write(in, FFN_FUSED, "x2", d, a.x2);    // the residual
        lora.writeInputs(in, FFN_FUSED, kernels.inputLayout(FFN_FUSED), l, a.x2norm, d);
        kernels.run(FFN_FUSED, l, in, a.x2norm, FORWARD_BACKEND);
        kernels.read(FFN_FUSED, "xNext", xNext);        // (D,S)
        kernels.read(FFN_FUSED, "h1", a.h1);            // (H,S)
        kernels.read(FFN_FUSED, "h3", a.h3);            // (H,S)
        kernels.read(FFN_FUSED, "gate", a.gate);        // (H,S)
        lora.addForward(l, "w2", a.gate, h, c.residualScale(), xNext);   // xNext += α·s·B2·(A2·drop(gate))
    }

    // -----------------------------------------------------------------------------------------------------------------
    // classifier and loss

    /** logits (V,S) = wcls (V,D) · rmsnorm(xf) (D,S), xf = acts[L].x. */
    private void logits(float[] params) {
        Activations last = buf.acts[nl];
        CpuOps.rmsnormForward(last.xnorm, last.rrmsAtt, last.x, params, layout.rmsFinal().offset(), d, s, c.normEps());
        float[] logits = buf.logits();
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
            Activations last = buf.acts[nl];
            // the loss gradient overwrites the logits in place: one (V,S) array, not two
            float[] dlogits = buf.logits();
            float loss = CpuOps.crossEntropy(dlogits, dlogits, targets, v, s, lossScale);
            int cls = layout.classifier().offset();
            // dxf (D,S) = wclsᵀ · dlogits, summed over the blocks; dwcls (V,D) += dlogits · xfᵀ, block by block
            for (int v0 = 0; v0 < v; v0 += CLS_BLOCK) {
                int vb = Math.min(CLS_BLOCK, v - v0);
                Blas.sgemm(Layout.ROW_MAJOR, Transpose.YES, Transpose.NO, d, s, vb, 1f, params, cls + v0 * d, d, dlogits, v0 * s, s, v0 == 0 ? 0f : 1f, buf.dxf, 0, s);
            }
            if (lora.trainsBase()) dw.submit(() -> {
                for (int v0 = 0; v0 < v; v0 += CLS_BLOCK) {
                    int vb = Math.min(CLS_BLOCK, v - v0);
                    Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, vb, d, s, 1f, dlogits, v0 * s, s, last.xnorm, 0, s, 1f, grads, cls + v0 * d, d);
                }
            });
            // dy (D,S) = rmsnorm_bwd(dxf)
            CpuOps.rmsnormBackward(buf.dy, lora.normGrads(grads), lora.normOffset(layout.rmsFinal()), buf.dxf, last.x, params, layout.rmsFinal().offset(), last.rrmsAtt, d, s);
            return loss;
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // backward, block by block in reverse

    /** FFN backward: dy (D,S) → dx2 (D,S), through w2, SwiGLU, w1/w3, the norm and the residual; dW2, dW1, dW3 queued. */
    private void ffnBackward(float[] params, float[] grads, int l, Activations a, Gradients g) {
        ParameterLayout.Layer w = layout.layer(l);
        float alpha = c.residualScale();
        float[] dy = buf.dy, dx2norm = buf.dtmp;
        // dffn (D,S) = α·dy
        try (var _ = timer.phase(CPU)) {
            for (int i = 0; i < d * s; i++) g.dffn[i] = alpha * dy[i];
        }
        // dgate (H,S) = w2ᵀ·dffn (+ s·m ⊙ A2ᵀ·B2ᵀ·dffn); dW2 (D,H) += dffn·gateᵀ
        kernels.run(FFN_BWD_W2T, l, g.dffn, BACKWARD_BACKEND);
        kernels.read(FFN_BWD_W2T, g.dgate);
        lora.backward(l, "w2", g.dffn, g.dgate, h);
        dw.submit(() -> projectionGrad(grads, l, "w2", g.dffn, a.gate, h));
        // dh1, dh3 (H,S) through gate = silu(h1)⊙h3
        try (var _ = timer.phase(CPU)) {
            CpuOps.swigluBackward(g.dh1, g.dh3, g.dgate, a.h1, a.h3, h * s);
        }
        // dx2norm (D,S) = w1ᵀ·dh1 + w3ᵀ·dh3 (+ the adapters'); dW1, dW3 (H,D) += dh·x2normᵀ
        TensorBuffer w13 = kernels.input(l, FFN_BWD_W13T);
        kernels.write(w13, FFN_BWD_W13T, "dh3", h, g.dh3);
        kernels.run(FFN_BWD_W13T, l, w13, g.dh1, BACKWARD_BACKEND);
        kernels.read(FFN_BWD_W13T, dx2norm);
        lora.backward(l, "w1", g.dh1, dx2norm, d);
        lora.backward(l, "w3", g.dh3, dx2norm, d);
        dw.submit(() -> {
            projectionGrad(grads, l, "w1", g.dh1, a.x2norm, d);
            projectionGrad(grads, l, "w3", g.dh3, a.x2norm, d);
        });
        // dx2 (D,S) = rmsnorm_bwd(dx2norm) + dy (the residual); dO (D,S) = α·dx2
        try (var _ = timer.phase(CPU)) {
            CpuOps.rmsnormBackward(g.dx2, lora.normGrads(grads), lora.normOffset(w.rmsFfn()), dx2norm, a.x2, params, w.rmsFfn().offset(), a.rrmsFfn, d, s);
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
        float[] da = buf.da;
        // da (Q,S) = woᵀ·dO (+ s·m ⊙ Aoᵀ·Boᵀ·dO, before sdpaBwd1 reads it); dWo (D,Q) += dO·attnᵀ
        kernels.run(WOT_BWD, l, g.dO, BACKWARD_BACKEND);
        kernels.read(WOT_BWD, da);
        lora.backward(l, "o", g.dO, da, q);
        dw.submit(() -> projectionGrad(grads, l, "o", g.dO, a.attn, q));
        // K and V tiled to the query heads (grouped-query attention; with NKV = NH they go in as they are)
        boolean mha = c.nKvHeads() == c.nHeads();
        if (!mha) try (var _ = timer.phase(CPU)) {
            CpuOps.tileKv(buf.kTiled, a.kRope, c.nHeads(), c.nKvHeads(), c.headDim(), s);
            CpuOps.tileKv(buf.vTiled, a.vh, c.nHeads(), c.nKvHeads(), c.headDim(), s);
        }
        // sdpaBwd1: probs (recomputed), dV = Pᵀ·da, dP = da·Vᵀ; sdpaBwd2: dS = P⊙(dP − rowsum(P⊙dP)), dQ = dS·K/√HD, dK = dSᵀ·Q/√HD
        kernels.sdpaBwd1(a.qRope, mha ? a.kRope : buf.kTiled, mha ? a.vh : buf.vTiled, da, mha ? g.dv : buf.dvFull);
        kernels.sdpaBwd2(g.dq, mha ? g.dk : buf.dkFull);
        try (var _ = timer.phase(CPU)) {
            if (!mha) {
                // the tiled heads' gradients summed per KV group
                CpuOps.reduceKv(g.dk, buf.dkFull, c.nHeads(), c.nKvHeads(), c.headDim(), s);
                CpuOps.reduceKv(g.dv, buf.dvFull, c.nHeads(), c.nKvHeads(), c.headDim(), s);
            }
            // RoPE backward, then QK-norm backward to the raw projections
            CpuOps.ropeBackward(g.dq, c, c.nHeads(), cosT, sinT);
            CpuOps.ropeBackward(g.dk, c, c.nKvHeads(), cosT, sinT);
            if (c.qkNorm()) {
                CpuOps.headNormBackward(buf.dqRaw, lora.normGrads(grads), lora.normOffset(w.qNorm()), g.dq, a.qRaw, params, w.qNorm().offset(), c.nHeads(), c.headDim(), s, c.normEps());
                CpuOps.headNormBackward(buf.dkRaw, lora.normGrads(grads), lora.normOffset(w.kNorm()), g.dk, a.kRaw, params, w.kNorm().offset(), c.nKvHeads(), c.headDim(), s, c.normEps());
                System.arraycopy(buf.dqRaw, 0, g.dq, 0, q * s);
                System.arraycopy(buf.dkRaw, 0, g.dk, 0, kv * s);
            }
        }
        // the q, k, v adapter paths' dx (added in qkvInputBackward); dWq, dWk, dWv (out,D) += d·xnormᵀ
        lora.qkvBackward(l, g.dq, g.dk, g.dv);
        g.lastReader = dw.submit(() -> {
            projectionGrad(grads, l, "q", g.dq, a.xnorm, d);
            projectionGrad(grads, l, "k", g.dk, a.xnorm, d);
            projectionGrad(grads, l, "v", g.dv, a.xnorm, d);
        });
    }

    /** dy (D,S) of the layer below = rmsnorm_bwd(wqᵀ·dq + wkᵀ·dk + wvᵀ·dv (+ the adapters')) + dx2 (residual). */
    private void qkvInputBackward(float[] params, float[] grads, int l, Activations a, Gradients g) {
        ParameterLayout.Layer w = layout.layer(l);
        float[] dxq = buf.dxq, dxnorm = buf.dtmp, dy = buf.dy;
        // dxq (D,S) = wqᵀ·dq; dxnorm (D,S) = wkᵀ·dk + wvᵀ·dv
        kernels.run(Q_BWD, l, g.dq, BACKWARD_BACKEND);
        kernels.read(Q_BWD, dxq);
        TensorBuffer kvIn = kernels.input(l, KV_BWD);
        kernels.write(kvIn, KV_BWD, "dv", kv, g.dv);
        kernels.run(KV_BWD, l, kvIn, g.dk, BACKWARD_BACKEND);
        kernels.read(KV_BWD, dxnorm);
        try (var _ = timer.phase(CPU)) {
            for (int i = 0; i < d * s; i++) dxnorm[i] += dxq[i];
            lora.addQkvDx(dxnorm);
            // dy = rmsnorm_bwd(dxnorm) + dx2: dy is not read after this point of the layer, so it is reused
            CpuOps.rmsnormBackward(dy, lora.normGrads(grads), lora.normOffset(w.rmsAtt()), dxnorm, a.x, params, w.rmsAtt().offset(), a.rrmsAtt, d, s);
            for (int i = 0; i < d * s; i++) dy[i] += g.dx2[i];
        }
    }

    /**
     * On the dW thread: the gradient of layer l's projection {@code target} (q … w3) from its output gradient dY (out,S)
     * and input x (in,S): dW (out,in) += dY·xᵀ, or with LoRA the adapters' (never the frozen dW).
     */
    private void projectionGrad(float[] grads, int l, String target, float[] dY, float[] x, int in) {
        if (!lora.trainsBase()) {
            lora.weightGrad(grads, l, target, dY, x, in);
            return;
        }
        ParameterView w = LoraAdapters.baseMatrix(layout.layer(l), target);
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, w.rows(), w.cols(), s, 1f, dY, 0, s, x, 0, s, 1f, grads, w.offset(), w.cols());
    }

    @Override public void close() {
        dw.close();
        kernels.close();
    }
}
