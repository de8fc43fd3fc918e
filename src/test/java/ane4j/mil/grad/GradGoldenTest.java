package ane4j.mil.grad;

import ane4j.golden.TensorCheck;
import ane4j.mil.Mil;
import ane4j.mil.MilParser;
import ane4j.mil.Op;
import ane4j.mil.Program;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every gradient rule against PyTorch autograd (tools/gen_grad_golden.py), in fp32 and in fp16 storage: the case's
 * MIL text is parsed, differentiated with {@link Mil#grad} and run on the reference backend; the loss and every
 * {@code d_<w>} must match the goldens within the case's tolerance (relative to the tensor's largest value).
 */
class GradGoldenTest {
    static List<GradGolden.Case> cases() { return GradGolden.load(); }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void matchesPyTorch(GradGolden.Case c) {
        Program forward = MilParser.parse(c.mil());
        Program grad = Mil.grad(forward, c.loss(), c.wrt().toArray(String[]::new));
        // the gradient program survives the text round trip (it is what `mil grad` writes)
        Program reparsed = MilParser.parse(grad.toString());
        Map<String, float[]> out = GradGolden.run(reparsed, c.inputs());
        assertEquals(1 + c.wrt().size(), out.size(), c.id() + ": outputs " + out.keySet());
        for (var e : c.expect().entrySet()) {
            float[] actual = out.get(e.getKey());
            assertTrue(actual != null, c.id() + ": no output " + e.getKey() + " among " + out.keySet());
            float[] expected = e.getValue().data();
            double max = 0;
            for (float v : expected) max = Math.max(max, Math.abs(v));
            double tol = c.atol() + c.rtol() * max;
            var report = TensorCheck.compare(c.id() + " " + e.getKey(), expected, actual, tol, 0, e.getValue().shape());
            assertTrue(report.ok(), report.line());
        }
    }

    /** Every op the builder offers that computes floats from floats has a rule, and the goldens exercise each rule. */
    @Test
    void everyRuleHasAGolden() {
        Set<Op> noRule = EnumSet.of(Op.CONST, Op.SCALED_DOT_PRODUCT_ATTENTION, Op.QUANTIZE, Op.DEQUANTIZE, Op.CONSTEXPR_AFFINE_DEQUANTIZE,
                Op.EQUAL, Op.NOT_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.LESS, Op.LESS_EQUAL);
        for (Op op : Op.values()) assertEquals(!noRule.contains(op), Grad.differentiableOps().contains(op), op.milName());
        Set<Op> covered = EnumSet.noneOf(Op.class);
        for (GradGolden.Case c : cases()) for (var f : MilParser.parse(c.mil()).main().operations()) covered.add(f.op());
        for (Op op : Grad.differentiableOps()) assertTrue(covered.contains(op), "no golden case uses " + op.milName());
    }
}
