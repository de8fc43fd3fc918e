package ane4j.train;

import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.golden.GoldenSafetensors;
import ane4j.golden.TensorCheck;
import ane4j.mil.DType;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import ane4j.model.LlamaGraph;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.ParameterView;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The CPU loss head of {@link GraphStep}: its cross-entropy on rows [N, C] equals the hand-written step's
 * ({@link CpuOps#crossEntropy}, columns (V, S)); a step whose graph ends at the logits gives the loss and every weight
 * gradient of the same step with the loss in MIL ({@code crossEntropyLabels}) and of PyTorch, in fp32 storage and in fp16.
 */
class CpuLossHeadTest {
    /** rows × cols logits spread over ±spread, labels in 0..cols-1 with some −1 (ignored). */
    private static float[] logits(Random r, int rows, int cols, float spread) {
        float[] x = new float[rows * cols];
        for (int i = 0; i < x.length; i++) x[i] = (r.nextFloat() * 2 - 1) * spread;
        return x;
    }

    @ParameterizedTest
    @ValueSource(floats = {1f, 1024f})
    void rowsGiveTheHandWrittenCrossEntropy(float scale) {
        Random r = new Random(31);
        int rows = 37, cols = 1003;
        float[] x = logits(r, rows, cols, 8f);
        int[] labels = new int[rows];
        for (int i = 0; i < rows; i++) labels[i] = i % 7 == 3 ? -1 : r.nextInt(cols);
        // the hand-written step's layout: (V, S), column j = position j
        float[] xt = new float[x.length];
        for (int i = 0; i < rows; i++) for (int c = 0; c < cols; c++) xt[c * rows + i] = x[i * cols + c];
        float[] dt = new float[x.length], d = new float[x.length];
        float handLoss = CpuOps.crossEntropy(dt, xt, labels, cols, rows, scale);
        float loss = CpuLossHead.crossEntropy(d, x, labels, rows, cols, scale);
        assertEquals(handLoss, loss, 1e-6f * Math.abs(handLoss), "loss");
        float[] dHand = new float[x.length];
        for (int i = 0; i < rows; i++) for (int c = 0; c < cols; c++) dHand[i * cols + c] = dt[c * rows + i];
        // the same formulas summed in another order: fp32 rounding apart (|d| ≤ scale/n)
        TensorCheck.checkTensor("d_logits", dHand, d, 1e-6 * scale / rows, 1e-5);
        for (int i = 0; i < rows; i++)
            if (labels[i] < 0) for (int c = 0; c < cols; c++) assertEquals(0f, d[i * cols + c], "ignored row " + i);
        // in place gives the same bits; without a gradient, the same loss
        float[] inPlace = x.clone();
        assertEquals(loss, CpuLossHead.crossEntropy(inPlace, inPlace, labels, rows, cols, scale));
        assertArrayEquals(d, inPlace);
        assertEquals(loss, CpuLossHead.crossEntropy(null, x, labels, rows, cols, scale));
    }

    @Test
    void badLabelsAreOneLine() {
        float[] x = new float[2 * 3];
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CpuLossHead.crossEntropy(null, x, new int[] {0, 3}, 2, 3, 1f));
        assertEquals("[graph] label 3 of row 1 is outside 0..2 (or −1 to ignore the row)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CpuLossHead.crossEntropy(null, x, new int[] {0}, 2, 3, 1f));
        assertEquals("[graph] 1 labels for 2 rows of logits; give one label per row", e.getMessage());
    }

    /** The loss (unscaled) and gradients (scaled) of the llama golden's step, loss in MIL or on the CPU. */
    private record Result(float loss, float[] grads, float lossOfForward) {}

    private static Result step(GoldenSafetensors g, boolean cpuLoss, DType dt, RefBackend.Options opt, float scale) {
        ModelConfig c = TrainingGoldenTest.config(g);
        ParameterLayout layout = new ParameterLayout(c);
        List<String> names = layout.views().stream().map(v -> LlamaGraph.inputName(v.name())).toList();
        float[] params = TrainingGoldenTest.params(g, layout), grads = new float[layout.size()];
        Map<String, TensorBuffer> data = Map.of(
                "tokens", TensorBuffer.of(TensorType.of(DType.INT32, c.seqLen()), GeneratedGradientsTest.toFloats(g.i32("tokens"))),
                "targets", TensorBuffer.of(TensorType.of(DType.INT32, c.seqLen()), GeneratedGradientsTest.toFloats(g.i32("targets"))));
        RefBackend backend = new RefBackend(opt);
        try (GraphStep step = cpuLoss ? new GraphStep(LlamaGraph.buildLogits(c, dt), new CpuLossHead("logits", "targets"), names, backend, GraphStep.Options.defaults())
                : new GraphStep(LlamaGraph.build(c, dt, scale), "loss", names, backend, GraphStep.Options.defaults())) {
            if (cpuLoss) {
                // the programs: no cross-entropy in MIL (no one-hot, no exp over the vocabulary), d_logits an input of the backward
                assertTrue(step.forwardProgram().main().operations().stream().noneMatch(o -> o.op() == ane4j.mil.Op.EQUAL || o.op() == ane4j.mil.Op.EXP));
                assertTrue(step.backwardProgram().main().inputs().stream().anyMatch(v -> v.name().equals("d_logits")));
                return new Result(step.forwardBackward(params, grads, data, scale), grads, step.loss(params, data));
            }
            return new Result(step.forwardBackward(params, grads, data) / scale, grads, step.loss(params, data) / scale);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "qwen3"})
    void fp32TheSameLossAndGradientsAsTheLossInMil(String name) {
        GoldenSafetensors g = GoldenSafetensors.load("golden/train/" + name + ".safetensors");
        float scale = 256f;
        Result mil = step(g, false, DType.FP32, RefBackend.Options.FP32_STORAGE, scale), cpu = step(g, true, DType.FP32, RefBackend.Options.FP32_STORAGE, scale);
        assertEquals(mil.loss(), cpu.loss(), 1e-5f, "loss");
        assertEquals(g.f32("loss")[0], cpu.loss(), 1e-5f, "loss against PyTorch");
        assertEquals(cpu.loss(), cpu.lossOfForward(), 0f, "GraphStep.loss with the head");
        ParameterLayout layout = new ParameterLayout(TrainingGoldenTest.config(g));
        for (ParameterView v : layout.views()) {
            float[] c = Arrays.copyOfRange(cpu.grads(), v.offset(), v.end()), m = Arrays.copyOfRange(mil.grads(), v.offset(), v.end());
            TensorCheck.checkTensor(name + " d_" + v.name() + " (CPU loss vs MIL loss)", m, c, 2e-5 * scale, 1e-4);
            float[] torch = g.f32("grad." + v.name()).clone();
            for (int i = 0; i < torch.length; i++) torch[i] *= scale;
            TensorCheck.checkTensor(name + " d_" + v.name() + " (CPU loss vs PyTorch)", torch, c, 2e-5 * scale, 0);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "qwen3"})
    void fp16TheSameLossAndGradientsAsTheLossInMil(String name) {
        GoldenSafetensors g = GoldenSafetensors.load("golden/train/" + name + ".safetensors");
        ModelConfig cfg = TrainingGoldenTest.config(g);
        float scale = 256f * cfg.nLayers();
        Result mil = step(g, false, DType.FP16, RefBackend.Options.ANE_LIKE, scale), cpu = step(g, true, DType.FP16, RefBackend.Options.ANE_LIKE, scale);
        assertEquals(mil.loss(), cpu.loss(), 5e-3f, "loss");
        for (ParameterView v : new ParameterLayout(cfg).views()) {
            float[] c = Arrays.copyOfRange(cpu.grads(), v.offset(), v.end()), m = Arrays.copyOfRange(mil.grads(), v.offset(), v.end());
            float[] torch = g.f32("grad." + v.name());
            double cpuVsMil = GeneratedGradientsTest.relL2(m, c, 1), cpuVsTorch = GeneratedGradientsTest.relL2(torch, c, scale),
                    milVsTorch = GeneratedGradientsTest.relL2(torch, m, scale);
            // fp16 tolerance: within 1% (relative L2) of the loss in MIL, and about as close to PyTorch as it is
            assertTrue(cpuVsMil < 0.01, name + " d_" + v.name() + ": CPU loss vs MIL loss relative L2 " + cpuVsMil);
            assertTrue(cpuVsTorch < Math.max(0.01, milVsTorch + 0.005), name + " d_" + v.name() + ": CPU loss vs PyTorch " + cpuVsTorch + ", MIL loss vs PyTorch " + milVsTorch);
        }
    }

    @Test
    void aHeadOnWhatIsNotLogitsIsOneLine() {
        Program p = Mil.program().function("main", f -> {
            Value x = f.input("x", Mil.fp32(4, 3)), w = f.input("w", Mil.fp32(5, 3));
            Value y = f.named("y", f.matmul(x, w, false, true));
            f.output(y, f.named("s", f.reduceSum(y, false, 0, 1)));
        }).build();
        RefBackend b = new RefBackend(RefBackend.Options.FP32_STORAGE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new GraphStep(p, new CpuLossHead("logits", "labels"), List.of("w"), b, GraphStep.Options.defaults()));
        assertEquals("[graph] the loss head's logits 'logits' is not an output of the graph (outputs: [y, s]); give the logits output", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new GraphStep(p, new CpuLossHead("s", "labels"), List.of("w"), b, GraphStep.Options.defaults()));
        assertTrue(e.getMessage().startsWith("[graph] the loss head's logits 's' is fp32") && e.getMessage().endsWith("; give a float output [N, C] with C ≥ 2 classes"), e.getMessage());
        try (GraphStep step = new GraphStep(p, new CpuLossHead("y", "labels"), List.of("w"), b, GraphStep.Options.defaults())) {
            float[] w = new float[15], grads = new float[15];
            Map<String, TensorBuffer> noLabels = Map.of("x", TensorBuffer.of(Mil.fp32(4, 3), new float[12]));
            e = assertThrows(IllegalArgumentException.class, () -> step.forwardBackward(w, grads, noLabels));
            assertEquals("[graph] no data for the labels 'labels' of the CPU loss head; give int32 [4]", e.getMessage());
        }
    }
}
