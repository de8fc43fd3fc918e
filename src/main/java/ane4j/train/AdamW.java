package ane4j.train;

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

    /** One update at step t (1-based) of every view; {@code grads} already unscaled and clipped. Elementwise, in parallel chunks. */
    public void step(List<ParameterView> views, float[] params, float[] grads, float[] m, float[] v, int t, float lr) {
        double bc1 = 1 - Math.pow(beta1, t), bc2 = 1 - Math.pow(beta2, t);
        float stepSize = (float) (lr / bc1), bc2Sqrt = (float) Math.sqrt(bc2);
        // (view, chunk) tasks
        List<int[]> tasks = new java.util.ArrayList<>();
        for (int k = 0; k < views.size(); k++)
            for (int from = views.get(k).offset(), end = views.get(k).end(); from < end; from += CHUNK) tasks.add(new int[] {k, from, Math.min(end, from + CHUNK)});
        tasks.parallelStream().forEach(task -> {
            float decay = views.get(task[0]).decay() ? 1f - lr * weightDecay : 1f;
            for (int i = task[1], end = task[2]; i < end; i++) {
                float g = grads[i];
                m[i] = beta1 * m[i] + (1 - beta1) * g;
                v[i] = beta2 * v[i] + (1 - beta2) * g * g;
                params[i] = params[i] * decay - stepSize * m[i] / ((float) Math.sqrt(v[i]) / bc2Sqrt + eps);
            }
        });
    }

    /** Scales grads so their global L2 norm is at most {@code maxNorm} (torch.nn.utils.clip_grad_norm_); returns the norm before. */
    public static float clipGlobalNorm(float[] grads, float maxNorm) {
        // sum of squares per fixed chunk (in parallel), then over the chunks in order: deterministic for any thread count
        int chunks = (grads.length + CHUNK - 1) / CHUNK;
        double[] partial = new double[chunks];
        java.util.stream.IntStream.range(0, chunks).parallel().forEach(c -> {
            double ss = 0;
            for (int i = c * CHUNK, end = Math.min(grads.length, i + CHUNK); i < end; i++) ss += (double) grads[i] * grads[i];
            partial[c] = ss;
        });
        double ss = 0;
        for (double x : partial) ss += x;
        float norm = (float) Math.sqrt(ss);
        if (maxNorm > 0 && norm > maxNorm) {
            float k = maxNorm / (norm + 1e-6f);
            java.util.stream.IntStream.range(0, chunks).parallel().forEach(c -> {
                for (int i = c * CHUNK, end = Math.min(grads.length, i + CHUNK); i < end; i++) grads[i] *= k;
            });
        }
        return norm;
    }
}
