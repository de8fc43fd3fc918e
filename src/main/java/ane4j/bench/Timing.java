package ane4j.bench;

import java.util.Arrays;

/** Warm-up then timed repetitions; medians in seconds. */
public final class Timing {
    private Timing() {}

    /**
     * Runs up to {@code warmup} untimed calls (at least one, and no more once a quarter of {@code maxSeconds} has passed),
     * then timed calls until {@code reps} are done or {@code maxSeconds} have passed (at least {@code minReps}); returns
     * the sorted times in seconds.
     */
    public static double[] measure(Runnable call, int warmup, int reps, int minReps, double maxSeconds) {
        long w0 = System.nanoTime();
        for (int i = 0; i < warmup && (i == 0 || (System.nanoTime() - w0) / 1e9 < maxSeconds / 4); i++) call.run();
        double[] t = new double[reps];
        long start = System.nanoTime();
        int n = 0;
        while (n < reps && (n < minReps || (System.nanoTime() - start) / 1e9 < maxSeconds)) {
            long t0 = System.nanoTime();
            call.run();
            t[n++] = (System.nanoTime() - t0) / 1e9;
        }
        double[] done = Arrays.copyOf(t, n);
        Arrays.sort(done);
        return done;
    }

    public static double median(double[] sorted) {
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** Median of unsorted values (not modified). */
    public static double medianOf(double[] values) {
        double[] s = values.clone();
        Arrays.sort(s);
        return median(s);
    }
}
