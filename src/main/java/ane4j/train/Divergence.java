package ane4j.train;

import ane4j.run.TrainOptions;
import java.util.Locale;

/**
 * Tells a real fp16 gradient overflow from divergence. An overflow with a finite fp32 loss is what loss scaling is for:
 * the update is skipped and a dynamic scale backs off. Divergence is what no loss scale fixes: the fp32 loss itself not
 * finite for {@link #PATIENCE} micro-steps in a row, gradients that still overflow at the minimum scale (dynamic) or
 * at every one of {@link #STATIC_SKIP_LIMIT} updates in a row (static), or weights beyond {@link #WEIGHT_BOUND}.
 */
final class Divergence {
    /** Consecutive micro-steps with a non-finite loss, or updates overflowing at the minimum scale, that stop a run. */
    static final int PATIENCE = 3;
    /** Consecutive overflow skips that stop a run whose scale cannot back off (static, none): halving 256 eight times reaches 1. */
    static final int STATIC_SKIP_LIMIT = 10;
    /** The largest fp16: a weight above it cannot even be staged for the ANE (it becomes inf). */
    static final float WEIGHT_BOUND = 65504f;

    private int nonFiniteLosses, overflowsAtMinimum, overflowSkips;
    private float lastOverflowScale;

    /** After every micro-step's forward and loss (fp32, on the CPU). */
    void loss(float loss) { nonFiniteLosses = Float.isFinite(loss) ? 0 : nonFiniteLosses + 1; }

    /** Whether a micro-step since the last clean one had a non-finite loss (its weights do not give a usable loss). */
    boolean lossStreak() { return nonFiniteLosses > 0; }

    /** After an update was applied. */
    void applied() { overflowsAtMinimum = 0; overflowSkips = 0; }

    /** After an update was skipped for a gradient overflow at {@code scale} (its loss was finite). */
    void overflow(float scale) {
        overflowSkips++;
        overflowsAtMinimum = scale <= LossScaler.MIN_SCALE ? overflowsAtMinimum + 1 : 0;
        lastOverflowScale = scale;
    }

    /** The symptom when the run has diverged, else null. */
    String symptom(LossScaler.Mode mode) {
        if (nonFiniteLosses >= PATIENCE) return "the loss (fp32, before any loss scaling) was not finite for " + nonFiniteLosses + " steps in a row";
        if (overflowsAtMinimum >= PATIENCE) return "gradients overflowed fp16 at the minimum loss scale " + fmt(LossScaler.MIN_SCALE) + " for " + overflowsAtMinimum + " updates in a row";
        if (mode != LossScaler.Mode.DYNAMIC && overflowSkips >= STATIC_SKIP_LIMIT)
            return "gradients overflowed fp16 at the " + mode.name().toLowerCase(Locale.ROOT) + " loss scale " + fmt(lastOverflowScale) + " for " + overflowSkips + " updates in a row";
        return null;
    }

    /** Largest |w|, or NaN/∞ when a weight is not finite. */
    static float maxAbs(float[] w) {
        float max = 0;
        for (float x : w) {
            if (!Float.isFinite(x)) return x;
            max = Math.max(max, Math.abs(x));
        }
        return max;
    }

    static boolean weightsBad(float maxAbs) { return !(maxAbs <= WEIGHT_BOUND); }

    /** One line: the symptom, the likely cause and its fix, what happened to the checkpoints. */
    static String diagnosis(long step, String symptom, float maxAbs, TrainOptions o, LossScaler.Mode mode, float scale, String kept) {
        String cause, fix;
        if (weightsBad(maxAbs)) {
            cause = "the learning rate " + o.lr() + " is too high (weights reached " + (Float.isFinite(maxAbs) ? "|w| = " + magnitude(maxAbs) : maxAbs) + ")";
            fix = "lower --lr (the default is " + TrainOptions.DEFAULTS.get("lr") + ")";
        } else if (symptom.contains("loss (fp32")) {
            cause = "the data or an fp16 overflow in the forward pass (the weights are finite, |w| ≤ " + magnitude(maxAbs) + ")";
            fix = "check the token data against the model's vocabulary, lower --lr, or compare with --backend ref --storage fp32";
        } else if (mode != LossScaler.Mode.DYNAMIC && scale > LossScaler.MIN_SCALE) {
            cause = "the " + mode.name().toLowerCase(Locale.ROOT) + " loss scale " + fmt(scale) + " is too large for these gradients";
            fix = "use --loss-scaling dynamic (the default) or a smaller --loss-scale";
        } else {
            cause = "exploding gradients, most often a learning rate too high (" + o.lr() + "); loss scaling cannot help at scale 1";
            fix = "lower --lr";
        }
        return "[train] diverged at step " + step + ": " + symptom + "; likely cause: " + cause + "; fix: " + fix + "; " + kept;
    }

    static String magnitude(float f) { return String.format(Locale.ROOT, "%.3g", f); }

    private static String fmt(float f) { return f == Math.rint(f) && Math.abs(f) < 1e9 ? Long.toString((long) f) : String.format(Locale.ROOT, "%.3g", f); }
}
