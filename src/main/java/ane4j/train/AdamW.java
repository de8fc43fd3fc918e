package ane4j.train;

import ane4j.blas.Parallel;
import ane4j.blas.VectorMath;
import ane4j.model.ParameterView;
import java.util.List;

/**
 * AdamW over the flat parameter layout, exactly as {@code torch.optim.AdamW}
 * (https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html):
 * <pre>
 *   w ← w·(1 − lr·wd)                                  (decoupled weight decay; wd = 0 for norm weights)
 *   m ← β1·m + (1 − β1)·g,   v ← β2·v + (1 − β2)·g²
 *   w ← w − lr/(1 − β1^t) · m / (sqrt(v)/sqrt(1 − β2^t) + eps)
 * </pre>
 * with {@code lr} from its {@link Schedule} at each step.
 */
public final class AdamW {
    private final float beta1, beta2, eps, weightDecay;

    public AdamW(float beta1, float beta2, float eps, float weightDecay) {
        if (!(beta1 >= 0 && beta1 < 1)) throw new IllegalArgumentException("[adamw] beta1 " + beta1 + " must be in [0, 1)");
        if (!(beta2 >= 0 && beta2 < 1)) throw new IllegalArgumentException("[adamw] beta2 " + beta2 + " must be in [0, 1)");
        if (!(eps > 0)) throw new IllegalArgumentException("[adamw] eps " + eps + " must be positive");
        if (!(weightDecay >= 0)) throw new IllegalArgumentException("[adamw] weight decay " + weightDecay + " must be ≥ 0");
        this.beta1 = beta1;
        this.beta2 = beta2;
        this.eps = eps;
        this.weightDecay = weightDecay;
    }

    /** Elements per parallel task: fixed, so results never depend on the thread count. */
    static final int CHUNK = 1 << 18;

    /**
     * One update at step t (1-based) with {@code g = gradMul·grads[i]} (unscaling and clipping folded into one factor);
     * with {@code zeroGrads} each gradient is cleared as it is used, so the whole update is a single pass over memory.
     */
    public void step(List<ParameterView> views, float[] params, float[] grads, float[] m, float[] v, int t, float lr, float gradMul, boolean zeroGrads) {
        double bc1 = 1 - Math.pow(beta1, t), bc2 = 1 - Math.pow(beta2, t);
        float stepSize = (float) (lr / bc1), bc2Sqrt = (float) Math.sqrt(bc2);
        // (view, chunk) tasks
        List<int[]> tasks = new java.util.ArrayList<>();
        for (int k = 0; k < views.size(); k++)
            for (int from = views.get(k).offset(), end = views.get(k).end(); from < end; from += CHUNK) tasks.add(new int[] {k, from, Math.min(end, from + CHUNK)});
        Parallel.forEach(tasks.size(), ti -> {
            int[] task = tasks.get(ti);
            float decay = views.get(task[0]).decay() ? 1f - lr * weightDecay : 1f;
            // the gradient is cleared in the same loop that reads it: one pass over the four arrays
            if (zeroGrads) update(task[1], task[2], params, grads, m, v, gradMul, decay, stepSize, bc2Sqrt, true);
            else update(task[1], task[2], params, grads, m, v, gradMul, decay, stepSize, bc2Sqrt, false);
        });
    }

    private void update(int from, int end, float[] params, float[] grads, float[] m, float[] v, float gradMul, float decay,
                        float stepSize, float bc2Sqrt, boolean zeroGrads) {
        for (int i = from; i < end; i++) {
            float g = grads[i] * gradMul;
            if (zeroGrads) grads[i] = 0f;
            m[i] = beta1 * m[i] + (1 - beta1) * g;
            v[i] = beta2 * v[i] + (1 - beta2) * g * g;
            params[i] = params[i] * decay - stepSize * m[i] / ((float) Math.sqrt(v[i]) / bc2Sqrt + eps);
        }
    }

    /** The learning rate per step: linear warm-up to {@code maxLr}, then cosine decay to {@code minLr} at the last step (docs/ane-facts.md §5.4). */
    public record Schedule(float maxLr, float minLr, int warmup, int totalSteps) {
        public float at(long step) {
            if (step < warmup) return maxLr * (step + 1) / warmup;
            if (totalSteps <= warmup) return maxLr;
            double progress = Math.min(1.0, (double) (step - warmup) / (totalSteps - warmup));
            return (float) (minLr + 0.5 * (maxLr - minLr) * (1 + Math.cos(Math.PI * progress)));
        }
    }

    /**
     * Σ (k·grads[i])², in fixed chunks on all cores, each summed in a fixed order ({@link VectorMath#sumOfSquares}: 8
     * interleaved float sums per 1024 elements, then double), so the result never depends on the thread count or on
     * the Vector API. Not finite if any gradient is not.
     */
    public static double sumOfSquares(float[] grads, float k) {
        int chunks = (grads.length + CHUNK - 1) / CHUNK;
        double[] partial = new double[chunks];
        Parallel.forEach(chunks, c -> partial[c] = VectorMath.sumOfSquares(grads, c * CHUNK, Math.min(grads.length, (c + 1) * CHUNK), k));
        double ss = 0;
        for (double x : partial) ss += x;
        return ss;
    }

    /** The factor torch.nn.utils.clip_grad_norm_ scales by: maxNorm/(norm + 1e-6) when norm exceeds maxNorm, else 1. */
    public static float clipFactor(float norm, float maxNorm) {
        return maxNorm > 0 && norm > maxNorm ? maxNorm / (norm + 1e-6f) : 1f;
    }
}
