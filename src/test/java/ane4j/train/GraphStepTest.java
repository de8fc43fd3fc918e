package ane4j.train;

import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.golden.GoldenSafetensors;
import ane4j.golden.TensorCheck;
import ane4j.mil.DType;
import ane4j.mil.MilParser;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.grad.Grad;
import ane4j.model.LlamaGraph;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.ParameterView;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The training split of a generic graph: forward and backward programs on the backend, weight gradients of
 * matmul/linear by sgemm on the CPU; the llama golden's gradients either way, and the programs carry no weight file.
 */
class GraphStepTest {
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void llamaGradientsThroughTheSplit(boolean cpuWeights) {
        GoldenSafetensors g = GoldenSafetensors.load("golden/train/llama.safetensors");
        ModelConfig c = TrainingGoldenTest.config(g);
        ParameterLayout layout = new ParameterLayout(c);
        List<String> names = layout.views().stream().map(v -> LlamaGraph.inputName(v.name())).toList();
        Program graph = LlamaGraph.build(c, DType.FP32, 1f);
        try (GraphStep step = new GraphStep(graph, "loss", names, new RefBackend(RefBackend.Options.FP32_STORAGE), GraphStep.Options.defaults().withCpuWeights(cpuWeights))) {
            Grad.Split s = step.split();
            // the two programs are ordinary MIL (they survive the text) and have no weight files
            MilParser.parse(s.forward().toString());
            MilParser.parse(s.backward().toString());
            assertTrue(s.forward().weights().isEmpty() && s.backward().weights().isEmpty());
            // every projection's weight gradient is formed on the CPU in the split, none in MIL
            long cpuMatmuls = s.cpuGrads().size();
            assertEquals(cpuWeights ? 7 * c.nLayers() + 1 : 0, cpuMatmuls, "CPU weight gradients: " + s.cpuGrads());
            // the embedding lookup runs on the CPU (the ANE refuses gathers with run-time indices): no gather in either program
            assertTrue(s.forward().main().operations().stream().noneMatch(o -> o.op() == ane4j.mil.Op.GATHER));
            assertEquals(layout.size(), step.size());
            float[] params = TrainingGoldenTest.params(g, layout), grads = new float[step.size()];
            float loss = step.forwardBackward(params, grads, Map.of(
                    "tokens", TensorBuffer.of(TensorType.of(DType.INT32, c.seqLen()), GeneratedGradientsTest.toFloats(g.i32("tokens"))),
                    "targets", TensorBuffer.of(TensorType.of(DType.INT32, c.seqLen()), GeneratedGradientsTest.toFloats(g.i32("targets")))));
            assertEquals(g.f32("loss")[0], loss, 1e-5f);
            for (ParameterView v : layout.views())
                TensorCheck.checkTensor("d_" + v.name(), g.f32("grad." + v.name()), Arrays.copyOfRange(grads, v.offset(), v.end()), 2e-5, 0);
        }
    }
}
