package ane4j.train;

import ane4j.backend.TensorBuffer;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterView;
import ane4j.run.TrainOptions;
import ane4j.train.TrainingKernels.LoraSlot;
import ane4j.train.TrainingKernels.Name;
import ane4j.train.TrainingStep.Phase;

import java.util.Arrays;
import java.util.Map;

/**
 * The LoRA side of a {@link TrainingStep}: what trains instead of the model's weights, and the rank-r path beside them.
 * <pre>Legend: S = seqLen, D = dim, r = rank, in/out = a target matrix's (in, out) dims; targets q, k, v, o, w1, w2, w3.</pre>
 * Three cases:
 * <ul>
 * <li>no adapters ({@link #trainsBase()}): every weight trains, and every method here but {@link #normGrads} does nothing;
 * <li>adapters merged (static weights): the baked kernels compute with W + s·B·A ({@link WeightStaging.Baked}); the
 *     adapter gradients come from each projection's dY and x ({@link #weightGrad});
 * <li>adapters as inputs (dynamic weights): the kernels keep the frozen base W; the rank-r term y += s·B·A·drop(x)
 *     reaches sdpaFwd/ffnFused as extra input columns ({@link #writeInputs}: their LoRA variants) and meets o's and w2's
 *     outputs on the CPU ({@link #addForward}); in the backward each adapted target adds its share of dx on the CPU
 *     ({@link #backward}) and its adapter gradients replace dW ({@link #weightGrad}, on the weight-gradient thread).
 * </ul>
 * With adapters the embedding and the norms are frozen: the norm-weight gradients RMSNorm backward computes go to a
 * scratch. Dropout (PEFT's lora_dropout) draws one mask per (sequence, layer, target) in the forward ({@link LoraDropout})
 * and reuses it in the backward.
 */
final class LoraPath {
    private final LoraAdapters adapters;               // null: no LoRA
    private final boolean inputs;                      // the adapters are kernel inputs (not merged into baked weights)
    private final LoraDropout dropout;
    private final int s, d;
    private final StepTimer timer;
    private final float[] frozenNormGrads;             // (max(D, HD)) the norm-weight gradients computed and dropped
    private final Map<Name, Map<String, LoraSlot>> slots;   // sdpaFwd, ffnFused: where each target's inputs sit
    private final int paddedRank;                      // r rounded up to 32: the rows each slot takes in the kernels
    private long sequence = -1;                        // the dropout masks' sequence number; −1: no dropout (validation)
    private long activationBytes, weightBytes;         // written into kernel inputs since beginForward

    // adapters as inputs only
    private float[][][] u;                             // [layer][target] (r,S) u = A·drop(x) of the forward
    private long[][][] mask;                           // [layer][target] keep bits of the last training forward (dropout)
    private float[][][] g;                             // [set][target] (r,S) g = Bᵀ·dY; set = layer mod 2, as the step's
    private float[] pad;                               // (rp, max(S, Q, H)) a slot's padded rows: s·u, then Bᵀ
    private float[] dropped;                           // (maxIn, S) drop(x) of the forward
    private float[] dxAdapter;                         // (maxIn, S) one adapter path's dx before its mask
    private float[] dxQkv;                             // (D,S) the q, k, v adapter paths' dx, summed
    private final ThreadLocal<float[]> droppedX = ThreadLocal.withInitial(() -> new float[0]);   // weight-gradient thread: drop(x)

    /**
     * @param adapters the adapters that train, or null (every weight trains)
     * @param inputs   whether they reach the kernels as inputs (dynamic weights) rather than merged into baked ones
     * @param kernels  the step's kernels (the LoRA variants' slots)
     */
    LoraPath(ModelConfig c, LoraAdapters adapters, boolean inputs, TrainingKernels kernels, StepTimer timer) {
        this.adapters = adapters;
        this.inputs = adapters != null && inputs;
        this.dropout = adapters != null ? adapters.dropout() : LoraDropout.NONE;
        this.s = c.seqLen();
        this.d = c.dim();
        this.timer = timer;
        this.frozenNormGrads = adapters != null ? new float[Math.max(c.dim(), c.headDim())] : null;
        this.paddedRank = adapters != null ? new TrainingKernels.LoraInputs(adapters.rank(), adapters.targets()).paddedRank() : 0;
        if (!this.inputs) {
            slots = Map.of();
            return;
        }
        slots = Map.of(Name.SDPA_FWD, kernels.loraSlots(Name.SDPA_FWD.id()), Name.FFN_FUSED, kernels.loraSlots(Name.FFN_FUSED.id()));
        int n = TrainOptions.LORA_TARGETS.size(), r = adapters.rank(), maxIn = Math.max(Math.max(c.dim(), c.hiddenDim()), c.qDim());
        u = new float[c.nLayers()][n][];
        for (float[][] row : u) for (String t : adapters.targets()) row[index(t)] = new float[r * s];
        if (dropout.active()) {
            mask = new long[c.nLayers()][n][];
            dropped = new float[maxIn * s];
        }
        g = new float[2][n][];
        for (float[][] set : g) for (String t : adapters.targets()) set[index(t)] = new float[r * s];
        dxAdapter = new float[maxIn * s];
        dxQkv = new float[d * s];
        int widest = slots.values().stream().flatMap(m -> m.values().stream()).mapToInt(LoraSlot::width).max().orElse(0);   // q, k: padded heads
        pad = new float[paddedRank * Math.max(s, Math.max(widest, Math.max(c.qDim(), c.hiddenDim())))];
    }

    private static int index(String target) { return TrainOptions.LORA_TARGETS.indexOf(target); }

    /** Whether every weight trains (no adapters): the classifier, embedding and norm gradients are formed. */
    boolean trainsBase() { return adapters == null; }

    /** Where RMSNorm/QK-norm backward accumulate a norm weight's gradient: grads, or with LoRA (frozen norms) a scratch. */
    float[] normGrads(float[] grads) { return adapters == null ? grads : frozenNormGrads; }

    /** The offset of a norm weight in {@link #normGrads}. */
    int normOffset(ParameterView norm) { return adapters == null ? norm.offset() : 0; }

    /** Whether target's adapter path runs on the CPU beside the base kernels (adapters as inputs, target adapted). */
    private boolean at(String target) { return inputs && adapters.adapts(target); }

    /** Before a forward: the masks' sequence number (−1: none, validation), and the byte counts start again. */
    void beginForward(long sequence) {
        this.sequence = dropout.active() ? sequence : -1;
        activationBytes = 0;
        weightBytes = 0;
    }

    /** Activation bytes (s·u) written into kernel inputs since {@link #beginForward}. */
    long activationBytes() { return activationBytes; }

    /** Weight bytes (Bᵀ) written into kernel inputs since {@link #beginForward}. */
    long weightBytes() { return weightBytes; }

    // -----------------------------------------------------------------------------------------------------------------
    // forward

    /** u (r,S) = A·drop(x) of layer l's adapted target, kept for the backward; x is (in,S). Draws the step's mask. */
    private float[] project(int l, String target, float[] x, int in) {
        try (var _ = timer.phase(Phase.CPU)) {
            int ti = index(target);
            float[] ut = u[l][ti];
            if (sequence >= 0) {
                long[] bits = mask[l][ti];
                if (bits == null) bits = mask[l][ti] = new long[(in * s + 63) >>> 6];
                dropout.mask(dropout.key(sequence, l, ti), bits, in * s);
                dropout.apply(x, bits, dropped, in * s);
                adapters.project(l, target, dropped, ut);
            } else adapters.project(l, target, x, ut);
            return ut;
        }
    }

    /**
     * Writes the LoRA variant's inputs of sdpaFwd (q, k, v) or ffnFused (w1, w3) for layer l, x (in,S) the kernel's
     * activation: per adapted target s·u (r,S) and Bᵀ (r,OC) into its slot, zero rows up to the padded rank.
     */
    void writeInputs(TensorBuffer in, Name kernel, PackedLayout layout, int l, float[] x, int inDim) {
        for (var e : slots.getOrDefault(kernel, Map.of()).entrySet()) {
            String target = e.getKey();
            LoraSlot slot = e.getValue();
            float[] ut = project(l, target, x, inDim);
            try (var _ = timer.phase(Phase.IO)) {
                int r = adapters.rank(), rp = paddedRank, oc = adapters.b(l, target).rows(), ocp = slot.width();
                float[] ad = adapters.data();
                float sc = adapters.scale();
                Arrays.fill(pad, 0, rp * Math.max(s, oc), 0f);
                for (int i = 0; i < r * s; i++) pad[i] = sc * ut[i];
                in.writeColumns(slot.channel(), rp, layout.start(slot.u()), s, pad, 0, s);
                activationBytes += (long) rp * s * in.dtype().byteSize();
                // Bᵀ (r, OC): channel j, column slot.column(o) ← B[o, j] (q, k: zero columns after each padded head, R4)
                int bo = adapters.b(l, target).offset();
                if (ocp != oc) Arrays.fill(pad, 0, r * ocp, 0f);
                for (int o = 0; o < oc; o++) for (int j = 0; j < r; j++) pad[j * ocp + slot.column(o)] = ad[bo + o * r + j];
                Arrays.fill(pad, r * ocp, rp * ocp, 0f);
                in.writeColumns(slot.channel(), rp, layout.start(slot.bT()), ocp, pad, 0, ocp);
                weightBytes += (long) rp * ocp * in.dtype().byteSize();
            }
        }
    }

    /** o and w2, whose outputs meet the residual on the CPU: y (out,S) += α·s·B·(A·drop(x)), x (in,S). */
    void addForward(int l, String target, float[] x, int in, float alpha, float[] y) {
        if (at(target)) adapters.addUp(l, target, project(l, target, x, in), alpha * adapters.scale(), y);
    }

    // -----------------------------------------------------------------------------------------------------------------
    // backward

    /**
     * The adapter path of one adapted target, dY (out,S) its output's gradient: g = Bᵀ·dY, and dx (in,S) +=
     * s·mask/(1−p) ⊙ (Aᵀ·g). The adapter gradients need g, u and drop(x): {@link #weightGrad}.
     */
    void backward(int l, String target, float[] dY, float[] dx, int in) {
        if (!at(target)) return;
        try (var _ = timer.phase(Phase.CPU)) {
            int ti = index(target);
            float[] gt = g[l & 1][ti];
            adapters.backProject(l, target, dY, gt);
            if (sequence < 0) adapters.backDown(l, target, gt, adapters.scale(), 1f, dx);
            else {
                adapters.backDown(l, target, gt, 1f, 0f, dxAdapter);
                dropout.addMasked(dx, dxAdapter, adapters.scale(), mask[l][ti], in * s);
            }
        }
    }

    /** The q, k, v adapter paths of layer l: their dx summed into a scratch (D,S), added to the kernels' by {@link #addQkvDx}. */
    void qkvBackward(int l, float[] dq, float[] dk, float[] dv) {
        if (!inputs) return;
        Arrays.fill(dxQkv, 0f);
        backward(l, "q", dq, dxQkv, d);
        backward(l, "k", dk, dxQkv, d);
        backward(l, "v", dv, dxQkv, d);
    }

    /** dx (D,S) += the q, k, v adapter paths' dx of the last {@link #qkvBackward}. */
    void addQkvDx(float[] dx) {
        if (!inputs) return;
        for (int i = 0; i < d * s; i++) dx[i] += dxQkv[i];
    }

    /**
     * On the weight-gradient thread: the adapter gradients of layer l's target (nothing if it is not adapted), dY (out,S)
     * and x (in,S) the projection's output gradient and input. Merged: from dY and x. As inputs: dB += s·dY·uᵀ,
     * dA += s·g·drop(x)ᵀ, with drop(x) rebuilt from the forward's mask.
     */
    void weightGrad(float[] grads, int l, String target, float[] dY, float[] x, int in) {
        if (!adapters.adapts(target)) return;
        if (!inputs) {
            adapters.accumulateGradients(grads, l, target, dY, x);
            return;
        }
        int ti = index(target);
        float[] xd = x;
        if (sequence >= 0) {
            xd = droppedX.get();
            if (xd.length < in * s) droppedX.set(xd = new float[in * s]);
            dropout.apply(x, mask[l][ti], xd, in * s);
        }
        adapters.accumulateGradients(grads, l, target, dY, u[l][ti], g[l & 1][ti], xd);
    }
}
