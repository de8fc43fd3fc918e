package ane4j.train;

import ane4j.run.TrainOptions;
import ane4j.chip.Chip;
import ane4j.chip.ChipRules;
import ane4j.chip.Severity;
import ane4j.chip.Violation;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Every training kernel of every preset (both attention modes, dynamic and static weights) passes the chip rules of
 * every family with no error (issue 12 pt 6); the warnings each preset still gets are printed.
 */
class TrainingKernelsChipRulesTest {

    @Test
    void everyKernelOfEveryPresetPassesEveryChip() {
        Map<String, TreeSet<String>> errors = new TreeMap<>(), warnings = new TreeMap<>();
        List<String> firstErrors = new ArrayList<>();
        for (String preset : ModelConfig.PRESETS) {
            ModelConfig c = ModelConfig.parse(preset);
            for (boolean threeStage : new boolean[] {false, true})
                for (boolean stat : new boolean[] {false, true})
                  for (TrainingKernels.LoraInputs lora : LORA) {
                    if (stat && lora != null) continue;                 // static weights bake the merged adapters: no variant
                    Function<String, float[]> w = stat ? seg -> new float[size(c, seg)] : null;
                    for (TrainingKernels.Spec k : new TrainingKernels(c, DType.FP16, w, threeStage, lora).all())
                        for (Chip chip : Chip.values())
                            for (Violation v : ChipRules.check(k.program(), chip)) {
                                String mode = (threeStage ? "threestage " : "") + (stat ? "static " : "") + (lora == null ? "" : "lora" + lora.rank() + " ");
                                if (v.isError()) {
                                    if (errors.computeIfAbsent(preset, p -> new TreeSet<>()).add(v.rule().id() + " " + mode + k.name() + " " + chip))
                                        if (firstErrors.size() < 5) firstErrors.add(preset + " " + mode + k.name() + " " + chip + ": " + v.format());
                                }
                                else if (v.severity() == Severity.WARNING)
                                    warnings.computeIfAbsent(preset, p -> new TreeSet<>()).add(v.rule().id() + " " + chip);
                            }
                }
        }
        warnings.forEach((p, ws) -> System.out.println("[chip rules] " + p + " warnings: " + ws));
        errors.forEach((p, es) -> System.out.println("[chip rules] " + p + " ERRORS: " + es));
        assertEquals(List.of(), firstErrors, "chip-rule errors: " + errors);
    }

    /**
     * The LoRA variants of sdpaFwd and ffnFused (all seven targets): rank 8 (PEFT's usual; stacked 2 or more per region
     * on every preset) and rank 64 (one per region on tiny, dim 64; the widest inputs elsewhere).
     */
    static final List<TrainingKernels.LoraInputs> LORA = java.util.Arrays.asList(null,
            new TrainingKernels.LoraInputs(8, TrainOptions.LORA_TARGETS), new TrainingKernels.LoraInputs(64, TrainOptions.LORA_TARGETS));

    /** The LoRA variants are new programs only where they compute an adapted projection; every other kernel is the same text. */
    @Test
    void loraVariantsChangeOnlySdpaFwdAndFfnFused() {
        for (String preset : ModelConfig.PRESETS) {
            ModelConfig c = ModelConfig.parse(preset);
            var plain = new TrainingKernels(c, DType.FP16).all();
            var lora = new TrainingKernels(c, DType.FP16, null, false, LORA.get(1)).all();
            var oAndW2 = new TrainingKernels(c, DType.FP16, null, false, new TrainingKernels.LoraInputs(8, List.of("o", "w2"))).all();
            for (int i = 0; i < plain.size(); i++) {
                String name = plain.get(i).name(), text = ane4j.mil.MilWriter.write(plain.get(i).program(), ane4j.mil.Dialect.IOS18);
                assertEquals(name.equals("sdpaFwd") || name.equals("ffnFused"), !text.equals(ane4j.mil.MilWriter.write(lora.get(i).program(), ane4j.mil.Dialect.IOS18)), preset + " " + name);
                assertEquals(text, ane4j.mil.MilWriter.write(oAndW2.get(i).program(), ane4j.mil.Dialect.IOS18), preset + " " + name + ": o and w2 meet the residual on the CPU");
            }
        }
    }

    /** Elements of a static weight segment as TrainingKernels asks for it (IC·OC, or HD for the QK-norm weights). */
    static int size(ModelConfig c, String seg) {
        int d = c.dim(), h = c.hiddenDim(), q = c.qDim(), kv = c.kvDim();
        return switch (seg) {
            case "wqT", "wq", "woT", "wo" -> d * q;
            case "wkT", "wvT", "wk", "wv" -> d * kv;
            case "w1T", "w3T", "w2", "w1", "w3" -> d * h;
            case "qNorm", "kNorm" -> c.headDim();
            default -> throw new IllegalArgumentException(seg);
        };
    }
}
