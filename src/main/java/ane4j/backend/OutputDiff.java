package ane4j.backend;

/**
 * How far one backend's output is from another's (the reference): max and mean absolute error over every element, the
 * largest reference magnitude (to judge the error against), and how many elements were not finite in either.
 */
public record OutputDiff(long count, double maxAbs, double meanAbs, double maxRef, long nonFinite) {
    /** fp16 storage on both sides: tolerances for {@link #within} that the ANE's fp16 arithmetic should meet. */
    public static final double FP16_ATOL = 2e-2, FP16_RTOL = 2e-2;

    public static OutputDiff of(TensorBuffer expected, TensorBuffer actual) {
        if (expected.count() != actual.count())
            throw new IllegalArgumentException("[diff] " + expected + " and " + actual + " differ in element count");
        double max = 0, sum = 0, maxRef = 0;
        long bad = 0;
        for (long i = 0; i < expected.count(); i++) {
            float e = expected.get(i), a = actual.get(i);
            if (!Float.isFinite(e) || !Float.isFinite(a)) {
                if (Float.compare(e, a) != 0) bad++;
                continue;
            }
            double d = Math.abs((double) e - a);
            max = Math.max(max, d);
            sum += d;
            maxRef = Math.max(maxRef, Math.abs(e));
        }
        return new OutputDiff(expected.count(), max, expected.count() == 0 ? 0 : sum / expected.count(), maxRef, bad);
    }

    /** The worse of two diffs, per field (for a kernel with several outputs). */
    public OutputDiff merge(OutputDiff o) {
        long n = count + o.count;
        return new OutputDiff(n, Math.max(maxAbs, o.maxAbs), n == 0 ? 0 : (meanAbs * count + o.meanAbs * o.count) / n,
                Math.max(maxRef, o.maxRef), nonFinite + o.nonFinite);
    }

    /** Every element finite where the reference is, and max error ≤ atol + rtol·max|reference|. */
    public boolean within(double atol, double rtol) {
        return nonFinite == 0 && maxAbs <= atol + rtol * maxRef;
    }
}
