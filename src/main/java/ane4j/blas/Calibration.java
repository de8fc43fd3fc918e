package ane4j.blas;

import java.lang.management.ManagementFactory;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.StringJoiner;

/**
 * How much faster the Java GEMM is than the native one, per {@link ShapeClass} ({@code native time / Java time}: above
 * 1 the Java GEMM is faster), measured once per machine, library and core in a fraction of a second, and which of the
 * two each class then uses.
 */
record Calibration(Map<ShapeClass, Double> javaSpeedup, double seconds, double loadAverage) {

    /** The Java GEMM takes a class only when it is at least this much faster (noise must not flip the choice). */
    static final double MARGIN = 1.1;

    /** The shapes the training step runs (M = seq 256), each with the product that stands for it in the calibration. */
    enum ShapeClass {
        // attention scores Q·Kᵀ: K is the head dimension (32–128)
        SMALL_K("K < 128", 256, 256, 64),
        // attention P·V and its gradients: N (or M) is the head dimension
        NARROW("M or N < 128", 256, 64, 256),
        // the projections, the MLP and the classifier: dim 288–4096
        LARGE("M, N, K ≥ 128", 256, 768, 768);

        final String label;
        final int m, n, k;

        ShapeClass(String label, int m, int n, int k) {
            this.label = label;
            this.m = m;
            this.n = n;
            this.k = k;
        }

        static ShapeClass of(int m, int n, int k) {
            if (k < 128) return SMALL_K;
            if (Math.min(m, n) < 128) return NARROW;
            return LARGE;
        }
    }

    Calibration {
        javaSpeedup = Map.copyOf(javaSpeedup);
    }

    boolean javaFor(ShapeClass c) {
        Double s = javaSpeedup.get(c);
        return s != null && s >= MARGIN;
    }

    /** {@code SMALL_K=1.31,NARROW=0.8,LARGE=0.62;0.41;0.3} (speedups; calibration seconds; load average then). */
    String encode() {
        StringJoiner j = new StringJoiner(",");
        for (ShapeClass c : ShapeClass.values())
            if (javaSpeedup.containsKey(c)) j.add(c.name() + "=" + String.format(Locale.ROOT, "%.3f", javaSpeedup.get(c)));
        return j + ";" + String.format(Locale.ROOT, "%.3f;%.2f", seconds, loadAverage);
    }

    /** The inverse of {@link #encode()}; throws IllegalArgumentException on anything else. */
    static Calibration decode(String s) {
        String[] parts = s.split(";");
        if (parts.length != 3) throw new IllegalArgumentException("calibration '" + s + "' is not CLASS=SPEEDUP,…;SECONDS;LOAD");
        Map<ShapeClass, Double> m = new EnumMap<>(ShapeClass.class);
        for (String e : parts[0].split(",")) {
            String[] kv = e.split("=");
            if (kv.length != 2) throw new IllegalArgumentException("calibration entry '" + e + "' is not CLASS=SPEEDUP");
            double v = Double.parseDouble(kv[1]);
            if (!(v > 0) || Double.isInfinite(v)) throw new IllegalArgumentException("calibration speedup " + v + " is not positive");
            m.put(ShapeClass.valueOf(kv[0]), v);
        }
        if (m.size() != ShapeClass.values().length) throw new IllegalArgumentException("calibration '" + s + "' lacks a class");
        return new Calibration(m, Double.parseDouble(parts[1]), Double.parseDouble(parts[2]));
    }

    /** One line: the speedup per class. */
    String summary() {
        StringJoiner j = new StringJoiner(", ");
        for (ShapeClass c : ShapeClass.values())
            j.add(String.format(Locale.ROOT, "%.2f× at %s", javaSpeedup.get(c), c.label));
        return "Java GEMM " + j;
    }

    /**
     * Times both on each class's product, alternating calls so that a disturbance hits both alike; the best of
     * several calls after a warm-up (the Java kernel must be compiled first).
     */
    static Calibration measure(Sgemm nat, Sgemm java) {
        long start = System.nanoTime();
        Map<ShapeClass, Double> speedup = new EnumMap<>(ShapeClass.class);
        // the large class first: its many tiles get the shared Java kernel compiled before the small products are timed
        for (ShapeClass c : List.of(ShapeClass.LARGE, ShapeClass.NARROW, ShapeClass.SMALL_K)) {
            float[] a = new float[c.m * c.k], b = new float[c.k * c.n], out = new float[c.m * c.n];
            for (int i = 0; i < a.length; i++) a[i] = (i % 7 - 3) * 0.1f;
            for (int i = 0; i < b.length; i++) b[i] = (i % 5 - 2) * 0.1f;
            run(nat, c, a, b, out);
            warmUp(java, c, a, b, out, System.nanoTime());
            double bestNat = Double.MAX_VALUE, bestJava = Double.MAX_VALUE;
            long until = System.nanoTime() + 40_000_000L;
            for (int rep = 0; rep < 25 && (rep < 5 || System.nanoTime() < until); rep++) {
                bestNat = Math.min(bestNat, run(nat, c, a, b, out));
                bestJava = Math.min(bestJava, run(java, c, a, b, out));
            }
            speedup.put(c, bestNat / bestJava);
        }
        return new Calibration(speedup, (System.nanoTime() - start) / 1e9,
                ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    }

    /** Wall time per class the Java GEMM may spend getting compiled (a loaded machine's JIT threads get little). */
    static final long WARM_UP_NANOS = 1_500_000_000L;

    /**
     * Calls until the time per call stops falling (the JIT has compiled the kernel): at least 30 calls, then 6 without
     * a 3% gain. Interpreted and C1-compiled calls can be flat for a few calls before C2's code arrives (seen at load
     * 20: 30 calls of the 256×256×64 product before the compiled speed), so a plateau alone does not end it.
     */
    private static void warmUp(Sgemm s, ShapeClass c, float[] a, float[] b, float[] out, long start) {
        double best = Double.MAX_VALUE;
        for (int calls = 0, flat = 0; (calls < 30 || flat < 6) && System.nanoTime() - start < WARM_UP_NANOS; calls++) {
            double t = run(s, c, a, b, out);
            if (t < best * 0.97) {
                best = t;
                flat = 0;
            } else flat++;
        }
    }

    private static double run(Sgemm s, ShapeClass c, float[] a, float[] b, float[] out) {
        long t0 = System.nanoTime();
        s.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, c.m, c.n, c.k, 1f, a, 0, c.k, b, 0, c.n, 0f, out, 0, c.n);
        return System.nanoTime() - t0;
    }
}
