package ane4j.train;

import ane4j.backend.TensorBuffer;
import ane4j.blas.Parallel;
import ane4j.blas.VectorMath;

/**
 * The loss of a {@link GraphStep} computed on the CPU from the graph's logits, as the hand-written step does it
 * ({@link CpuOps#crossEntropy}) and as the ANE's split wants it (maderix/ANE and the hand-written kernels put the
 * classifier's loss on the CPU): the differentiated graph ends at the logits [N, C], this head forms the mean
 * cross-entropy against integer labels [N] and its gradient d_logits in one pass per row, and the backward program
 * takes d_logits as its upstream gradient ({@code Grad.split} with a non-scalar loss).
 *
 * <pre>
 *   loss      = (1/n) Σ_{r counted} ( log Σ_c exp(logits[r, c] − max_r) − (logits[r, label_r] − max_r) )
 *   d_logits  = (softmax(logits[r]) − onehot(label_r)) / n · scale      (0 on rows whose label is −1)
 *   n         = the number of rows whose label is not −1 (torch's cross_entropy(ignore_index=-1))
 * </pre>
 * The same formulas as {@link CpuOps#crossEntropy}, on rows [N, C] (classes last, as {@code crossEntropyLabels} takes
 * them) instead of its columns (V, S). Rows are independent and each is computed by one thread in a fixed order, so the
 * result does not depend on the machine's thread count.
 *
 * @param logits the graph output holding the logits, rank 2 [N, C]
 * @param labels the name of the int32 [N] labels in the step's data (not an input of the graph)
 */
public record CpuLossHead(String logits, String labels) {
    public CpuLossHead {
        if (logits == null || labels == null || logits.isEmpty() || labels.isEmpty())
            throw new IllegalArgumentException("[graph] a CPU loss head needs the logits output and the labels' data name; give both");
    }

    /** Row scratch of {@link #crossEntropy}: softmax sums in float over at most this many columns, then in double. */
    private static final int SUM_CHUNK = 256;

    /**
     * The mean cross-entropy of logits [rows, cols] (row-major) against {@code labels} (−1: ignored); when
     * {@code dlogits} is not null (it may be {@code logits}: in place) it receives (softmax − onehot)/n · gradScale.
     */
    public static float crossEntropy(float[] dlogits, float[] logits, int[] labels, int rows, int cols, float gradScale) {
        if (labels.length != rows) throw new IllegalArgumentException("[graph] " + labels.length + " labels for " + rows + " rows of logits; give one label per row");
        int counted = 0;
        for (int r = 0; r < rows; r++) {
            int t = labels[r];
            if (t < -1 || t >= cols) throw new IllegalArgumentException("[graph] label " + t + " of row " + r + " is outside 0.." + (cols - 1) + " (or −1 to ignore the row)");
            if (t >= 0) counted++;
        }
        int n = Math.max(counted, 1);
        double[] rowLoss = new double[rows];
        int blocks = Math.min(rows, 16);   // a fixed split of the rows: the same bits on every machine
        Parallel.forEach(blocks, b -> {
            float[] e = dlogits == null ? new float[cols] : null;
            for (int r = rows * b / blocks, re = rows * (b + 1) / blocks; r < re; r++) {
                int at = r * cols, t = labels[r];
                // max over the row, for numerical stability; the label's logit read before dlogits (maybe logits) is written
                float max = VectorMath.max(logits, at, cols);
                float target = t >= 0 ? logits[at + t] : 0f;
                // e = exp(logit − max), into dlogits' row (or a scratch row); the sum: float over ≤ SUM_CHUNK, then double
                float[] out = dlogits != null ? dlogits : e;
                int o = dlogits != null ? at : 0;
                for (int c = 0; c < cols; c++) out[o + c] = logits[at + c] - max;
                VectorMath.exp(out, o, out, o, cols);
                double sum = 0;
                for (int c = 0; c < cols; c += SUM_CHUNK) {
                    float part = 0f;
                    for (int k = c, ke = Math.min(cols, c + SUM_CHUNK); k < ke; k++) part += out[o + k];
                    sum += part;
                }
                if (t < 0) {
                    if (dlogits != null) java.util.Arrays.fill(dlogits, at, at + cols, 0f);
                    continue;
                }
                rowLoss[r] = Math.log(sum) - (target - max);
                if (dlogits != null) {
                    float mul = (float) (gradScale / (sum * n));
                    for (int c = 0; c < cols; c++) dlogits[at + c] *= mul;
                    dlogits[at + t] -= gradScale / n;
                }
            }
        });
        double loss = 0;
        for (int r = 0; r < rows; r++) loss += rowLoss[r];
        return (float) (loss / n);
    }

    /**
     * The head on one batch: the mean cross-entropy of {@code logits} against {@code labels}; when {@code dLogits} is
     * not null it is filled with d loss / d logits times {@code scale}. {@code scratch} holds at least logits.count()
     * floats.
     */
    float apply(TensorBuffer logits, TensorBuffer labels, TensorBuffer dLogits, float scale, float[] scratch) {
        int[] shape = logits.shape();
        int rows = shape[0], cols = shape[1];
        if (labels == null) throw new IllegalArgumentException("[graph] no data for the labels '" + labels() + "' of the CPU loss head; give int32 [" + rows + "]");
        if (labels.count() != rows) throw new IllegalArgumentException("[graph] labels '" + labels() + "' " + labels.type() + " for logits " + logits.type() + "; give int32 [" + rows + "]");
        int[] l = new int[rows];
        for (int r = 0; r < rows; r++) l[r] = (int) labels.get(r);
        // fp16 → float row by row in parallel (the conversions are the longest part after exp)
        int blocks = Math.min(rows, 16);
        Parallel.forEach(blocks, b -> {
            int from = rows * b / blocks, to = rows * (b + 1) / blocks;
            logits.copyTo((long) from * cols, scratch, from * cols, (to - from) * cols);
        });
        float loss = crossEntropy(dLogits == null ? null : scratch, scratch, l, rows, cols, scale);
        if (dLogits != null)
            Parallel.forEach(blocks, b -> {
                int from = rows * b / blocks, to = rows * (b + 1) / blocks;
                dLogits.copyFrom(scratch, from * cols, (long) from * cols, (to - from) * cols);
            });
        return loss;
    }
}
