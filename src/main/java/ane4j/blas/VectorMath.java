package ane4j.blas;

/**
 * Elementwise math over float arrays for the CPU side of training and the reference backend's softmax and activations.
 *
 * <p>{@link #exp} uses the Vector API's {@code EXP} (≤ 1 ulp; a SIMD stub on x86-64, about 15× a {@link Math#exp}
 * loop) when {@code jdk.incubator.vector} is in the boot layer, and {@code (float) Math.exp} otherwise. Both give
 * 0 for large negative inputs, +inf for large positive ones and NaN for NaN.
 */
public final class VectorMath {
    private VectorMath() {}

    /** The implementation behind {@link VectorMath}. */
    interface Impl {
        void exp(float[] src, int srcOff, float[] dst, int dstOff, int n);
        String name();
    }

    private static final Impl IMPL = load();

    private static Impl load() {
        if (ModuleLayer.boot().findModule(Blas.JavaProbe.VECTOR_MODULE).isPresent()) {
            try {
                return (Impl) Class.forName("ane4j.blas.VectorMathSimd").getDeclaredConstructor().newInstance();
            } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
                // fall through to the scalar loop
            }
        }
        return new Impl() {
            @Override public void exp(float[] src, int srcOff, float[] dst, int dstOff, int n) {
                for (int i = 0; i < n; i++) dst[dstOff + i] = (float) Math.exp(src[srcOff + i]);
            }
            @Override public String name() { return "scalar"; }
        };
    }

    /** {@code dst[dstOff + i] = exp(src[srcOff + i])} for {@code i < n}; src and dst may be the same array. */
    public static void exp(float[] src, int srcOff, float[] dst, int dstOff, int n) {
        if (n < 0 || srcOff < 0 || dstOff < 0 || srcOff + n > src.length || dstOff + n > dst.length)
            throw new IllegalArgumentException("[exp] " + n + " elements from " + srcOff + " (of " + src.length + ") into " + dstOff + " (of " + dst.length + ") do not fit");
        IMPL.exp(src, srcOff, dst, dstOff, n);
    }

    /** {@code a[i] = exp(a[i])} for {@code i < n}. */
    public static void expInPlace(float[] a, int n) { exp(a, 0, a, 0, n); }

    /** "vector" or "scalar". */
    public static String implementation() { return IMPL.name(); }
}
