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
        double sumOfSquares(float[] a, int from, int end, float k);
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
            @Override public double sumOfSquares(float[] a, int from, int end, float k) { return sumOfSquaresScalar(a, from, end, k); }
            @Override public String name() { return "scalar"; }
        });
    }

    /** Elements per block of {@link #sumOfSquares}: 8 float sums each, then double. */
    static final int SQUARES_BLOCK = 1024;

    /** {@link #sumOfSquares} without the Vector API: lane j of each block sums elements j, j+8, …; the tail goes to lane 0. */
    static double sumOfSquaresScalar(float[] a, int from, int end, float k) {
        double ss = 0;
        for (int b = from; b < end; b += SQUARES_BLOCK) {
            float a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
            int be = Math.min(end, b + SQUARES_BLOCK), i = b;
            for (; i + 8 <= be; i += 8) {
                float g0 = k * a[i], g1 = k * a[i + 1], g2 = k * a[i + 2], g3 = k * a[i + 3];
                float g4 = k * a[i + 4], g5 = k * a[i + 5], g6 = k * a[i + 6], g7 = k * a[i + 7];
                a0 += g0 * g0; a1 += g1 * g1; a2 += g2 * g2; a3 += g3 * g3;
                a4 += g4 * g4; a5 += g5 * g5; a6 += g6 * g6; a7 += g7 * g7;
            }
            for (; i < be; i++) { float g = k * a[i]; a0 += g * g; }
            ss += ((double) a0 + a1 + a2 + a3) + ((double) a4 + a5 + a6 + a7);
        }
        return ss;
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

    /**
     * Σ (k·a[i])² over [from, end), in blocks of 1024 elements from {@code from}: 8 interleaved float sums per block
     * (lane j takes elements j, j+8, …), added up in double. A fixed order, so the same bits with or without the Vector
     * API (eight lanes are one 256-bit vector; where the widest is narrower, the scalar loop runs).
     */
    public static double sumOfSquares(float[] a, int from, int end, float k) {
        if (from < 0 || end < from || end > a.length)
            throw new IllegalArgumentException("[squares] elements [" + from + ", " + end + ") of " + a.length + " do not fit");
        return IMPL.sumOfSquares(a, from, end, k);
    }

    /** Inputs below this may be flushed to 0 by {@link #exp} (their exp is below ~2.4e-38). */
    public static final float FLUSH_BELOW = -86.5f;

    /** {@code a[i] = exp(a[i])} for {@code i < n}. */
    public static void expInPlace(float[] a, int n) { exp(a, 0, a, 0, n); }

    /** "vector" or "scalar". */
    public static String implementation() { return IMPL.name(); }
}
