package ane4j.train;

import ane4j.model.ModelConfig;

import java.util.concurrent.Future;

/**
 * The float arrays of a {@link TrainingStep}, allocated once and reused by every step (no per-step garbage), as llm.c's
 * ActivationTensors: the forward's activations per layer, the backward's scratch, a shape on each.
 * <pre>Legend: S = seqLen, D = dim, H = hiddenDim, V = vocab, Q = nHeads·headDim, KV = nKvHeads·headDim, L = nLayers.</pre>
 * Activations are channel-first (C, S).
 */
final class StepBuffers {
    /** Saved forward activations of one layer; acts[L] holds the final norm's (x, xnorm, rrmsAtt). */
    static final class Activations {
        final float[] x;                               // (D,S) the block's input: the residual stream
        final float[] xnorm;                           // (D,S) rmsnorm(x)·rmsAtt, the q, k, v projections' input
        final float[] rrmsAtt;                         // (S) 1/rms(x) per position
        final float[] qRaw;                            // (Q,S) wq·xnorm before QK-norm (QK-norm models only)
        final float[] kRaw;                            // (KV,S) wk·xnorm before QK-norm (QK-norm models only)
        final float[] qRope;                           // (Q,S) queries after QK-norm and RoPE
        final float[] kRope;                           // (KV,S) keys after QK-norm and RoPE
        final float[] vh;                              // (KV,S) values wv·xnorm
        final float[] attn;                            // (Q,S) softmax(q·kᵀ/√HD + mask)·v, wo's input
        final float[] x2;                              // (D,S) x + α·wo·attn: the residual stream after attention
        final float[] x2norm;                          // (D,S) rmsnorm(x2)·rmsFfn, w1's and w3's input
        final float[] rrmsFfn;                         // (S) 1/rms(x2) per position
        final float[] h1;                              // (H,S) w1·x2norm
        final float[] h3;                              // (H,S) w3·x2norm
        final float[] gate;                            // (H,S) silu(h1)⊙h3, w2's input

        /** A block's activations, or with {@code last} only the final norm's (x, xnorm, rrmsAtt; the rest null). */
        Activations(ModelConfig c, boolean last) {
            int s = c.seqLen(), d = c.dim(), h = c.hiddenDim(), q = c.qDim(), kv = c.kvDim();
            boolean block = !last, qkNorm = block && c.qkNorm();
            x = new float[d * s];
            xnorm = new float[d * s];
            rrmsAtt = new float[s];
            qRaw = qkNorm ? new float[q * s] : null;
            kRaw = qkNorm ? new float[kv * s] : null;
            qRope = block ? new float[q * s] : null;
            kRope = block ? new float[kv * s] : null;
            vh = block ? new float[kv * s] : null;
            attn = block ? new float[q * s] : null;
            x2 = block ? new float[d * s] : null;
            x2norm = block ? new float[d * s] : null;
            rrmsFfn = block ? new float[s] : null;
            h1 = block ? new float[h * s] : null;
            h3 = block ? new float[h * s] : null;
            gate = block ? new float[h * s] : null;
        }
    }

    /**
     * Backward scratch of one layer. Two sets serve all layers (layer l uses set l mod 2): the weight-gradient thread
     * may still read layer l+1's set while layer l runs, and layer l−1 waits for layer l+1's last dW before reusing it.
     */
    static final class Gradients {
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

        Gradients(ModelConfig c) {
            int s = c.seqLen(), d = c.dim(), h = c.hiddenDim(), q = c.qDim(), kv = c.kvDim();
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

    final Activations[] acts;                          // [L+1] acts[l]: block l's; acts[L]: the final norm's
    final Gradients[] sets;                            // [2] the backward's scratch, layer l uses sets[l mod 2]
    private float[] logits;                            // (V,S) logits, overwritten in place by their gradient dlogits
    final float[] dxf;                                 // (D,S) the classifier's input gradient, before the final norm
    final float[] dy;                                  // (D,S) the residual stream's gradient at the current layer's output
    final float[] dtmp;                                // (D,S) a norm's output gradient: dx2norm, then dxnorm
    final float[] dxq;                                 // (D,S) wqᵀ·dq
    final float[] da;                                  // (Q,S) woᵀ·dO: the attention output's gradient
    final float[] kTiled, vTiled;                      // (Q,S) K and V tiled to the query heads (grouped-query attention only)
    final float[] dkFull, dvFull;                      // (Q,S) their gradients before the group sums (GQA only)
    final float[] dqRaw, dkRaw;                        // (Q,S), (KV,S) the raw projections' gradients (QK-norm only)
    private final int vs;

    StepBuffers(ModelConfig c) {
        int s = c.seqLen(), d = c.dim(), q = c.qDim(), kv = c.kvDim(), nl = c.nLayers();
        acts = new Activations[nl + 1];
        for (int l = 0; l <= nl; l++) acts[l] = new Activations(c, l == nl);
        sets = new Gradients[] {new Gradients(c), new Gradients(c)};
        vs = c.vocabSize() * s;
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

    /** The (V,S) logits, allocated at the first classifier (a step that never reaches it keeps V·S floats free). */
    float[] logits() {
        if (logits == null) logits = new float[vs];
        return logits;
    }
}
