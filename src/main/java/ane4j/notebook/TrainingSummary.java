package ane4j.notebook;

import ane4j.run.StepMetrics;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What a finished (or stopped) {@code %%train} cell ends with: one compact block instead of the run record and the
 * per-step table (those stay behind {@code %train record} and {@code %train table}).
 */
public record TrainingSummary(String state, long steps, long totalSteps, StepMetrics last, StepMetrics bestTrain, StepMetrics lastVal,
                              StepMetrics bestVal, double tokensPerSecond, double wallSeconds, int restarts, Path runDir, Path export,
                              long skippedUpdates, long recordedSteps) {

    /** The summary of a run's history (global steps); null fields where there is nothing to say. */
    static TrainingSummary of(String state, List<StepMetrics> history, long totalSteps, double wallSeconds, int restarts, Path runDir, Path export) {
        StepMetrics last = history.isEmpty() ? null : history.getLast(), best = null, lastVal = null, bestVal = null;
        double tokens = 0, ms = 0;
        long skipped = 0;
        for (StepMetrics m : history) {
            if (m.skipped()) skipped++;
            if (Float.isFinite(m.loss()) && (best == null || m.loss() < best.loss())) best = m;
            if (m.validated()) {
                lastVal = m;
                if (bestVal == null || m.valLoss() < bestVal.valLoss()) bestVal = m;
            }
            tokens += m.tokensPerSecond() * m.msPerStep() / 1000;
            ms += m.msPerStep();
        }
        return new TrainingSummary(state, last == null ? 0 : last.step() + 1, totalSteps, last, best, lastVal, bestVal,
                ms > 0 ? tokens / (ms / 1000) : Double.NaN, wallSeconds, restarts, runDir, export, skipped, history.size());
    }

    /** The lines of the summary, each {@code label: value}. */
    List<String[]> rows() {
        List<String[]> r = new ArrayList<>();
        r.add(new String[] {"run", state + " at step " + steps + "/" + totalSteps + " in " + Format.duration(wallSeconds)
                + (restarts > 0 ? " · " + restarts + " worker restart" + (restarts == 1 ? "" : "s") : " · no restarts")});
        if (last != null) r.add(new String[] {"train loss", Format.num(last.loss()) + " (best " + Format.num(bestTrain.loss()) + " at step " + (bestTrain.step() + 1) + ")"});
        if (lastVal != null) r.add(new String[] {"validation loss", Format.num(lastVal.valLoss()) + " at step " + (lastVal.step() + 1)
                + " (best " + Format.num(bestVal.valLoss()) + " at step " + (bestVal.step() + 1) + ")"});
        // fp16 loss scaling (ane-audit-2 R5): a step whose gradient overflowed drops its update and halves the scale
        if (recordedSteps > 0) r.add(new String[] {"skipped updates", skippedUpdates + " of " + recordedSteps + " steps"
                + (skippedUpdates > 0 ? " (a non-finite gradient; the loss scale halves each time)" : "")});
        if (Double.isFinite(tokensPerSecond) && tokensPerSecond > 0) r.add(new String[] {"throughput", Math.round(tokensPerSecond) + " tokens/s"});
        r.add(new String[] {"run dir", runDir.toString()});
        if (export != null) r.add(new String[] {"exported", export.toString()});
        r.add(new String[] {"more", "%train table (every step) · %train record (run record) · %train plot"});
        return r;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder();
        int w = rows().stream().mapToInt(x -> x[0].length()).max().orElse(0);
        for (String[] x : rows()) sb.append(x[0]).append(" ".repeat(w - x[0].length())).append("  ").append(x[1]).append('\n');
        return sb.toString().stripTrailing();
    }

    String html() {
        return Renderers.keyValueHtml("training " + state, rows());
    }
}
