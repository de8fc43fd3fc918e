package ane4j.run;

import java.util.Locale;

/**
 * The one line a training step is shown as, on every face: {@code ane4j train}'s progress (cli TrainCommand), the
 * notebook's live line and {@code %train status} (through session Run), {@code Run.follow} in JShell, and a
 * {@link StepMetrics} value shown in a cell:
 * <pre>
 * step 0/2000 · compiling kernel 3/10 (ffnFused)…
 * step 1800/2000  loss 0.6103  val 0.6422  lr 3.70e-04  22452 tok/s  2.9 ms/step  ETA 0:01
 * </pre>
 * <ul>
 *   <li>{@code step}: the global 1-based step (a resumed run goes on from its checkpoint's step, as metrics.jsonl and
 *       the tables count) of the run's steps;</li>
 *   <li>{@code val}: the latest validation loss, shown from the step it ran after until the next one;</li>
 *   <li>{@code tok/s}: absent where a step has no tokens (a user graph's step: its samples are not tokens);</li>
 *   <li>{@code ETA}: the wall time left at the pace since the first step this line saw; only where a run is followed
 *       step by step ({@link #add}), not for one step shown alone ({@link #of});</li>
 *   <li>a last word when the step did not update the weights: {@code (update skipped)} after a non-finite gradient,
 *       {@code (accumulating)} on a micro-step of gradient accumulation.</li>
 * </ul>
 * A face adds around the line, never inside it: the terminal rewrites it in place, the notebook appends
 * {@code · restarts 1 · running} and shows its loss plot, a step shown alone appends its gradient norm and loss scale.
 */
public final class ProgressLine {
    private long firstStep = -1, firstAt;
    private float val = Float.NaN;
    private String last;

    /** The line of {@code m} alone: its own validation loss if it has one, no ETA. */
    public static String of(StepMetrics m) {
        return format(m, m.valLoss(), -1);
    }

    /** The line before step 1: {@code step 0/40 · compiling kernel 3/10 (ffnFused)…} ({@code what}: the setup stage or the run's state). */
    public static String beforeFirstStep(long steps, String what) {
        return "step 0/" + steps + " · " + what;
    }

    /** The line of {@code m} with {@code val} (NaN: none yet) and {@code etaSeconds} left (negative: no ETA). */
    public static String format(StepMetrics m, float val, long etaSeconds) {
        return String.format(Locale.ROOT, "step %d/%d  loss %.4f%s  lr %.2e%s  %.1f ms/step%s%s",
                m.step() + 1, m.steps(), m.loss(), Float.isNaN(val) ? "" : String.format(Locale.ROOT, "  val %.4f", val),
                m.lr(), m.tokensPerSecond() == 0 ? "" : String.format(Locale.ROOT, "  %.0f tok/s", m.tokensPerSecond()), m.msPerStep(),
                etaSeconds < 0 ? "" : String.format(Locale.ROOT, "  ETA %d:%02d", etaSeconds / 60, etaSeconds % 60),
                m.skipped() ? "  (update skipped)" : m.updated() ? "" : "  (accumulating)");
    }

    /**
     * The line of the next step of a run followed step by step (on the thread the steps arrive on): the latest
     * validation loss, and the ETA at the pace since the first step added (0:00 on that first step).
     */
    public synchronized String add(StepMetrics m) {
        long now = System.nanoTime();
        long eta = 0;
        if (firstStep < 0) {
            firstStep = m.step();
            firstAt = now;
        } else {
            long done = m.step() + 1, left = m.steps() - done;
            eta = Math.round((now - firstAt) / 1e9 / Math.max(1, done - firstStep) * left);
        }
        if (m.validated()) val = m.valLoss();
        last = format(m, val, eta);
        return last;
    }

    /** The line of the last step added, or null before the first. */
    public synchronized String last() {
        return last;
    }

    /** The run goes on after a pause (a resume): the ETA's pace is measured again from the next step. */
    public synchronized void restartClock() {
        firstStep = -1;
    }
}
