package ane4j.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.golden.GoldenSafetensors;
import ane4j.golden.TensorCheck;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.ParameterView;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The LoRA step (the base staged as in full training, the adapters' rank-r term as kernel inputs and on the CPU,
 * adapter gradients from the step's dY and u = A·drop(x), frozen base) against a PyTorch LoRA (tools/gen_lora_golden.py):
 * loss, every adapter gradient, 10 AdamW steps; llama_qvo1 adapts q,v,o,w1 with the loss on every position, qwen3_all
 * adapts all seven projections with the loss only on the completion; llama_drop and qwen3_drop are the same with
 * lora_dropout 0.25 and 0.1 (the masks of ane4j's LoraDropout, which the script draws with the same counter-based
 * generator; sequence = the AdamW step), qwen3_drop with the completion-only loss.
 */
class LoraGoldenTest {
    // fp32 storage: only summation order differs from PyTorch (the kernels add B·(s·A·x) to W·x as PyTorch does; the
    // merged W + s·B·A of the earlier path met the same bounds, so they are unchanged: the gradients moved by rounding
    // only, measured ≤ 6.7e-8 absolute against PyTorch now, ≤ 1.7e-8 before, both far inside 2e-5)
    static final float LOSS_TOL_FP32 = 1e-5f, GRAD_TOL_FP32 = 2e-5f, STEP_LOSS_TOL_FP32 = 1e-4f, FINAL_TOL_FP32 = 5e-5f;
    // fp16 storage (as the ANE): every kernel tensor rounded to fp16, u = s·A·drop(x) and Bᵀ among them
    static final float LOSS_TOL_FP16 = 5e-3f, GRAD_REL_TOL_FP16 = 0.03f, STEP_LOSS_TOL_FP16 = 1e-2f;

    record Case(GoldenSafetensors g, ModelConfig config, ParameterLayout layout, float[] base, LoraAdapters adapters) {
        float meta(String k) { return Float.parseFloat(g.metadata().get(k)); }
    }

    static Case load(String name) {
        GoldenSafetensors g = GoldenSafetensors.load("golden/lora/" + name + ".safetensors");
        ModelConfig c = TrainingGoldenTest.config(g);
        ParameterLayout layout = new ParameterLayout(c);
        var meta = g.metadata();
        LoraDropout dropout = meta.containsKey("dropout") ? new LoraDropout(Float.parseFloat(meta.get("dropout")), Long.parseLong(meta.get("dropoutSeed"))) : LoraDropout.NONE;
        LoraAdapters ad = new LoraAdapters(c, Integer.parseInt(meta.get("rank")), Float.parseFloat(meta.get("alpha")),
                List.of(meta.get("targets").split(",")), dropout);
        for (ParameterView v : ad.views()) System.arraycopy(g.f32(v.name()), 0, ad.data(), v.offset(), v.size());
        assertEquals(List.of(g.metadata().get("adapters").split(",")), ad.views().stream().map(ParameterView::name).toList(), "adapter layout");
        return new Case(g, c, layout, TrainingGoldenTest.params(g, layout), ad);
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama_qvo1", "qwen3_all", "llama_drop", "qwen3_drop"})
    void lossAndAdapterGradientsMatchPyTorchInFp32(String name) {
        Case k = load(name);
        float[] base = k.base().clone(), grads = new float[k.adapters().size()];
        try (TrainingStep step = new TrainingStep(k.config(), new RefBackend(RefBackend.Options.FP32_STORAGE), TrainingStep.Options.of(DType.FP32).withLora(k.adapters()))) {
            step.stageWeights(base);
            float loss = step.forwardBackward(base, grads, k.g().i32("tokens"), k.g().i32("targets"), 1f, 0);
            assertEquals(k.g().f32("loss")[0], loss, LOSS_TOL_FP32, "loss");
            for (ParameterView v : k.adapters().views())
                TensorCheck.checkTensor(name + " grad." + v.name(), k.g().f32("grad." + v.name()), Arrays.copyOfRange(grads, v.offset(), v.end()), GRAD_TOL_FP32, 0);
        }
        assertArrayEquals(k.base(), base, "the base weights are frozen");
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama_qvo1", "qwen3_all", "llama_drop", "qwen3_drop"})
    void tenAdamWStepsFollowPyTorchInFp32(String name) {
        Case k = load(name);
        float[] losses = tenSteps(k, new RefBackend(RefBackend.Options.FP32_STORAGE), DType.FP32, 1f);
        float[] expected = k.g().f32("losses");
        for (int t = 0; t < expected.length; t++) assertEquals(expected[t], losses[t], STEP_LOSS_TOL_FP32, "loss before AdamW step " + t);
        for (ParameterView v : k.adapters().views())
            TensorCheck.checkTensor(name + " final." + v.name(), k.g().f32("final." + v.name()), Arrays.copyOfRange(k.adapters().data(), v.offset(), v.end()), FINAL_TOL_FP32, 0);
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama_qvo1", "qwen3_all", "llama_drop", "qwen3_drop"})
    void fp16StorageStaysWithinItsBounds(String name) {
        Case k = load(name);
        float scale = 256f * k.config().nLayers();
        float[] grads = new float[k.adapters().size()];
        try (TrainingStep step = new TrainingStep(k.config(), new RefBackend(RefBackend.Options.ANE_LIKE), TrainingStep.Options.of(DType.FP16).withLora(k.adapters()))) {
            step.stageWeights(k.base());
            float loss = step.forwardBackward(k.base(), grads, k.g().i32("tokens"), k.g().i32("targets"), scale, 0);
            assertEquals(k.g().f32("loss")[0], loss, LOSS_TOL_FP16, "loss");
            for (ParameterView v : k.adapters().views()) {
                double rel = relativeL2(k.g().f32("grad." + v.name()), grads, v.offset(), 1 / scale);
                System.out.printf("%s fp16 grad.%s: relative L2 %.2e%n", name, v.name(), rel);
                assertTrue(rel < GRAD_REL_TOL_FP16, name + " grad." + v.name() + ": relative L2 error " + rel);
            }
        }
        float[] losses = tenSteps(load(name), new RefBackend(RefBackend.Options.ANE_LIKE), DType.FP16, scale);
        float[] expected = k.g().f32("losses");
        double worst = 0;
        for (int t = 0; t < expected.length; t++) {
            worst = Math.max(worst, Math.abs(expected[t] - losses[t]));
            assertEquals(expected[t], losses[t], STEP_LOSS_TOL_FP16, "fp16 loss before AdamW step " + t);
        }
        System.out.printf("%s fp16 10-step losses: max error %.2e%n", name, worst);
    }

    /** As the Trainer updates: unscale, norm, clip + AdamW over the adapters only, zero the gradients. */
    static float[] tenSteps(Case k, RefBackend backend, DType io, float lossScale) {
        float[] base = k.base(), ad = k.adapters().data();
        float[] grads = new float[ad.length], m = new float[ad.length], v = new float[ad.length], losses = new float[10];
        AdamW adamw = new AdamW(k.meta("beta1"), k.meta("beta2"), k.meta("eps"), k.meta("weightDecay"));
        try (TrainingStep step = new TrainingStep(k.config(), backend, TrainingStep.Options.of(io).withLora(k.adapters()))) {
            for (int t = 0; t < losses.length; t++) {
                step.stageWeights(base);
                losses[t] = step.forwardBackward(base, grads, k.g().i32("tokens"), k.g().i32("targets"), lossScale, t);
                float norm = (float) Math.sqrt(AdamW.sumOfSquares(grads, 1 / lossScale));
                adamw.step(k.adapters().views(), ad, grads, m, v, t + 1, k.meta("lr"), AdamW.clipFactor(norm, k.meta("clip")) / lossScale, true);
            }
        }
        return losses;
    }

    static double relativeL2(float[] expected, float[] got, int offset, float mul) {
        double num = 0, den = 0;
        for (int i = 0; i < expected.length; i++) {
            double d = expected[i] - got[offset + i] * mul;
            num += d * d;
            den += (double) expected[i] * expected[i];
        }
        return Math.sqrt(num / Math.max(den, 1e-30));
    }
}
