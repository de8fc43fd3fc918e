package ane4j.run;

import java.util.Map;

/**
 * One micro-step's figures (JSON line in metrics.jsonl). {@code stagedActivationBytes}/{@code stagedWeightBytes}: what
 * the step wrote into kernel inputs (TrainingStep.stagedActivationBytes(), TrainingStep.stagedWeightBytes()).
 * {@code valLoss}: the mean loss on the held-out windows of the weights after this step, on the steps where validation
 * ran (every {@code evalEvery} and the last), else NaN (absent from the JSON line); {@code valMs}: what it took.
 */
public record StepMetrics(long step, long steps, float loss, float lr, float lossScale, float gradNorm, boolean updated,
                          boolean skipped, double msPerStep, double tokensPerSecond, Map<String, Double> phaseMs,
                          long stagedActivationBytes, long stagedWeightBytes, float valLoss, double valMs) {
    public StepMetrics(long step, long steps, float loss, float lr, float lossScale, float gradNorm, boolean updated,
                       boolean skipped, double msPerStep, double tokensPerSecond, Map<String, Double> phaseMs) {
        this(step, steps, loss, lr, lossScale, gradNorm, updated, skipped, msPerStep, tokensPerSecond, phaseMs, 0, 0);
    }

    public StepMetrics(long step, long steps, float loss, float lr, float lossScale, float gradNorm, boolean updated,
                       boolean skipped, double msPerStep, double tokensPerSecond, Map<String, Double> phaseMs,
                       long stagedActivationBytes, long stagedWeightBytes) {
        this(step, steps, loss, lr, lossScale, gradNorm, updated, skipped, msPerStep, tokensPerSecond, phaseMs, stagedActivationBytes,
                stagedWeightBytes, Float.NaN, 0);
    }

    /** Whether validation ran after this step. */
    public boolean validated() { return !Float.isNaN(valLoss); }

    /** The same figures with a validation loss. */
    public StepMetrics withValidation(float loss, double ms) {
        return new StepMetrics(step, steps, this.loss, lr, lossScale, gradNorm, updated, skipped, msPerStep, tokensPerSecond, phaseMs,
                stagedActivationBytes, stagedWeightBytes, loss, ms);
    }

    /** The metrics.jsonl line: floats as Java prints them (non-finite as null), times rounded to 0.01 ms (phases 0.001 ms). */
    public String json() {
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("type", "step");
        m.put("step", step);
        m.put("loss", loss);
        m.put("lr", lr);
        m.put("lossScale", lossScale);
        m.put("gradNorm", gradNorm);
        m.put("updated", updated);
        m.put("skipped", skipped);
        m.put("ms", rounded(msPerStep, 100));
        m.put("tokensPerSecond", rounded(tokensPerSecond, 10));
        phaseMs.forEach((k, v) -> m.put("t_" + k, rounded(v, 1000)));
        m.put("stagedActivationBytes", stagedActivationBytes);
        m.put("stagedWeightBytes", stagedWeightBytes);
        if (validated()) {
            m.put("valLoss", valLoss);
            m.put("valMs", rounded(valMs, 100));
        }
        return ane4j.model.Json.compact(m);
    }

    private static double rounded(double v, double scale) { return Double.isFinite(v) ? Math.rint(v * scale) / scale : v; }
}
