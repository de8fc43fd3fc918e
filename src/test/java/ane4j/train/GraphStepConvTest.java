package ane4j.train;

import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.golden.TensorCheck;
import ane4j.mil.MilParser;
import ane4j.mil.Op;
import ane4j.mil.Operation;
import ane4j.mil.Program;
import ane4j.mil.grad.GradGolden;
import ane4j.model.ParameterView;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Conv weight gradients formed on the CPU by the training split ({@link ConvWeightGrad}: im2col and sgemm) against
 * PyTorch autograd: every golden case with a conv whose weight is trained (stride, custom/same/same_lower padding,
 * dilation, groups, 1–3 spatial dims, and a small CNN; tools/gen_grad_golden.py), fp32 and fp16 storage, through
 * {@link GraphStep} with the weight gradients on the CPU and, as the option keeps them, in MIL.
 */
class GraphStepConvTest {
    static List<Object[]> cases() {
        List<Object[]> out = new java.util.ArrayList<>();
        for (GradGolden.Case c : GradGolden.load()) {
            Program p = MilParser.parse(c.mil());
            boolean convWeight = p.main().operations().stream().anyMatch(o -> o.op() == Op.CONV && c.wrt().contains(o.value("weight").name()));
            if (!convWeight) continue;
            out.add(new Object[] {c, true});
            out.add(new Object[] {c, false});
        }
        return out;
    }

    @ParameterizedTest(name = "{0} cpuWeights={1}")
    @MethodSource("cases")
    void convWeightGradientsMatchPyTorch(GradGolden.Case c, boolean cpuWeights) {
        Program forward = MilParser.parse(c.mil());
        try (GraphStep step = new GraphStep(forward, c.loss(), c.wrt(), new RefBackend(RefBackend.Options.ANE_LIKE), GraphStep.Options.defaults().withCpuWeights(cpuWeights))) {
            long convs = forward.main().operations().stream().filter(o -> o.op() == Op.CONV).count();
            long cpuConvs = step.split().cpuGrads().stream().filter(g -> g.isConv()).count();
            // on the CPU: no conv weight gradient left in the backward program (it keeps only the dx convs)
            assertEquals(cpuWeights ? convs : 0, cpuConvs, c.id() + ": " + step.split().cpuGrads());
            long backwardConvs = step.split().backward().main().operations().stream().filter(o -> o.op() == Op.CONV).count();
            long dxConvs = forward.main().operations().stream().filter(o -> o.op() == Op.CONV && c.wrt().contains(o.value("x").name())).count();
            if (cpuWeights) assertEquals(dxConvs, backwardConvs, c.id() + ": convs in the backward");
            else assertTrue(backwardConvs > dxConvs, c.id() + ": convs in the backward");

            float[] params = new float[step.size()], grads = new float[step.size()];
            for (ParameterView v : step.views()) System.arraycopy(c.inputs().get(v.name()).data(), 0, params, v.offset(), v.size());
            Map<String, TensorBuffer> data = new LinkedHashMap<>();
            for (var e : c.inputs().entrySet()) if (!c.wrt().contains(e.getKey())) data.put(e.getKey(), e.getValue().buffer());
            float loss = step.forwardBackward(params, grads, data);
            float[] expectedLoss = c.expect().get(c.loss()).data();
            double mean = 0, lossMax = 0;
            for (float v : expectedLoss) { mean += v; lossMax = Math.max(lossMax, Math.abs(v)); }
            assertEquals(mean / expectedLoss.length, loss, c.atol() + c.rtol() * lossMax, c.id() + " loss");
            for (ParameterView v : step.views()) {
                float[] expected = c.expect().get("d_" + v.name()).data(), actual = java.util.Arrays.copyOfRange(grads, v.offset(), v.end());
                double max = 0;
                for (float e : expected) max = Math.max(max, Math.abs(e));
                var report = TensorCheck.compare(c.id() + " d_" + v.name(), expected, actual, c.atol() + c.rtol() * max, 0, c.inputs().get(v.name()).shape());
                assertTrue(report.ok(), report.line());
            }
        }
    }
}
