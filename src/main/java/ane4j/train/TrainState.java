package ane4j.train;

import ane4j.model.ModelConfig;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Everything besides the tensors that a run needs to continue bit-identically: the model config, the next step, the
 * AdamW step, the data RNG state, the loss-scale state, and the run's identity (a hash of its configuration).
 */
public record TrainState(ModelConfig config, String runId, long step, int adamStep, long rngState,
                         float lossScale, int cleanSteps, float lastLoss) {

    String encode() {
        StringBuilder sb = new StringBuilder();
        sb.append("runId = ").append(runId).append('\n');
        sb.append("step = ").append(step).append('\n');
        sb.append("adamStep = ").append(adamStep).append('\n');
        sb.append("rngState = ").append(rngState).append('\n');
        sb.append("lossScale = ").append(Float.floatToRawIntBits(lossScale)).append('\n');
        sb.append("cleanSteps = ").append(cleanSteps).append('\n');
        sb.append("lastLoss = ").append(Float.floatToRawIntBits(lastLoss)).append('\n');
        sb.append("[model]\n").append(config.toFileText()).append('\n');
        return sb.toString();
    }

    static TrainState decode(String text, Path file) {
        int split = text.indexOf("[model]\n");
        if (split < 0) throw new CheckpointFormatException(file + ": state section has no [model] block");
        Map<String, String> kv = new LinkedHashMap<>();
        for (String line : text.substring(0, split).split("\n")) {
            int eq = line.indexOf(" = ");
            if (eq > 0) kv.put(line.substring(0, eq), line.substring(eq + 3));
        }
        ModelConfig config;
        try {
            config = ModelConfig.fromFileText(text.substring(split + 8), file + " (state section)");
        } catch (RuntimeException e) {
            throw new CheckpointFormatException(file + ": bad model config in state: " + e.getMessage());
        }
        try {
            return new TrainState(config, kv.get("runId"), Long.parseLong(kv.get("step")), Integer.parseInt(kv.get("adamStep")),
                    Long.parseLong(kv.get("rngState")), Float.intBitsToFloat(Integer.parseInt(kv.get("lossScale"))),
                    Integer.parseInt(kv.get("cleanSteps")), Float.intBitsToFloat(Integer.parseInt(kv.get("lastLoss"))));
        } catch (RuntimeException e) {
            throw new CheckpointFormatException(file + ": state section is incomplete or malformed (" + e.getMessage() + ")");
        }
    }
}
