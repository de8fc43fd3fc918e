package ane4j.train;

import ane4j.golden.TensorCheck;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.golden.GoldenSafetensors;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.ParameterView;
import ane4j.model.RopeStyle;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * llm.c's test_gpt2, for ane4j: the ANE-shaped training step (kernels on the reference backend, CPU ops, AdamW) against
 * PyTorch (tools/gen_golden.py): loss, every gradient, and the losses of 10 AdamW steps.
 */
class TrainingGoldenTest {
    // fp32 storage: only summation order differs from PyTorch
    static final float LOSS_TOL_FP32 = 1e-5f, GRAD_TOL_FP32 = 2e-4f;
    // fp16 storage (as the ANE): every kernel tensor rounded to fp16
    static final float LOSS_TOL_FP16 = 5e-3f, GRAD_REL_TOL_FP16 = 0.05f;

    static ModelConfig config(GoldenSafetensors g) {
        Map<String, String> md = g.metadata();
        return new ModelConfig(md.get("config"), i(md, "dim"), i(md, "hiddenDim"), i(md, "nLayers"), i(md, "nHeads"), i(md, "nKvHeads"),
                i(md, "headDim"), i(md, "vocabSize"), i(md, "seqLen"), Float.parseFloat(md.get("ropeTheta")),
                md.get("ropeStyle").equals("half") ? RopeStyle.HALF : RopeStyle.INTERLEAVED, Boolean.parseBoolean(md.get("qkNorm")),
                true, Float.parseFloat(md.get("normEps")), 1f);
    }

    private static int i(Map<String, String> md, String k) { return Integer.parseInt(md.get(k)); }

    static float[] params(GoldenSafetensors g, ParameterLayout layout) {
        float[] p = new float[layout.size()];
        for (ParameterView v : layout.views()) System.arraycopy(g.f32(v.name()), 0, p, v.offset(), v.size());
        return p;
    }

    @ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({"llama,false", "qwen3,false", "llama,true", "qwen3,true"})
    void lossAndEveryGradientMatchPyTorchInFp32(String name, boolean threeStage) {
        GoldenSafetensors g = GoldenSafetensors.load("golden/train/" + name + ".safetensors");
        ModelConfig c = config(g);
        ParameterLayout layout = new ParameterLayout(c);
        float[] params = params(g, layout), grads = new float[layout.size()];
        try (TrainingStep step = new TrainingStep(c, new RefBackend(RefBackend.Options.FP32_STORAGE), TrainingStep.Options.of(DType.FP32).withThreeStage(threeStage))) {
            step.stageWeights(params);
            float loss = step.forwardBackward(params, grads, g.i32("tokens"), g.i32("targets"), 1f);
            assertEquals(g.f32("loss")[0], loss, LOSS_TOL_FP32, "loss");
            for (ParameterView v : layout.views()) {
                float[] got = java.util.Arrays.copyOfRange(grads, v.offset(), v.offset() + v.size());
                TensorCheck.checkTensor(name + " grad." + v.name(), g.f32("grad." + v.name()), got, GRAD_TOL_FP32, 0);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "qwen3"})
    void tenAdamWStepsFollowPyTorch(String name) {
        GoldenSafetensors g = GoldenSafetensors.load("golden/train/" + name + ".safetensors");
        ModelConfig c = config(g);
        ParameterLayout layout = new ParameterLayout(c);
        float[] params = params(g, layout), grads = new float[layout.size()], m = new float[layout.size()], v = new float[layout.size()];
        float[] expected = g.f32("losses");
        AdamW adamw = new AdamW(0.9f, 0.95f, 1e-8f, Float.parseFloat(g.metadata().get("weightDecay")));
        float lr = Float.parseFloat(g.metadata().get("lr"));
        try (TrainingStep step = new TrainingStep(c, new RefBackend(RefBackend.Options.FP32_STORAGE), TrainingStep.Options.of(DType.FP32))) {
            for (int t = 0; t < expected.length; t++) {
                step.stageWeights(params);
                float loss = step.forwardBackward(params, grads, g.i32("tokens"), g.i32("targets"), 1f);
                assertEquals(expected[t], loss, 1e-4f, "loss before AdamW step " + t);
                // as the Trainer does it: the norm pass, then clip + AdamW + zero the gradients in one pass
                float norm = (float) Math.sqrt(AdamW.sumOfSquares(grads, 1f));
                adamw.step(layout.views(), params, grads, m, v, t + 1, lr, AdamW.clipFactor(norm, Float.parseFloat(g.metadata().get("clip"))), true);
            }
        }
        for (String fin : g.metadata().get("finals").split(",")) {
            ParameterView view = layout.view(fin);
            float[] want = g.f32("final." + fin);
            for (int k = 0; k < view.size(); k++)
                assertEquals(want[k], params[view.offset() + k], 5e-5f, "final." + fin + "[" + k + "]");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "qwen3"})
    void fp16StorageStaysCloseToPyTorch(String name) {
        GoldenSafetensors g = GoldenSafetensors.load("golden/train/" + name + ".safetensors");
        ModelConfig c = config(g);
        ParameterLayout layout = new ParameterLayout(c);
        float[] params = params(g, layout), grads = new float[layout.size()];
        float scale = 256f * c.nLayers();
        try (TrainingStep step = new TrainingStep(c, new RefBackend(RefBackend.Options.ANE_LIKE), TrainingStep.Options.of(DType.FP16))) {
            step.stageWeights(params);
            float loss = step.forwardBackward(params, grads, g.i32("tokens"), g.i32("targets"), scale);
            assertEquals(g.f32("loss")[0], loss, LOSS_TOL_FP16, "loss");
            for (ParameterView v : layout.views()) {
                float[] expected = g.f32("grad." + v.name());
                double num = 0, den = 0;
                for (int k = 0; k < v.size(); k++) {
                    double diff = expected[k] - grads[v.offset() + k] / scale;
                    num += diff * diff;
                    den += (double) expected[k] * expected[k];
                }
                double rel = Math.sqrt(num / Math.max(den, 1e-30));
                assertTrue(rel < GRAD_REL_TOL_FP16, "grad." + v.name() + ": relative L2 error " + rel);
            }
        }
    }
}
