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

    /** One update at step t (1-based) of every view; {@code grads} already unscaled and clipped. */
    public void step(List<ParameterView> views, float[] params, float[] grads, float[] m, float[] v, int t, float lr) {
        double bc1 = 1 - Math.pow(beta1, t), bc2 = 1 - Math.pow(beta2, t);
        float stepSize = (float) (lr / bc1), bc2Sqrt = (float) Math.sqrt(bc2);
        for (ParameterView view : views) {
            float decay = view.decay() ? 1f - lr * weightDecay : 1f;
            for (int i = view.offset(), end = view.end(); i < end; i++) {
                float g = grads[i];
                m[i] = beta1 * m[i] + (1 - beta1) * g;
                v[i] = beta2 * v[i] + (1 - beta2) * g * g;
                params[i] = params[i] * decay - stepSize * m[i] / ((float) Math.sqrt(v[i]) / bc2Sqrt + eps);
            }
        }
    }

    /** Scales grads so their global L2 norm is at most {@code maxNorm} (torch.nn.utils.clip_grad_norm_); returns the norm before. */
    public static float clipGlobalNorm(float[] grads, float maxNorm) {
        double ss = 0;
        for (float g : grads) ss += (double) g * g;
        float norm = (float) Math.sqrt(ss);
        if (maxNorm > 0 && norm > maxNorm) {
            float k = maxNorm / (norm + 1e-6f);
            for (int i = 0; i < grads.length; i++) grads[i] *= k;
        }
        return norm;
    }
}
