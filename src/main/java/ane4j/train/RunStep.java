package ane4j.train;

import ane4j.model.Rng;
import java.util.Map;

/**
 * One micro-step of what a {@link Trainer} trains, behind its one loop (AdamW, schedule, clipping, loss scaling,
 * validation, checkpoints): the preset transformer ({@link PresetRunStep}: token windows through {@link TrainingStep}'s
 * kernels) or a user's graph ({@link GraphRunStep}: batches of samples through {@link GraphStep}). The loop owns every
 * bit of state that a checkpoint holds (weights, moments, the data RNG, the loss scale); a step draws its batch from the
 * loop's RNG, so a resumed run draws the same batches.
 */
interface RunStep extends AutoCloseable {
    /**
     * Draws micro-step {@code microStep}'s batch from {@code rng}, adds {@code lossScale} · d loss / d trained weights into
     * {@code grads}, and returns the loss (fp32, not scaled).
     */
    float forwardBackward(float[] weights, float[] grads, Rng rng, float lossScale, long microStep);

    /** The loss of the held-out data under {@code weights}: the same batches every time, no random draw. */
    float validationLoss(float[] weights);

    /** New weights into the kernels (a copy with dynamic weights, a compile with static ones). */
    void stageWeights(float[] weights);

    /** The last step's time per phase, in ms (phase name in lower case), for the step's metrics. */
    Map<String, Double> phaseMillis();

    /** Bytes the last step staged into the kernels: activations, weights. */
    long stagedActivationBytes();

    long stagedWeightBytes();

    /** Tokens of one micro-step, which the metrics' throughput counts; 0 for a graph's batch (samples are not tokens: no tok/s is shown). */
    int tokensPerStep();

    @Override
    void close();
}
