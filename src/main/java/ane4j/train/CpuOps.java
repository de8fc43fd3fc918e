package ane4j.train;

import ane4j.blas.Parallel;
import ane4j.blas.VectorMath;
import ane4j.model.ModelConfig;
import ane4j.model.RopeStyle;

/**
 * The CPU half of the training step, in the channel-first layout the kernels use: an activation (C, S) is stored as
 * {@code x[c*S + s]}, so copying to and from kernel tensors is a straight copy.
 * <pre>Legend: S = seqLen, D = dim, V = vocab, NH/NKV = query/KV heads, HD = headDim, Q = NH·HD, KV = NKV·HD.</pre>
 * Forward/backward pairs sit side by side; gradient buffers carry a {@code d} prefix and are accumulated (+=) where noted.
 */
public final class CpuOps {
    private CpuOps() {}

    // -----------------------------------------------------------------------------------------------------------------
    // RMSNorm over channels, per position: out = x · (mean_c(x²) + eps)^(−1/2) · w

    /** out (C,S), x (C,S), w (C); rrms (S) receives the reciprocal RMS of each position for the backward. */
    public static void rmsnormForward(float[] out, float[] rrms, float[] x, float[] w, int wOffset, int channels, int seq, float eps) {
        // mean of squares over channels, per position: rows of x streamed in order, sums in double
        double[] ss = new double[seq];
        for (int c = 0; c < channels; c++)
            for (int s = 0, i = c * seq; s < seq; s++, i++) ss[s] += (double) x[i] * x[i];
        for (int s = 0; s < seq; s++) rrms[s] = (float) (1.0 / Math.sqrt(ss[s] / channels + eps));
        parallelRows(channels, seq, (c0, c1) -> {
            for (int c = c0; c < c1; c++) {
                float wc = w[wOffset + c];
                for (int s = 0, i = c * seq; s < seq; s++, i++) out[i] = x[i] * rrms[s] * wc;
            }
        });
    }

    /**
     * dx (C,S) = r·(w·dout − x·r²·Σ_c(dout·w·x)/C); dw (C) += Σ_s dout·x·r. (Not maderix's w·r·(dout − …): docs/ane-facts.md §5.6.)
     * dx is overwritten; dw is accumulated.
     */
    public static void rmsnormBackward(float[] dx, float[] dw, int dwOffset, float[] dout, float[] x, float[] w, int wOffset,
                                       float[] rrms, int channels, int seq) {
        float[] dot = new float[seq];
        for (int c = 0; c < channels; c++) {
            float wc = w[wOffset + c];
            for (int s = 0, i = c * seq; s < seq; s++, i++) dot[s] += dout[i] * wc * x[i];
        }
        // k[s] = r³·dot/C, so dx = r·w·dout − x·k
        float[] k = new float[seq];
        for (int s = 0; s < seq; s++) { float r = rrms[s]; k[s] = r * r * dot[s] / channels * r; }
        parallelRows(channels, seq, (c0, c1) -> {
            for (int c = c0; c < c1; c++) {
                float wc = w[wOffset + c];
                double dwc = 0;
                for (int s = 0, i = c * seq; s < seq; s++, i++) {
                    float r = rrms[s];
                    dx[i] = r * wc * dout[i] - x[i] * k[s];
                    dwc += dout[i] * x[i] * r;
                }
                dw[dwOffset + c] += (float) dwc;
            }
        });
    }

    /** Rows [0, rows) of a (rows, seq) array in parallel blocks (rows are independent): the caller's body gets [r0, r1). */
    static void parallelRows(int rows, int seq, java.util.function.BiConsumer<Integer, Integer> body) {
        int blocks = (long) rows * seq < 1 << 15 ? 1 : Math.min(rows, 8);
        if (blocks == 1) { body.accept(0, rows); return; }
        Parallel.forEach(blocks, b -> body.accept(rows * b / blocks, rows * (b + 1) / blocks));
    }

    // -----------------------------------------------------------------------------------------------------------------
    // QK-norm: RMSNorm over the head dimension of each head, at each position (Qwen3)

    /**
     * Backward of y = x·r·w with r = (mean_j(x²) + eps)^(−1/2) over each head's HD elements; x (n·HD, S) is the pre-norm
     * projection, dy (n·HD, S). dx overwritten, dw (HD) accumulated.
     */
    public static void headNormBackward(float[] dx, float[] dw, int dwOffset, float[] dy, float[] x, float[] w, int wOffset,
                                        int heads, int hd, int seq, float eps) {
        for (int h = 0; h < heads; h++) {
            int base = h * hd;
            for (int s = 0; s < seq; s++) {
                // recompute r for this head and position
                double ss = 0, dot = 0;
                for (int j = 0; j < hd; j++) {
                    float v = x[(base + j) * seq + s];
                    ss += v * v;
                    dot += dy[(base + j) * seq + s] * w[wOffset + j] * v;
                }
                float r = (float) (1.0 / Math.sqrt(ss / hd + eps));
                for (int j = 0; j < hd; j++) {
                    int i = (base + j) * seq + s;
                    dx[i] = r * (w[wOffset + j] * dy[i] - x[i] * r * r * (float) dot / hd);
                    dw[dwOffset + j] += dy[i] * x[i] * r;
                }
            }
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // RoPE: y = x·cos + rotate(x)·sin, rotating pairs (a, b) = (2i, 2i+1) (interleaved) or (i, i+HD/2) (half)

    /**
     * In place on d (n·HD, S): the inverse rotation, d_a' = d_a·cos + d_b·sin, d_b' = −d_a·sin + d_b·cos. cosT and sinT
     * are the (S, HD) tables of {@link RopeTables} channel-first, (HD, S) ({@link #channelFirst}), so every inner loop
     * streams S contiguous values of d and of the tables.
     */
    public static void ropeBackward(float[] d, ModelConfig c, int heads, float[] cosT, float[] sinT) {
        int hd = c.headDim(), seq = c.seqLen();
        boolean interleaved = c.ropeStyle() == RopeStyle.INTERLEAVED;
        for (int h = 0; h < heads; h++)
            for (int i = 0; i < hd / 2; i++) {
                int ja = interleaved ? 2 * i : i, jb = interleaved ? 2 * i + 1 : i + hd / 2;
                int ra = (h * hd + ja) * seq, rb = (h * hd + jb) * seq, ta = ja * seq;
                for (int s = 0; s < seq; s++) {
                    float co = cosT[ta + s], si = sinT[ta + s];
                    float da = d[ra + s], db = d[rb + s];
                    d[ra + s] = da * co + db * si;
                    d[rb + s] = -da * si + db * co;
                }
            }
    }

    /** A (rows, cols) table as (cols, rows): the RoPE tables (S, HD) as (HD, S) for {@link #ropeBackward}. */
    public static float[] channelFirst(float[] table, int rows, int cols) {
        float[] t = new float[rows * cols];
        for (int r = 0; r < rows; r++) for (int j = 0; j < cols; j++) t[j * rows + r] = table[r * cols + j];
        return t;
    }

    // -----------------------------------------------------------------------------------------------------------------
    // GQA: query head i uses KV head i / (NH/NKV)

    /** kv (KV,S) → tiled (Q,S). */
    public static void tileKv(float[] tiled, float[] kv, int nHeads, int nKvHeads, int hd, int seq) {
        int group = nHeads / nKvHeads, block = hd * seq;
        for (int h = 0; h < nHeads; h++) System.arraycopy(kv, (h / group) * block, tiled, h * block, block);
    }

    /** full (Q,S) → kv (KV,S) summed over each group of query heads (overwrites kv). */
    public static void reduceKv(float[] kv, float[] full, int nHeads, int nKvHeads, int hd, int seq) {
        int group = nHeads / nKvHeads, block = hd * seq;
        java.util.Arrays.fill(kv, 0, nKvHeads * block, 0f);
        for (int h = 0; h < nHeads; h++) {
            int src = h * block, dst = (h / group) * block;
            for (int i = 0; i < block; i++) kv[dst + i] += full[src + i];
        }
    }

    /**
     * One row of causally masked attention probabilities in place: row (S) the scores of query position i against keys
     * 0..S−1; keys 0..i get softmax over them, keys after i zero (three-stage attention's middle stage).
     */
    public static void causalSoftmax(float[] row, int i, int seq) {
        float max = Float.NEGATIVE_INFINITY;
        for (int j = 0; j <= i; j++) max = Math.max(max, row[j]);
        double sum = 0;
        for (int j = 0; j <= i; j++) sum += (row[j] = (float) Math.exp(row[j] - max));
        for (int j = 0; j < seq; j++) row[j] = j <= i ? (float) (row[j] / sum) : 0f;
    }

    // -----------------------------------------------------------------------------------------------------------------
    // SwiGLU backward: gate = silu(h1) ⊙ h3, silu(x) = x·σ(x)

    /** From dgate (H,S): dh1 = dgate·h3·σ(h1)·(1 + h1·(1 − σ(h1))), dh3 = dgate·silu(h1). */
    public static void swigluBackward(float[] dh1, float[] dh3, float[] dgate, float[] h1, float[] h3, int n) {
        int chunks = (n + SWIGLU_CHUNK - 1) / SWIGLU_CHUNK;
        Parallel.forEach(chunks, k -> {
            int from = k * SWIGLU_CHUNK, len = Math.min(SWIGLU_CHUNK, n - from);
            // sig = 1/(1 + exp(−h1)), through a scratch row for the vector exp
            float[] sig = SWIGLU_SCRATCH.get();
            for (int i = 0; i < len; i++) sig[i] = -h1[from + i];
            VectorMath.expInPlace(sig, len);
            for (int i = 0; i < len; i++) {
                int j = from + i;
                float sg = 1f / (1f + sig[i]);
                dh1[j] = dgate[j] * h3[j] * sg * (1f + h1[j] * (1f - sg));
                dh3[j] = dgate[j] * h1[j] * sg;
            }
        });
    }

    private static final int SWIGLU_CHUNK = 1 << 14;
    private static final ThreadLocal<float[]> SWIGLU_SCRATCH = ThreadLocal.withInitial(() -> new float[SWIGLU_CHUNK]);

    // -----------------------------------------------------------------------------------------------------------------
    // classifier loss: mean cross-entropy over the counted positions

    /**
     * logits (V,S) in, dlogits (V,S) out = (softmax − onehot)/n · gradScale (dlogits may be logits: computed in place);
     * returns the mean loss over the n positions whose target is not −1. A target of −1 (a prompt token under a
     * completion mask) is ignored: no loss, no gradient, not counted in n — torch's cross_entropy(ignore_index=-1).
     * Without −1 targets n = S and the result is bit-identical to the plain mean.
     */
    public static float crossEntropy(float[] dlogits, float[] logits, int[] targets, int vocab, int seq, float gradScale) {
        // the vocabulary is cut into CE_BLOCKS row ranges (a fixed count: the result does not depend on the machine);
        // every pass streams its rows of S contiguous logits, so each inner loop is a long vectorisable row
        int blocks = Math.min(CE_BLOCKS, vocab);
        // max over the vocabulary per position, for numerical stability
        float[][] maxes = new float[blocks][];
        Parallel.forEach(blocks, b -> {
            float[] m = new float[seq];
            java.util.Arrays.fill(m, Float.NEGATIVE_INFINITY);
            for (int v = vocab * b / blocks, ve = vocab * (b + 1) / blocks; v < ve; v++)
                for (int j = 0, i = v * seq; j < seq; j++, i++) m[j] = Math.max(m[j], logits[i]);
            maxes[b] = m;
        });
        float[] max = maxes[0];
        for (int b = 1; b < blocks; b++) for (int j = 0; j < seq; j++) max[j] = Math.max(max[j], maxes[b][j]);
        // the targets' logits, read before dlogits (which may be logits itself) is written
        float[] target = new float[seq];
        for (int j = 0; j < seq; j++) if (targets[j] >= 0) target[j] = logits[targets[j] * seq + j];
        // e = exp(logit − max) into dlogits (or a scratch row); softmax denominators: float over ≤ 256 rows, then double
        double[][] sums = new double[blocks][];
        Parallel.forEach(blocks, b -> {
            double[] sum = new double[seq];
            float[] part = new float[seq], row = new float[seq];
            int n = 0;
            for (int v = vocab * b / blocks, ve = vocab * (b + 1) / blocks; v < ve; v++) {
                int i = v * seq;
                for (int j = 0; j < seq; j++) row[j] = logits[i + j] - max[j];
                float[] e = dlogits != null ? dlogits : row;
                int at = dlogits != null ? i : 0;
                VectorMath.exp(row, 0, e, at, seq);
                for (int j = 0; j < seq; j++) part[j] += e[at + j];
                if (++n == 256 || v == ve - 1) {
                    for (int j = 0; j < seq; j++) { sum[j] += part[j]; part[j] = 0f; }
                    n = 0;
                }
            }
            sums[b] = sum;
        });
        double[] sum = new double[seq];
        for (double[] part : sums) for (int j = 0; j < seq; j++) sum[j] += part[j];
        // the mean over the positions that count, as torch's cross_entropy(ignore_index=-1): a −1 target (a prompt
        // token under a completion mask) adds nothing to the loss and gets no gradient
        int counted = 0;
        for (int j = 0; j < seq; j++) if (targets[j] >= 0) counted++;
        int n = Math.max(counted, 1);
        double loss = 0;
        for (int j = 0; j < seq; j++) {
            int t = targets[j];
            if (t >= 0) loss -= target[j] - max[j] - Math.log(sum[j]);
        }
        if (dlogits != null) {
            // dlogits = (softmax − onehot)/n · gradScale at counted positions, 0 at ignored ones
            float[] mul = new float[seq];
            for (int j = 0; j < seq; j++) mul[j] = targets[j] >= 0 ? (float) (gradScale / (sum[j] * n)) : 0f;
            Parallel.forEach(blocks, b -> {
                for (int v = vocab * b / blocks, ve = vocab * (b + 1) / blocks; v < ve; v++)
                    for (int j = 0, i = v * seq; j < seq; j++, i++) dlogits[i] *= mul[j];
            });
            float sub = gradScale / n;
            for (int j = 0; j < seq; j++) {
                int t = targets[j];
                if (t >= 0) dlogits[t * seq + j] -= sub;
            }
        }
        return (float) (loss / n);
    }

    /** Vocabulary row ranges of {@link #crossEntropy}. */
    private static final int CE_BLOCKS = 16;
}
