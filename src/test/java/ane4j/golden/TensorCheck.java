package ane4j.golden;

/** Element-wise comparison of a computed tensor with a golden one, llm.c {@code check_tensor} style. */
public final class TensorCheck {

    private TensorCheck() {}

    /**
     * Fails unless {@code |actual[i] − expected[i]| <= atol + rtol·|expected[i]|} for every i; the message names the
     * tensor, the number of bad elements, the first bad index and the largest difference with its index.
     */
    public static void checkTensor(String name, float[] expected, float[] actual, double atol, double rtol) {
        if (expected.length != actual.length) {
            throw new AssertionError(name + ": length " + actual.length + ", expected " + expected.length);
        }
        int bad = 0, firstBad = -1, worst = -1;
        double maxDiff = 0;
        for (int i = 0; i < expected.length; i++) {
            double d = Math.abs((double) actual[i] - expected[i]);
            boolean ok = d <= atol + rtol * Math.abs(expected[i]);   // false for NaN
            if (d > maxDiff || (Double.isNaN(d) && worst < 0)) {
                maxDiff = d;
                worst = i;
            }
            if (!ok) {
                bad++;
                if (firstBad < 0) firstBad = i;
            }
        }
        if (bad > 0) {
            throw new AssertionError(String.format(
                    "%s: %d of %d elements outside atol %.1e + rtol %.1e; first bad [%d] expected %.8g actual %.8g; max diff %.3e at [%d]",
                    name, bad, expected.length, atol, rtol, firstBad, expected[firstBad], actual[firstBad], maxDiff, worst));
        }
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
}
