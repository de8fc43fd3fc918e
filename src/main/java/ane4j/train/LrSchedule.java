package ane4j.train;

/** Linear warm-up to {@code maxLr}, then cosine decay to {@code minLr} at the last step (docs/ane-facts.md §5.4). */
public record LrSchedule(float maxLr, float minLr, int warmup, int totalSteps) {
    public float at(long step) {
        if (step < warmup) return maxLr * (step + 1) / warmup;
        if (totalSteps <= warmup) return maxLr;
        double progress = Math.min(1.0, (double) (step - warmup) / (totalSteps - warmup));
        return (float) (minLr + 0.5 * (maxLr - minLr) * (1 + Math.cos(Math.PI * progress)));
    }
}
