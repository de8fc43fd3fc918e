package ane4j.train;

import ane4j.run.TrainOptions;

/**
 * Loss scaling against fp16 gradient underflow (docs/ane-facts.md §5.4): the loss gradient is multiplied by {@code scale}
 * and the gradients divided by it before the update. Static keeps the scale; dynamic halves it and skips the update
 * when a gradient overflowed (inf/NaN), and doubles it after {@link #GROWTH_INTERVAL} clean updates, never above the
 * chip's cap ({@link #capFor}). Skipped updates are counted ({@link #skippedUpdates()}).
 * <p>
 * Why slow and capped (docs/ane-audit-2.md R5): the ANE turns a matmul output above ~32752 into inf on every measured part
 * (ANEForge #115, M5) and a width-offset slice above 4094 into inf on M1–M3 (ANEForge #164/#178, PR #180). Growing every
 * 50 steps to 65536 walked into those cliffs and skipped about one update in 50 forever. PyTorch's GradScaler grows every
 * 2000 clean steps (torch.cuda.amp.GradScaler, growth_interval=2000).
 */
public final class LossScaler {
    public enum Mode { STATIC, DYNAMIC, NONE }

    /** Clean updates before the scale doubles: PyTorch GradScaler's default growth_interval. */
    public static final int GROWTH_INTERVAL = 2000;
    /** The cap off the ANE (the reference backend without a chip): fp16's largest power of two below its max. */
    public static final float MAX_SCALE = 65536f;

    /**
     * The largest scale dynamic scaling grows to on a chip: 8× the 256 maderix trained with on M4
     * ({@code training_dynamic/train.m}) on M4/M5 (2048), and 8× less on M1–M3 (256), whose 4094 slice clamp sits 8×
     * below the 32752 matmul cliff. A heuristic that keeps the default's margin to the cliffs; not yet run on Apple
     * hardware. Null chip (not the ANE): {@link #MAX_SCALE}. An explicit larger initial scale is kept, never grown.
     */
    public static float capFor(ane4j.chip.Chip chip) {
        if (chip == null) return MAX_SCALE;
        return switch (chip) {
            case M1, M2, M3 -> 256f;
            case M4, M5 -> 2048f;
        };
    }
    public static final float MIN_SCALE = 1f;
    /**
     * The initial scale when none is given: the static 256 maderix's dynamic pipeline ran with
     * ({@code training/training_dynamic/train.m}: {@code float loss_scale = 256.0f}; its README's 256·NLAYERS is not what
     * ran, docs/ane-audit.md F4).
     */
    public static final float DEFAULT_SCALE = TrainOptions.DEFAULT_LOSS_SCALE;

    private final Mode mode;
    private final float cap;
    private float scale;
    private int cleanSteps;
    private long skipped;

    public LossScaler(Mode mode, float initialScale) { this(mode, initialScale, MAX_SCALE); }

    /** @param cap the largest scale growth reaches ({@link #capFor}) */
    public LossScaler(Mode mode, float initialScale, float cap) {
        this.mode = mode;
        this.cap = cap;
        this.scale = mode == Mode.NONE ? 1f : initialScale;
    }

    /** The largest scale growth reaches. */
    public float cap() { return cap; }

    /** Updates skipped for a non-finite gradient since this scaler was made (or restored). */
    public long skippedUpdates() { return skipped; }

    public float scale() { return scale; }

    public int cleanSteps() { return cleanSteps; }

    public Mode mode() { return mode; }

    public void restore(float savedScale, int savedCleanSteps) {
        this.scale = savedScale;
        this.cleanSteps = savedCleanSteps;
    }

    /** Called after each update with whether all gradients were finite; returns whether to apply the update. */
    public boolean afterBackward(boolean finite) {
        if (!finite) skipped++;
        if (mode != Mode.DYNAMIC) return finite;
        if (!finite) {
            scale = Math.max(MIN_SCALE, scale / 2);
            cleanSteps = 0;
            return false;
        }
        if (++cleanSteps >= GROWTH_INTERVAL) {
            if (scale < cap) scale = Math.min(cap, scale * 2);
            cleanSteps = 0;
        }
        return true;
    }
}
