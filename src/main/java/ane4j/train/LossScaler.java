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
    public static final float MIN_SCALE = 1f;
    /**
     * The initial scale when none is given: the static 256 maderix's dynamic pipeline ran with
     * ({@code training/training_dynamic/train.m}: {@code float loss_scale = 256.0f}; its README's 256·NLAYERS is not what
     * ran, ane-audit.md F4).
     */
    public static final float DEFAULT_SCALE = 256f;

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
            scale = Math.max(MIN_SCALE, scale / 2);
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
