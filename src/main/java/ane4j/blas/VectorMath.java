package ane4j.blas;

/**
 * Elementwise math over float arrays for the CPU side of training and the reference backend's softmax and activations.
 *
 * <p>{@link #exp} is a Cody–Waite range reduction and a degree-5 polynomial made only of IEEE adds, multiplies and
 * fmas, so it gives the same bits with or without the Vector API, interpreted or compiled, on any machine (the Vector
 * API's own {@code EXP} does not: its results change by an ulp when C2 swaps the Java fallback for a SIMD stub, which
 * broke bit-identical resume). Within 2 ulp of {@link Math#exp}; results below about 1.7e-38 (x < −87) are 0 (no
 * subnormal arithmetic, which costs a microcode assist per element on x86); +inf above 88.72; NaN for NaN. About 0.3 ns per element with AVX-512 (15× a {@code Math.exp} loop).
 */
public final class VectorMath {
    private VectorMath() {}

    /** The implementation behind {@link VectorMath}. */
    interface Impl {
        void exp(float[] src, int srcOff, float[] dst, int dstOff, int n);
        float max(float[] a, int off, int n);
        String name();
    }

    private static final Impl IMPL = load();

    private static Impl load() {
        return VectorClasses.load("ane4j.blas.VectorMathSimd", Impl.class).orElseGet(() -> new Impl() {
            @Override public void exp(float[] src, int srcOff, float[] dst, int dstOff, int n) {
                for (int i = 0; i < n; i++) dst[dstOff + i] = expScalar(src[srcOff + i]);
            }
            @Override public float max(float[] a, int off, int n) {
                float m = Float.NEGATIVE_INFINITY;
                for (int i = 0; i < n; i++) m = Math.max(m, a[off + i]);
                return m;
            }
            @Override public String name() { return "scalar"; }
        });
    }

    static final float EXP_LO = -88.5f, EXP_HI = 88.8f, LOG2E = 1.44269504088896341f, ROUND = 12582912f;
    static final int ROUND_BITS = 0x4B400000;
    static final float LN2_HI = 0.693359375f, LN2_LO = -2.12194440e-4f;
    static final float P0 = 1.9875691500e-4f, P1 = 1.3981999507e-3f, P2 = 8.3334519073e-3f, P3 = 4.1665795894e-2f,
            P4 = 1.6666665459e-1f, P5 = 5.0000001201e-1f;

    /** One element of {@link #exp}: the steps of {@code VectorMathSimd}, lane by lane. */
    static float expScalar(float x) {
        x = Math.min(Math.max(x, EXP_LO), EXP_HI);
        float t = Math.fma(x, LOG2E, ROUND), k = t - ROUND;
        int n = Math.max(Float.floatToRawIntBits(t) - ROUND_BITS, -126);
        float r = Math.fma(-k, LN2_HI, x);
        r = Math.fma(-k, LN2_LO, r);
        float p = Math.fma(Math.fma(Math.fma(Math.fma(Math.fma(r, P0, P1), r, P2), r, P3), r, P4), r, P5);
        p = p * (r * r) + r + 1f;
        return p * Float.intBitsToFloat((n + 126) << 23) * 2f;
    }

    /** {@code dst[dstOff + i] = exp(src[srcOff + i])} for {@code i < n}; src and dst may be the same array. */
    public static void exp(float[] src, int srcOff, float[] dst, int dstOff, int n) {
        if (n < 0 || srcOff < 0 || dstOff < 0 || srcOff + n > src.length || dstOff + n > dst.length)
            throw new IllegalArgumentException("[exp] " + n + " elements from " + srcOff + " (of " + src.length + ") into " + dstOff + " (of " + dst.length + ") do not fit");
        IMPL.exp(src, srcOff, dst, dstOff, n);
    }

    /**
     * The largest of {@code a[off … off+n)} with {@link Math#max}'s rules (NaN if any is NaN, +0 above −0), −inf when
     * empty. Exact, so the order lanes are combined in does not change the result.
     */
    public static float max(float[] a, int off, int n) {
        if (n < 0 || off < 0 || off + n > a.length)
            throw new IllegalArgumentException("[max] " + n + " elements from " + off + " (of " + a.length + ") do not fit");
        return IMPL.max(a, off, n);
    }

    /** Inputs below this may be flushed to 0 by {@link #exp} (their exp is below ~2.4e-38). */
    public static final float FLUSH_BELOW = -86.5f;

    /** {@code a[i] = exp(a[i])} for {@code i < n}. */
    public static void expInPlace(float[] a, int n) { exp(a, 0, a, 0, n); }

    /** "vector" or "scalar". */
    public static String implementation() { return IMPL.name(); }
}
