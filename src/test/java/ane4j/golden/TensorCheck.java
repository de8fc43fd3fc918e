package ane4j.golden;

import java.util.Arrays;

/**
 * The one comparison of a computed tensor with a reference, in the style of llm.c's {@code check_tensor}: every golden
 * and reference test goes through it. An element passes when {@code |a − e| ≤ atol + rtol·|e|}, or both are NaN, or
 * both are the same infinity. One line reports the tensor: max |a − e| (over finite pairs) and where, the relative L2
 * error ‖a − e‖₂ / ‖e‖₂, the number of bad elements and the first bad one (with its index in {@code shape} if given).
 */
public final class TensorCheck {

    private TensorCheck() {}

    /** What a comparison found; {@link #line()} is the one-line report. */
    public record Report(String name, int count, double maxAbsDiff, int maxAt, double relL2, int bad, int firstBad,
                         float expectedAtFirstBad, float actualAtFirstBad, double atol, double rtol, int[] shape) {
        public boolean ok() { return bad == 0; }

        public String line() {
            String head = String.format("%s: TENSOR %s, %d values, maxdiff %.3e at %s, relL2 %.3e",
                    name, ok() ? "OK" : "NOT OK", count, maxAbsDiff, at(maxAt), relL2);
            if (ok()) return head;
            return head + String.format("; %d of %d outside atol %.1e + rtol %.1e, first bad %s expected %.8g got %.8g",
                    bad, count, atol, rtol, at(firstBad), expectedAtFirstBad, actualAtFirstBad);
        }

        private String at(int i) {
            if (i < 0) return "-";
            return shape == null ? "[" + i + "]" : "[" + i + "] " + Arrays.toString(unravel(i, shape));
        }
    }

    /** Compares without failing. */
    public static Report compare(String name, float[] expected, float[] actual, double atol, double rtol, int[] shape) {
        if (expected.length != actual.length)
            throw new AssertionError(name + ": " + actual.length + " values, expected " + expected.length);
        int bad = 0, firstBad = -1, maxAt = -1;
        double maxDiff = 0, err2 = 0, ref2 = 0;
        for (int i = 0; i < expected.length; i++) {
            float e = expected[i], a = actual[i];
            boolean ok;
            if (Float.isNaN(e) || Float.isNaN(a)) ok = Float.isNaN(e) && Float.isNaN(a);
            else if (Float.isInfinite(e) || Float.isInfinite(a)) ok = e == a;
            else {
                double d = Math.abs((double) a - e);
                if (d > maxDiff || maxAt < 0) { maxDiff = d; maxAt = i; }
                err2 += d * d;
                ref2 += (double) e * e;
                ok = d <= atol + rtol * Math.abs((double) e);
            }
            if (!ok && bad++ == 0) firstBad = i;
        }
        double relL2 = ref2 > 0 ? Math.sqrt(err2 / ref2) : Math.sqrt(err2);   // ‖e‖ = 0: the absolute L2 error
        return new Report(name, expected.length, maxDiff, maxAt, relL2, bad, firstBad,
                firstBad < 0 ? 0 : expected[firstBad], firstBad < 0 ? 0 : actual[firstBad], atol, rtol, shape);
    }

    /** Fails with the one-line report unless every element is within {@code atol + rtol·|e|}; prints it when it passes. */
    public static Report checkTensor(String name, float[] expected, float[] actual, double atol, double rtol) {
        return checkTensor(name, expected, actual, atol, rtol, null);
    }

    /** As {@link #checkTensor(String, float[], float[], double, double)}, naming bad elements by their index in {@code shape}. */
    public static Report checkTensor(String name, float[] expected, float[] actual, double atol, double rtol, int[] shape) {
        Report r = compare(name, expected, actual, atol, rtol, shape);
        if (!r.ok()) throw new AssertionError(r.line());
        System.out.println(r.line());
        return r;
    }

    /** As {@link #checkTensor(String, float[], float[], double, double)} against a float64 reference (rounded to fp32 first). */
    public static Report checkTensor(String name, double[] expected, float[] actual, double atol, double rtol) {
        float[] e = new float[expected.length];
        for (int i = 0; i < e.length; i++) e[i] = (float) expected[i];
        return checkTensor(name, e, actual, atol, rtol, null);
    }

    /**
     * Fails unless the relative L2 error is at most {@code maxRelL2} and no element is NaN or infinite where the other
     * is not (for outputs compared with a reference computed at a different precision, where single elements may differ
     * by more than a fixed tolerance).
     */
    public static Report checkRelL2(String name, float[] expected, float[] actual, double maxRelL2) {
        Report r = compare(name, expected, actual, Double.POSITIVE_INFINITY, 0, null);
        if (!r.ok() || !(r.relL2() <= maxRelL2))
            throw new AssertionError(r.line() + (r.ok() ? "; relL2 above " + maxRelL2 : ""));
        System.out.println(r.line());
        return r;
    }

    /** The largest absolute element difference (NaN if any element is NaN). */
    public static double maxAbsDiff(float[] expected, float[] actual) {
        if (expected.length != actual.length) throw new IllegalArgumentException("[golden] lengths differ: " + expected.length + " vs " + actual.length);
        double m = 0;
        for (int i = 0; i < expected.length; i++) {
            double d = Math.abs((double) actual[i] - expected[i]);
            if (Double.isNaN(d)) return Double.NaN;
            m = Math.max(m, d);
        }
        return m;
    }

    /** The multi-dimensional index of flat index {@code i} in a row-major tensor of {@code shape}. */
    static int[] unravel(int i, int[] shape) {
        int[] idx = new int[shape.length];
        for (int d = shape.length - 1; d >= 0; d--) {
            idx[d] = shape[d] == 0 ? 0 : i % shape[d];
            i = shape[d] == 0 ? 0 : i / shape[d];
        }
        return idx;
    }
}
