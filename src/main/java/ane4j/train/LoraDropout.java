package ane4j.train;

/**
 * Dropout on the adapters' input, as PEFT's {@code lora_dropout} (an independent {@code nn.Dropout(p)} per adapted
 * Linear, applied to the adapter path only: {@code y = W·x + s·B·A·dropout(x)}): each element is kept with probability
 * 1 − p and scaled by 1/(1 − p), as torch's nn.Dropout.
 *
 * <p>The masks come from a counter-based generator: the keep bit of element e of (sequence, layer, target) is a pure
 * function of the run's seed and those four numbers, so there is no generator state to checkpoint and a resumed or
 * restarted run draws the same masks. tools/gen_lora_golden.py implements the same function (numpy uint64):
 * <pre>
 *   k    = mix(mix(mix(mix(seed ^ SALT) ^ sequence) ^ layer) ^ target)      target: index in TrainOptions.LORA_TARGETS
 *   bits = mix(k + (e + 1)·GAMMA)                                          e: index in the (in, S) channel-first array
 *   keep = (bits >>> 40) ≥ ceil(p · 2^24)                                  24 uniform bits against p
 *   mix  = SplitMix64's finalizer (Steele, Lea, Flood 2014; java.util.SplittableRandom.mix64)
 * </pre>
 *
 * @param p    the dropout probability, in [0, 1)
 * @param seed the run's seed
 */
public record LoraDropout(float p, long seed) {
    public static final LoraDropout NONE = new LoraDropout(0f, 0L);
    static final long SALT = 0x4C6F7261447270L, GAMMA = 0x9E3779B97F4A7C15L;

    public LoraDropout {
        if (!(p >= 0 && p < 1)) throw new IllegalArgumentException("[lora] dropout " + p + " must be in [0, 1)");
    }

    public boolean active() { return p > 0; }

    /** 1/(1 − p) in fp32, as torch's dropout scales the kept elements. */
    public float keepScale() { return 1f / (1f - p); }

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** The stream key of one (sequence, layer, target). */
    long key(long sequence, int layer, int target) {
        return mix(mix(mix(mix(seed ^ SALT) ^ sequence) ^ layer) ^ target);
    }

    /** bits (n bits, packed 64 per long) ← the keep mask of stream {@code key}'s elements 0..n−1. */
    void mask(long key, long[] bits, int n) {
        long threshold = (long) Math.ceil(p * 16777216.0);
        java.util.Arrays.fill(bits, 0, (n + 63) >>> 6, 0L);
        for (int e = 0; e < n; e++)
            if (mix(key + (e + 1) * GAMMA) >>> 40 >= threshold) bits[e >>> 6] |= 1L << (e & 63);
    }

    /** dst[e] = x[e]·keep[e]/(1 − p), e < n: dropout(x). */
    void apply(float[] x, long[] bits, float[] dst, int n) {
        float k = keepScale();
        for (int e = 0; e < n; e++) dst[e] = (bits[e >>> 6] >>> (e & 63) & 1L) != 0 ? x[e] * k : 0f;
    }

    /** dst[e] += mul·keep[e]/(1 − p)·src[e], e < n: the input gradient through dropout. */
    void addMasked(float[] dst, float[] src, float mul, long[] bits, int n) {
        float k = mul * keepScale();
        for (int e = 0; e < n; e++) if ((bits[e >>> 6] >>> (e & 63) & 1L) != 0) dst[e] += k * src[e];
    }
}
