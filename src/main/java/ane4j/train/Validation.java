package ane4j.train;

import ane4j.model.TokenData;

/**
 * Held-out data and its loss: consecutive, non-overlapping windows of {@code seqLen + 1} tokens (inputs, targets shifted
 * by one) from the start of the held-out range, the same windows every time, no random draw, so validation never moves
 * the training sampler. The loss is the mean cross-entropy over every counted target of the windows (a loss mask
 * leaves prompt tokens out), computed by the training step's forward kernels only.
 */
public final class Validation {
    private Validation() {}

    /** Tokens [from, to) of {@code tokens}, held out from training; {@code description} names them for messages. */
    public record HeldOut(TokenData tokens, long from, long to, String description) {
        public HeldOut {
            if (from < 0 || to > tokens.size() || to < from) throw new IllegalArgumentException("[eval] held-out range [" + from + ", " + to + ") of " + tokens.size() + " tokens");
        }

        public long size() { return to - from; }

        /** Whole windows of {@code seqLen + 1} tokens that fit, windows overlapping by one token as the sampler's do. */
        public long windows(int seqLen) { return size() < seqLen + 1L ? 0 : (size() - 1) / seqLen; }
    }

    /** Windows per validation: {@code evalTokens / seqLen}, at least one, at most what the held-out data holds. */
    public static int windows(HeldOut heldOut, int seqLen, int evalTokens) {
        return (int) Math.min(heldOut.windows(seqLen), Math.max(1, evalTokens / seqLen));
    }

    /** The mean loss of the first {@code windows} windows of {@code heldOut} under {@code params}. */
    public static float loss(TrainingStep step, float[] params, HeldOut heldOut, int seqLen, int windows) {
        if (windows < 1 || windows > heldOut.windows(seqLen))
            throw new IllegalArgumentException("[eval] " + windows + " windows of " + seqLen + " asked of " + heldOut.description() + ", which holds " + heldOut.windows(seqLen));
        int[] window = new int[seqLen + 1], tokens = new int[seqLen], targets = new int[seqLen];
        byte[] mask = new byte[seqLen + 1];
        double sum = 0;
        long counted = 0;
        for (int w = 0; w < windows; w++) {
            // window w: tokens [from + w·S, from + w·S + S], inputs the first S, targets the last S
            long at = heldOut.from() + (long) w * seqLen;
            heldOut.tokens().read(at, window, 0, seqLen + 1);
            System.arraycopy(window, 0, tokens, 0, seqLen);
            System.arraycopy(window, 1, targets, 0, seqLen);
            // a loss mask (prompt tokens of prompt/completion data) leaves its targets out: −1
            int n = seqLen;
            if (heldOut.tokens().masked()) {
                heldOut.tokens().readMask(at, mask, 0, seqLen + 1);
                for (int t = 0; t < seqLen; t++) if (mask[t + 1] == 0) { targets[t] = -1; n--; }
            }
            if (n == 0) continue;
            // the window's loss is the mean over its n counted targets; the result is the mean over all counted targets
            sum += (double) step.forwardLoss(params, tokens, targets) * n;
            counted += n;
        }
        return counted == 0 ? Float.NaN : (float) (sum / counted);
    }
}
