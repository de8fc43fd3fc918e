package ane4j.train;

import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.golden.GoldenSafetensors;
import ane4j.mil.DType;
import ane4j.mil.MilParser;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import ane4j.mil.grad.GradGolden;
import ane4j.model.LlamaGraph;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.ParameterView;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Parameters as columns of one packed input ({@link PackedParams}): the programs take one parameter input and no weight
 * file, and a step gives the same bits as with the parameters as separate inputs (reference backend, fp32 and fp16).
 */
class GraphStepPackedTest {
    @ParameterizedTest
    @ValueSource(strings = {"mlp.fp32", "mlp.fp16", "cnn.fp32", "cnn.fp16", "attention.fp16", "conv2d_all.fp16"})
    void packedGivesTheSameBitsAsSeparateInputs(String id) {
        GradGolden.Case c = GradGolden.load().stream().filter(x -> x.id().equals(id)).findFirst().orElseThrow();
        Program forward = MilParser.parse(c.mil());
        Map<String, TensorBuffer> data = new LinkedHashMap<>();
        for (var e : c.inputs().entrySet()) if (!c.wrt().contains(e.getKey())) data.put(e.getKey(), e.getValue().buffer());
        float[][] grads = new float[2][];
        float[] losses = new float[2];
        for (int packed = 0; packed < 2; packed++)
            try (GraphStep step = new GraphStep(forward, c.loss(), c.wrt(), new RefBackend(RefBackend.Options.ANE_LIKE), GraphStep.Options.defaults().withPacked(packed == 1))) {
                float[] params = new float[step.size()];
                for (ParameterView v : step.views()) System.arraycopy(c.inputs().get(v.name()).data(), 0, params, v.offset(), v.size());
                grads[packed] = new float[step.size()];
                losses[packed] = step.forwardBackward(params, grads[packed], data);
                if (packed == 1) onePackedInput(step, c.wrt());
            }
        assertEquals(Float.floatToIntBits(losses[0]), Float.floatToIntBits(losses[1]), id + " loss");
        assertArrayEquals(grads[0], grads[1], 0f, id + " gradients");
        assertTrue(java.util.Arrays.stream(box(grads[1])).anyMatch(v -> v != 0f), id + ": some gradient is non-zero");
    }

    @Test
    void llamaStepIsBitIdenticalPacked() {
        GoldenSafetensors g = GoldenSafetensors.load("golden/train/llama.safetensors");
        ModelConfig c = TrainingGoldenTest.config(g);
        ParameterLayout layout = new ParameterLayout(c);
        List<String> names = layout.views().stream().map(v -> LlamaGraph.inputName(v.name())).toList();
        float[] params = TrainingGoldenTest.params(g, layout);
        Map<String, TensorBuffer> data = Map.of(
                "tokens", TensorBuffer.of(TensorType.of(DType.INT32, c.seqLen()), GeneratedGradientsTest.toFloats(g.i32("tokens"))),
                "targets", TensorBuffer.of(TensorType.of(DType.INT32, c.seqLen()), GeneratedGradientsTest.toFloats(g.i32("targets"))));
        for (DType dt : List.of(DType.FP32, DType.FP16)) {
            float[][] grads = new float[2][];
            for (int packed = 0; packed < 2; packed++)
                try (GraphStep step = new GraphStep(LlamaGraph.build(c, dt, 1f), "loss", names,
                        new RefBackend(dt == DType.FP32 ? RefBackend.Options.FP32_STORAGE : RefBackend.Options.ANE_LIKE), GraphStep.Options.defaults().withPacked(packed == 1))) {
                    grads[packed] = new float[step.size()];
                    step.forwardBackward(params, grads[packed], data);
                    if (packed == 1) onePackedInput(step, names);
                }
            assertArrayEquals(grads[0], grads[1], 0f, dt + " gradients");
        }
    }

    /** Each program reads the parameters from one input, carries no weight file, and the blocks tile the parameters exactly. */
    private static void onePackedInput(GraphStep step, List<String> params) {
        PackedParams p = step.packing();
        for (Program prog : List.of(step.forwardProgram(), step.backwardProgram())) {
            assertTrue(prog.weights().isEmpty(), "weight files");
            List<String> in = prog.main().inputs().stream().map(Value::name).toList();
            assertTrue(in.stream().noneMatch(params::contains), "a parameter is still an input: " + in);
            MilParser.parse(prog.toString());
        }
        assertTrue(step.forwardProgram().main().inputs().stream().anyMatch(v -> v.name().equals(p.input())));
        TensorType t = p.type();
        assertTrue(t.dim(3) <= PackedParams.MAX_WIDTH && t.dim(1) <= PackedParams.MAX_CHANNELS, t.toString());
        boolean[] used = new boolean[t.dim(1) * t.dim(3)];
        Map<String, Integer> rows = new LinkedHashMap<>();
        for (PackedParams.Block b : p.blocks()) {
            for (int r = 0; r < b.rows(); r++)
                for (int k = 0; k < b.cols(); k++) {
                    int at = (b.channel() + r) * t.dim(3) + b.column() + k;
                    assertTrue(!used[at], "blocks overlap at " + b);
                    used[at] = true;
                }
            rows.merge(b.param(), b.rows(), Integer::sum);
        }
        for (var e : p.params().entrySet()) assertEquals(e.getValue().shape()[0], (int) rows.get(e.getKey()), e.getKey() + " rows");
    }

    /** stories15m's 24 M parameters fit one packed input under the M1–M3 width cap, wasting less than a quarter. */
    @Test
    void stories15mPacksUnderTheWidthCap() {
        ModelConfig c = ModelConfig.parse("stories15m");
        Map<String, TensorType> types = new LinkedHashMap<>();
        Program g = LlamaGraph.build(c, DType.FP16, 1f);
        for (var v : new ParameterLayout(c).views()) types.put(LlamaGraph.inputName(v.name()), g.main().input(LlamaGraph.inputName(v.name())).type());
        PackedParams p = PackedParams.plan("params", types);
        long total = types.values().stream().mapToLong(TensorType::count).sum();
        assertTrue(p.type().dim(3) <= 16384, p.type().toString());
        assertTrue(p.type().count() < total * 1.25, p.type() + " for " + total);
    }

    private static Float[] box(float[] a) {
        Float[] b = new Float[a.length];
        for (int i = 0; i < a.length; i++) b[i] = a[i];
        return b;
    }
}
