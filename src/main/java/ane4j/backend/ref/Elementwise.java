package ane4j.backend.ref;

import ane4j.blas.VectorMath;
import ane4j.mil.DType;
import ane4j.mil.Op;
import ane4j.mil.Value;

import java.lang.foreign.MemorySegment;

/** The elementwise ops: add, sub, mul, real_div, pow (broadcast), the unary activations, cast and select. */
interface Elementwise extends OpContext {

    /**
     * The broadcasting binary ops: add z = x + y, sub z = x − y, mul z = x · y, real_div z = x / y (integer outputs:
     * floor(x / y)), pow z = x^y.
     */
    default void binary(Op op, Value out) {
        T x = in("x"), y = in("y");
        T o = newOut(out.shape(), out.dtype());
        Iter it = Iter.of(o.shape, o, x, y);
        boolean intDiv = op == Op.REAL_DIV && out.dtype().isInteger();
        if (!intDiv && op != Op.POW && it.inner[0] == 1 && (strided(it.inner[1]) || strided(it.inner[2]))) {
            // an operand read across its rows (sdpaFwd's head-split q and k, views of a matmul written transposed):
            // gathered by one transposing copy, then the dense loop; the same values as element by element
            if (strided(it.inner[1])) x = contig(x);
            if (strided(it.inner[2])) y = contig(y);
            it = Iter.of(o.shape, o, x, y);
        }
        long oi = it.inner[0], xi = it.inner[1], yi = it.inner[2];
        if (!intDiv && op != Op.POW && oi == 1 && xi == 1 && (yi == 1 || yi == 0)) {
            // dense rows: heap chunks, rounded to fp16 in the chunk (no second pass over the output)
            boolean round = rounds(out.dtype());
            T dx = x, dy = y;
            Iter dense = it;
            add(() -> {
                MemorySegment os = o.st.seg, xs = dx.st.seg, ys = dy.st.seg;
                dense.runParallel((f, n) -> binaryChunked(op, os, f[0], xs, f[1], ys, f[2], yi == 0, n, round));
            });
            def(out, o);
            return;
        }
        T sx = x, sy = y;
        Iter rows = it;
        addRounded(() -> {
            MemorySegment os = o.st.seg, xs = sx.st.seg, ys = sy.st.seg;
            rows.runParallel((f, n) -> {
                long oo = f[0], xo = f[1], yo = f[2];
                switch (op) {
                    case ADD -> { for (int i = 0; i < n; i++) os.setAtIndex(F, oo + i * oi, xs.getAtIndex(F, xo + i * xi) + ys.getAtIndex(F, yo + i * yi)); }
                    case SUB -> { for (int i = 0; i < n; i++) os.setAtIndex(F, oo + i * oi, xs.getAtIndex(F, xo + i * xi) - ys.getAtIndex(F, yo + i * yi)); }
                    case MUL -> { for (int i = 0; i < n; i++) os.setAtIndex(F, oo + i * oi, xs.getAtIndex(F, xo + i * xi) * ys.getAtIndex(F, yo + i * yi)); }
                    case REAL_DIV -> {
                        for (int i = 0; i < n; i++) {
                            float q = xs.getAtIndex(F, xo + i * xi) / ys.getAtIndex(F, yo + i * yi);
                            os.setAtIndex(F, oo + i * oi, intDiv ? (float) Math.floor(q) : q);
                        }
                    }
                    case POW -> { for (int i = 0; i < n; i++) os.setAtIndex(F, oo + i * oi, (float) Math.pow(xs.getAtIndex(F, xo + i * xi), ys.getAtIndex(F, yo + i * yi))); }
                    default -> throw new AssertionError(op);
                }
            });
        }, o);
        def(out, o);
    }

    /** An inner stride that is neither dense (1) nor a broadcast (0). */
    private static boolean strided(long inner) { return inner != 1 && inner != 0; }

    /**
     * The dense case of add/sub/mul/real_div (y dense, or one broadcast value per run) through heap chunks: C2
     * vectorises these array loops, not the equivalent segment loops (about 4× faster here).
     */
    private static void binaryChunked(Op op, MemorySegment os, long oo, MemorySegment xs, long xo, MemorySegment ys, long yo, boolean yScalar, int n, boolean round) {
        float[][] scratch = SCRATCH.get();
        float[] a = scratch[0], b = scratch[1];
        float yv = yScalar ? ys.getAtIndex(F, yo) : 0f;
        for (int done = 0; done < n; done += CHUNK) {
            int m = Math.min(CHUNK, n - done);
            MemorySegment.copy(xs, F, (xo + done) * 4, a, 0, m);
            if (!yScalar) MemorySegment.copy(ys, F, (yo + done) * 4, b, 0, m);
            switch (op) {
                case ADD -> { if (yScalar) for (int i = 0; i < m; i++) a[i] += yv; else for (int i = 0; i < m; i++) a[i] += b[i]; }
                case SUB -> { if (yScalar) for (int i = 0; i < m; i++) a[i] -= yv; else for (int i = 0; i < m; i++) a[i] -= b[i]; }
                case MUL -> { if (yScalar) for (int i = 0; i < m; i++) a[i] *= yv; else for (int i = 0; i < m; i++) a[i] *= b[i]; }
                case REAL_DIV -> { if (yScalar) for (int i = 0; i < m; i++) a[i] /= yv; else for (int i = 0; i < m; i++) a[i] /= b[i]; }
                default -> throw new AssertionError(op);
            }
            if (round) Planner.round16(a, m);
            MemorySegment.copy(a, 0, os, F, (oo + done) * 4, m);
        }
    }

    /**
     * The unary ops: rsqrt y = 1 / sqrt(x + epsilon), sqrt y = sqrt(x), exp y = eˣ, sigmoid y = 1 / (1 + e⁻ˣ),
     * silu y = x / (1 + e⁻ˣ), relu y = max(x, 0), tanh y = tanh(x).
     */
    default void unary(Op op, Value out) {
        T x = in("x");
        float eps = op == Op.RSQRT || op == Op.LOG ? lit("epsilon").floatValue() : 0f;
        String mode = op == Op.GELU ? lit("mode").stringValue() : "";
        T o = newOut(out.shape(), out.dtype());
        Iter it = Iter.of(o.shape, o, x);
        boolean chunked = op != Op.LOG && op != Op.ERF && op != Op.GELU;
        if (chunked && it.inner[0] == 1 && it.inner[1] == 1) {
            boolean round = rounds(out.dtype());
            add(() -> {
                MemorySegment os = o.st.seg, xs = x.st.seg;
                it.runParallel((f, n) -> unaryChunked(op, eps, os, f[0], xs, f[1], n, round));
            });
            def(out, o);
            return;
        }
        addRounded(() -> {
            MemorySegment os = o.st.seg, xs = x.st.seg;
            long oi = it.inner[0], xi = it.inner[1];
            it.runParallel((f, n) -> {
                long oo = f[0], xo = f[1];
                for (int i = 0; i < n; i++) {
                    float v = xs.getAtIndex(F, xo + i * xi);
                    float r = switch (op) {
                        case RSQRT -> (float) (1.0 / Math.sqrt(v + eps));
                        case SQRT -> (float) Math.sqrt(v);
                        case EXP -> (float) Math.exp(v);
                        case SIGMOID -> (float) (1.0 / (1.0 + Math.exp(-v)));
                        case SILU -> (float) (v / (1.0 + Math.exp(-v)));
                        case RELU -> v > 0 ? v : 0f;
                        case TANH -> (float) Math.tanh(v);
                        case LOG -> (float) Math.log((double) v + eps);
                        case ERF -> (float) erf(v);
                        case GELU -> (float) gelu(v, mode);
                        default -> throw new AssertionError(op);
                    };
                    os.setAtIndex(F, oo + i * oi, r);
                }
            });
        }, o);
        def(out, o);
    }

    /**
     * gelu: EXACT x·Φ(x) = ½x(1 + erf(x/√2)); TANH_APPROXIMATION ½x(1 + tanh(√(2/π)(x + 0.044715x³))) (PyTorch's
     * approximate='tanh'); SIGMOID_APPROXIMATION x·σ(1.702x) (coremltools' iOS15 gelu).
     */
    static double gelu(double x, String mode) {
        return switch (mode) {
            case "TANH_APPROXIMATION" -> 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
            case "SIGMOID_APPROXIMATION" -> x / (1 + Math.exp(-1.702 * x));
            default -> 0.5 * x * (1 + erf(x / Math.sqrt(2)));
        };
    }

    /**
     * erf(x) in double: the Maclaurin series 2/√π Σ (−1)ⁿ x²ⁿ⁺¹ / (n!(2n+1)) below |x| = 2.5 (terms up to e^6.25 ≈ 520,
     * so about 13 exact digits are left), else 1 − erfc(x) with erfc's continued fraction
     * e^(−x²)/√π · 1/(x + ½/(x + 1/(x + (3/2)/(x + …)))) summed backwards from 80 terms (Abramowitz–Stegun 7.1.14).
     */
    static double erf(double x) {
        double ax = Math.abs(x);
        if (ax < 2.5) {
            double term = x, sum = x, x2 = x * x;
            for (int n = 1; n < 100 && Math.abs(term) > 1e-17 * Math.abs(sum); n++) {
                term *= -x2 / n;
                sum += term / (2 * n + 1);
            }
            return 2 / Math.sqrt(Math.PI) * sum;
        }
        double t = ax;
        for (int k = 80; k >= 1; k--) t = ax + (k / 2.0) / t;
        double erfc = Math.exp(-ax * ax) / (Math.sqrt(Math.PI) * t);
        return Math.copySign(1 - erfc, x);
    }

    /** The comparisons (bool results, 1 or 0): equal, not_equal, greater, greater_equal, less, less_equal (broadcast). */
    default void compare(Op op, Value out) {
        T x = in("x"), y = in("y");
        T o = newOut(out.shape(), out.dtype());
        Iter it = Iter.of(o.shape, o, x, y);
        add(() -> {
            MemorySegment os = o.st.seg, xs = x.st.seg, ys = y.st.seg;
            long oi = it.inner[0], xi = it.inner[1], yi = it.inner[2];
            it.runParallel((f, n) -> {
                for (int i = 0; i < n; i++) {
                    float a = xs.getAtIndex(F, f[1] + i * xi), b = ys.getAtIndex(F, f[2] + i * yi);
                    boolean r = switch (op) {
                        case EQUAL -> a == b;
                        case NOT_EQUAL -> a != b;
                        case GREATER -> a > b;
                        case GREATER_EQUAL -> a >= b;
                        case LESS -> a < b;
                        case LESS_EQUAL -> a <= b;
                        default -> throw new AssertionError(op);
                    };
                    os.setAtIndex(F, f[0] + i * oi, r ? 1f : 0f);
                }
            });
        });
        def(out, o);
    }

    /** The dense case of the unary ops through heap chunks; exp, sigmoid and silu on {@link VectorMath#exp}. */
    private static void unaryChunked(Op op, float eps, MemorySegment os, long oo, MemorySegment xs, long xo, int n, boolean round) {
        float[][] scratch = SCRATCH.get();
        float[] a = scratch[0], e = scratch[1];
        for (int done = 0; done < n; done += CHUNK) {
            int m = Math.min(CHUNK, n - done);
            MemorySegment.copy(xs, F, (xo + done) * 4, a, 0, m);
            switch (op) {
                case RSQRT -> { for (int i = 0; i < m; i++) a[i] = (float) (1.0 / Math.sqrt(a[i] + eps)); }
                case SQRT -> { for (int i = 0; i < m; i++) a[i] = (float) Math.sqrt(a[i]); }
                case EXP -> {
                    // the MIL op keeps numpy's subnormal results, which VectorMath.exp flushes to 0 below ~1.7e-38
                    System.arraycopy(a, 0, e, 0, m);
                    VectorMath.expInPlace(a, m);
                    for (int i = 0; i < m; i++) if (e[i] < VectorMath.FLUSH_BELOW) a[i] = (float) Math.exp(e[i]);
                }
                case SIGMOID, SILU -> {
                    // e = exp(−x); sigmoid = 1/(1+e); silu = x/(1+e)
                    for (int i = 0; i < m; i++) e[i] = -a[i];
                    VectorMath.expInPlace(e, m);
                    if (op == Op.SIGMOID) for (int i = 0; i < m; i++) a[i] = 1f / (1f + e[i]);
                    else for (int i = 0; i < m; i++) a[i] = a[i] / (1f + e[i]);
                }
                case RELU -> { for (int i = 0; i < m; i++) a[i] = a[i] > 0 ? a[i] : 0f; }
                case TANH -> { for (int i = 0; i < m; i++) a[i] = (float) Math.tanh(a[i]); }
                default -> throw new AssertionError(op);
            }
            if (round) Planner.round16(a, m);
            MemorySegment.copy(a, 0, os, F, (oo + done) * 4, m);
        }
    }

    /**
     * cast: to fp16 rounds to nearest even; float → integer truncates toward zero and saturates to the type's range
     * (numpy {@code astype} semantics for in-range values); → bool is {@code x != 0}.
     */
    default void cast(Value out) {
        T x = in("x");
        DType to = out.dtype();
        // the same values in the float storage: fp16 as fp32, and a bool's 0/1 as either float type (a one-hot of labels)
        boolean sameValues = to == x.dtype || (to == DType.FP32 && x.dtype == DType.FP16) || (x.dtype == DType.BOOL && (to == DType.FP16 || to == DType.FP32));
        if (sameValues) { def(out, x.withDType(to)); return; }
        T o = newOut(out.shape(), to);
        Iter it = Iter.of(o.shape, o, x);
        float lo = switch (to) { case INT8 -> -128; case UINT8 -> 0; case INT16 -> -32768; case INT32 -> Integer.MIN_VALUE; default -> Float.NEGATIVE_INFINITY; };
        float hi = switch (to) { case INT8 -> 127; case UINT8 -> 255; case INT16 -> 32767; case INT32 -> Integer.MAX_VALUE; default -> Float.POSITIVE_INFINITY; };
        addRounded(() -> {
            MemorySegment os = o.st.seg, xs = x.st.seg;
            long oi = it.inner[0], xi = it.inner[1];
            it.runParallel((f, n) -> {
                for (int i = 0; i < n; i++) {
                    float v = xs.getAtIndex(F, f[1] + i * xi);
                    float r = switch (to) {
                        case BOOL -> v != 0 ? 1f : 0f;
                        case FP16, FP32 -> v;
                        default -> Float.isNaN(v) ? 0f : Math.max(lo, Math.min(hi, (float) (long) v));
                    };
                    os.setAtIndex(F, f[0] + i * oi, r);
                }
            });
        }, o);
        def(out, o);
    }

    /** select: y = cond ≠ 0 ? a : b (broadcast). */
    default void select(Value out) {
        T c = in("cond"), a = in("a"), b = in("b");
        T o = newOut(out.shape(), out.dtype());
        Iter it = Iter.of(o.shape, o, c, a, b);
        addRounded(() -> {
            MemorySegment os = o.st.seg, cs = c.st.seg, as = a.st.seg, bs = b.st.seg;
            long oi = it.inner[0], ci = it.inner[1], ai = it.inner[2], bi = it.inner[3];
            it.runParallel((f, n) -> {
                for (int i = 0; i < n; i++)
                    os.setAtIndex(F, f[0] + i * oi, cs.getAtIndex(F, f[1] + i * ci) != 0 ? as.getAtIndex(F, f[2] + i * ai) : bs.getAtIndex(F, f[3] + i * bi));
            });
        }, o);
        def(out, o);
    }
}
