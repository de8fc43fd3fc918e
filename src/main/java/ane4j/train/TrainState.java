package ane4j.train;

import ane4j.model.ModelConfig;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Everything besides the tensors that a run needs to continue bit-identically: the model config (a preset run) or the
 * graph's parameter layout (a graph run: {@code config} null), the next step, the AdamW step, the data RNG state, the
 * loss-scale state, and the run's identity (a hash of its configuration).
 */
public record TrainState(ModelConfig config, String runId, long step, int adamStep, long rngState,
                         float lossScale, int cleanSteps, float lastLoss, GraphLayout graph) {

    /** The state of a preset model's run. */
    public TrainState(ModelConfig config, String runId, long step, int adamStep, long rngState, float lossScale, int cleanSteps, float lastLoss) {
        this(config, runId, step, adamStep, rngState, lossScale, cleanSteps, lastLoss, null);
    }

    public TrainState {
        if ((config == null) == (graph == null)) throw new IllegalArgumentException("[checkpoint] a state names a model config or a graph layout, one of them");
    }

    /** The floats of the trained model: the config's parameters or the graph's. */
    public long parameterCount() { return config != null ? config.parameterCount() : graph.size(); }

    String encode() {
        StringBuilder sb = new StringBuilder();
        sb.append("runId = ").append(runId).append('\n');
        sb.append("step = ").append(step).append('\n');
        sb.append("adamStep = ").append(adamStep).append('\n');
        sb.append("rngState = ").append(rngState).append('\n');
        sb.append("lossScale = ").append(Float.floatToRawIntBits(lossScale)).append('\n');
        sb.append("cleanSteps = ").append(cleanSteps).append('\n');
        sb.append("lastLoss = ").append(Float.floatToRawIntBits(lastLoss)).append('\n');
        // a preset's model block, or a graph run's layout
        if (config != null) sb.append("[model]\n").append(config.toFileText()).append('\n');
        else sb.append("[graph]\n").append(graph.toText()).append('\n');
        return sb.toString();
    }

    static TrainState decode(String text, Path file) {
        int split = text.indexOf("[model]\n");
        int graphAt = text.indexOf("[graph]\n");
        if (split < 0 && graphAt >= 0) {
            Map<String, String> kv = keyValues(text.substring(0, graphAt));
            GraphLayout layout = GraphLayout.fromText(text.substring(graphAt + 8), file + " (state section)");
            return decode(kv, null, layout, file);
        }
        if (split < 0) throw new CheckpointFormatException(file + ": state section has no [model] block");
        Map<String, String> kv = keyValues(text.substring(0, split));
        ModelConfig config;
        try {
            config = ModelConfig.fromFileText(text.substring(split + 8), file + " (state section)");
        } catch (RuntimeException e) {
            throw new CheckpointFormatException(file + ": bad model config in state: " + e.getMessage());
        }
        return decode(kv, config, null, file);
    }

    private static Map<String, String> keyValues(String lines) {
        Map<String, String> kv = new LinkedHashMap<>();
        for (String line : lines.split("\n")) {
            int eq = line.indexOf(" = ");
            if (eq > 0) kv.put(line.substring(0, eq), line.substring(eq + 3));
        }
        return kv;
    }

    private static TrainState decode(Map<String, String> kv, ModelConfig config, GraphLayout graph, Path file) {
        try {
            return new TrainState(config, kv.get("runId"), Long.parseLong(kv.get("step")), Integer.parseInt(kv.get("adamStep")),
                    Long.parseLong(kv.get("rngState")), Float.intBitsToFloat(Integer.parseInt(kv.get("lossScale"))),
                    Integer.parseInt(kv.get("cleanSteps")), Float.intBitsToFloat(Integer.parseInt(kv.get("lastLoss"))), graph);
        } catch (RuntimeException e) {
            throw new CheckpointFormatException(file + ": state section is incomplete or malformed (" + e.getMessage() + ")");
        }
    }
}
