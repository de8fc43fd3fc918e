package ane4j.train;

import ane4j.model.Rng;
import ane4j.model.TokenData;
import java.util.LinkedHashMap;
import java.util.Map;

/** The preset transformer's micro-step: a window of tokens drawn from the training data through {@link TrainingStep}. */
final class PresetRunStep implements RunStep {
    private final TrainingStep step;
    private final TokenData data;
    private final long trainTokens;                    // windows are drawn from data's tokens [0, trainTokens)
    private final Validation.HeldOut heldOut;          // null: no validation
    private final int valWindows, seq;
    private final int[] tokens, targets, window;
    private final byte[] targetMask;

    PresetRunStep(TrainingStep step, TrainingSetup setup) {
        this.step = step;
        this.data = setup.data();
        this.trainTokens = setup.trainTokens();
        this.heldOut = setup.heldOut();
        this.valWindows = setup.valWindows();
        this.seq = setup.config().seqLen();
        this.tokens = new int[seq];
        this.targets = new int[seq];
        this.window = new int[seq + 1];
        this.targetMask = data.masked() ? new byte[seq] : null;
    }

    @Override
    public float forwardBackward(float[] weights, float[] grads, Rng rng, float lossScale, long microStep) {
        int s = seq;
        // sample a window: inputs = tokens[pos..pos+S), targets shifted by one
        // windows start at 0 … size-s-1; the bound size-s-1 never draws the last one, but resumes and goldens
        // depend on the draws it makes, so it stays, and a file of exactly one window takes position 0
        long windows = trainTokens - s;
        long pos = windows == 1 ? 0 : rng.nextInt((int) Math.min(Integer.MAX_VALUE, windows - 1));
        data.read(pos, window, 0, s + 1);
        System.arraycopy(window, 0, tokens, 0, s);
        System.arraycopy(window, 1, targets, 0, s);
        if (data.masked()) {
            // prompt/completion data: a target whose token does not count (a prompt token) is −1, ignored by the loss
            data.readMask(pos + 1, targetMask, 0, s);
            Trainer.maskTargets(targets, targetMask);
        }
        // the micro-step numbers the sequence: LoRA dropout's masks are a function of it and the seed (nothing to checkpoint)
        return step.forwardBackward(weights, grads, tokens, targets, lossScale, microStep);
    }

    @Override
    public float validationLoss(float[] weights) { return Validation.loss(step, weights, heldOut, seq, valWindows); }

    @Override
    public void stageWeights(float[] weights) { step.stageWeights(weights); }

    @Override
    public Map<String, Double> phaseMillis() {
        Map<String, Double> phases = new LinkedHashMap<>();
        step.phaseNanos().forEach((p, ns) -> phases.put(p.name().toLowerCase(java.util.Locale.ROOT), ns / 1e6));
        return phases;
    }

    @Override public long stagedActivationBytes() { return step.stagedActivationBytes(); }

    @Override public long stagedWeightBytes() { return step.stagedWeightBytes(); }

    @Override public int tokensPerStep() { return seq; }

    @Override public void close() { step.close(); }
}
