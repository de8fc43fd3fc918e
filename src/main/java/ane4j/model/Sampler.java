package ane4j.model;

import java.util.Arrays;

/**
 * Picks the next token from logits, as llama2.c's sampler: temperature 0 is argmax; otherwise softmax of
 * logits/temperature, then top-p (nucleus) sampling when 0 &lt; topP &lt; 1, else sampling from the full distribution.
 */
public final class Sampler {
    private final float temperature, topP;
    private final Rng rng;
    private long[] candidates = new long[0];   // top-p's sort keys, kept from token to token

    public Sampler(float temperature, float topP, long seed) {
        if (!(temperature >= 0) || Float.isInfinite(temperature))
            throw new IllegalArgumentException("[sampler] temperature must be ≥ 0, got " + temperature);
        if (!(topP >= 0) || topP > 1) throw new IllegalArgumentException("[sampler] topP must be in [0, 1], got " + topP);
        this.temperature = temperature;
        this.topP = topP;
        this.rng = new Rng(seed);
    }

    public Rng rng() { return rng; }

    /**
     * The next token; {@code logits} (V) is overwritten with probabilities unless temperature is 0. A NaN logit counts as
     * -Inf (never picked); a +Inf logit is picked (the first one); when no logit is finite the model's numbers are broken,
     * and that is said in one line (a NaN softmax made top-p index -1: the 2026-12-05 reliability report, H-b).
     */
    public int sample(float[] logits) {
        int usable = 0, inf = -1;
        for (int i = 0; i < logits.length; i++) {
            if (Float.isNaN(logits[i])) logits[i] = Float.NEGATIVE_INFINITY;
            else if (logits[i] != Float.NEGATIVE_INFINITY) usable++;
            if (inf < 0 && logits[i] == Float.POSITIVE_INFINITY) inf = i;
        }
        if (usable == 0)
            throw new IllegalStateException("[sampler] every one of the " + logits.length + " logits is NaN or -Inf: the model's weights or"
                    + " activations are not finite; check the model file (ane4j refuses non-finite weights at load)");
        if (inf >= 0) return inf;
        if (temperature == 0f) return argmax(logits);
        for (int i = 0; i < logits.length; i++) logits[i] /= temperature;
        CpuModel.softmax(logits, 0, logits.length);
        float coin = rng.nextFloat();
        if (!(topP > 0f && topP < 1f)) return sampleMult(logits, coin);
        if (candidates.length < logits.length) candidates = new long[logits.length];
        return sampleTopP(logits, topP, coin, candidates);
    }

    static int argmax(float[] p) {
        int best = 0;
        for (int i = 1; i < p.length; i++) if (p[i] > p[best]) best = i;
        return best;
    }

    // the first index whose cumulative probability exceeds coin ∈ [0, 1)
    static int sampleMult(float[] p, float coin) {
        float cdf = 0f;
        for (int i = 0; i < p.length; i++) {
            cdf += p[i];
            if (coin < cdf) return i;
        }
        return p.length - 1; // rounding
    }

    // sample among the smallest set of most likely tokens whose probability exceeds topP
    static int sampleTopP(float[] p, float topP, float coin) { return sampleTopP(p, topP, coin, new long[p.length]); }

    // the same with cand (at least p.length) as the scratch of sort keys
    static int sampleTopP(float[] p, float topP, float coin, long[] cand) {
        int n = p.length;
        if (n == 1) return 0;
        // tokens below (1 - topP)/(n - 1) can never be in the nucleus: drop them before sorting (llama2.c's cutoff)
        float cutoff = (1f - topP) / (n - 1);
        int m = 0;
        for (int i = 0; i < n; i++) {
            // sort key: probability bits (positive floats order like ints) high, inverted index low so ties keep lower ids first
            if (p[i] >= cutoff) cand[m++] = ((long) Float.floatToIntBits(p[i]) << 32) | (0xFFFFFFFFL - i);
        }
        if (m == 0) return argmax(p);   // no probability reaches the cutoff: only when they do not sum to 1 (not finite)
        Arrays.sort(cand, 0, m);
        float cum = 0f;
        int last = m - 1;
        for (int j = m - 1; j >= 0; j--) {
            cum += Float.intBitsToFloat((int) (cand[j] >>> 32));
            if (cum > topP) {
                last = j;
                break;
            }
        }
        float r = coin * cum, cdf = 0f;
        for (int j = m - 1; j >= last; j--) {
            cdf += Float.intBitsToFloat((int) (cand[j] >>> 32));
            if (r < cdf) return (int) (0xFFFFFFFFL - (cand[j] & 0xFFFFFFFFL));
        }
        return (int) (0xFFFFFFFFL - (cand[last] & 0xFFFFFFFFL));
    }
}
