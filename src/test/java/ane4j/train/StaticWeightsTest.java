package ane4j.train;

import ane4j.golden.TensorCheck;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ane4j.backend.CompileBudgetExceededException;
import ane4j.backend.ref.RefBackend;
import ane4j.golden.GoldenSafetensors;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import org.junit.jupiter.api.Test;

/** The static-weights pipeline computes what the dynamic one does, and spends 8 compiles per layer per weight update. */
class StaticWeightsTest {
    @Test
    void staticAndDynamicWeightsGiveTheSameGradients() {
        GoldenSafetensors g = GoldenSafetensors.load("golden/train/qwen3.safetensors");
        ModelConfig c = TrainingGoldenTest.config(g);
        ParameterLayout layout = new ParameterLayout(c);
        float[] params = TrainingGoldenTest.params(g, layout);
        float[] dyn = new float[layout.size()], stat = new float[layout.size()];
        var fp32 = RefBackend.Options.FP32_STORAGE;
        float lossDyn, lossStat;
        try (TrainingStep step = new TrainingStep(c, new RefBackend(fp32), TrainingStep.Options.of(DType.FP32))) {
            step.stageWeights(params);
            lossDyn = step.forwardBackward(params, dyn, g.i32("tokens"), g.i32("targets"), 1f);
            assertEquals(10, step.compiles());
        }
        try (TrainingStep step = new TrainingStep(c, new RefBackend(fp32), TrainingStep.Options.of(DType.FP32).withStaticWeights(true))) {
            step.stageWeights(params);
            lossStat = step.forwardBackward(params, stat, g.i32("tokens"), g.i32("targets"), 1f);
            assertEquals(2 + 8 * c.nLayers(), step.compiles());
            step.stageWeights(params);
            assertEquals(2 + 16 * c.nLayers(), step.compiles());
        }
        assertEquals(lossDyn, lossStat, 1e-6f);
        TensorCheck.checkTensor("static-weights gradients against dynamic", dyn, stat, 1e-5, 0);
    }

    @Test
    void staticWeightsRunIntoTheCompileBudget() {
        ModelConfig c = TrainingGoldenTest.config(GoldenSafetensors.load("golden/train/llama.safetensors"));
        float[] params = new float[new ParameterLayout(c).size()];
        var budget = RefBackend.Options.FP32_STORAGE.withCompileBudget(2L + 8 * c.nLayers() + 3);
        try (TrainingStep step = new TrainingStep(c, new RefBackend(budget), TrainingStep.Options.of(DType.FP32).withStaticWeights(true))) {
            step.stageWeights(params);
            var e = assertThrows(CompileBudgetExceededException.class, () -> step.stageWeights(params));
            assertEquals(2 + 8 * c.nLayers() + 3, e.budget());
        }
    }
}
