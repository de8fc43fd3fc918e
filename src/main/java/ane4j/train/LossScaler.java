package ane4j.train;

/**
 * Loss scaling against fp16 gradient underflow (ane-facts.md §5.4): the loss gradient is multiplied by {@code scale}
 * and the gradients divided by it before the update. Static keeps the scale; dynamic halves it and skips the update
 * when a gradient overflowed (inf/NaN), and doubles it after {@link #GROWTH_INTERVAL} clean updates.
 */
public final class LossScaler {
    public enum Mode { STATIC, DYNAMIC, NONE }

    public static final int GROWTH_INTERVAL = 50;
    public static final float MAX_SCALE = 65536f;

    private final Mode mode;
    private float scale;
    private int cleanSteps;

    public LossScaler(Mode mode, float initialScale) {
        this.mode = mode;
        this.scale = mode == Mode.NONE ? 1f : initialScale;
    }

    public float scale() { return scale; }

    public int cleanSteps() { return cleanSteps; }

    public Mode mode() { return mode; }

    public void restore(float savedScale, int savedCleanSteps) {
        this.scale = savedScale;
        this.cleanSteps = savedCleanSteps;
    }

    /** Called after each update with whether all gradients were finite; returns whether to apply the update. */
    public boolean afterBackward(boolean finite) {
        if (mode != Mode.DYNAMIC) return finite;
        if (!finite) {
            scale = Math.max(1f, scale / 2);
            cleanSteps = 0;
            return false;
        }
        if (++cleanSteps >= GROWTH_INTERVAL) {
            scale = Math.min(MAX_SCALE, scale * 2);
            cleanSteps = 0;
        }
        return true;
    }
}
