package ane4j.mil.grad;

import ane4j.mil.Mil;
import ane4j.mil.MilParser;
import ane4j.mil.Program;
import org.junit.jupiter.api.Test;

import java.util.List;

import static ane4j.mil.Mil.fp16;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Bad requests are refused in one line naming the problem, the value's line:col and the fix. */
class GradErrorsTest {
    static final String TEXT = """
            program(1.3)
            [buildInfo = dict<string, string>({{"coremlc-version", "3505.4.1"}})]
            {
                func main<ios18>(tensor<fp16, [1, 4, 8]> q, tensor<fp16, [1, 4, 8]> k, tensor<int32, [4]> ids, tensor<fp16, [4, 8]> w) {
                    tensor<fp16, [1, 4, 8]> att = scaled_dot_product_attention(query = q, key = k, value = k)[name = string("att")];
                    string c_int = const()[name = string("c_int"), val = string("int32")];
                    tensor<int32, [4, 8]> wi = cast(dtype = c_int, x = w)[name = string("wi")];
                    string c_fp = const()[name = string("c_fp"), val = string("fp16")];
                    tensor<fp16, [4, 8]> wf = cast(dtype = c_fp, x = wi)[name = string("wf")];
                    tensor<fp16, [1, 4, 8]> h = add(x = att, y = wf)[name = string("h")];
                    tensor<fp16, [1, 4, 8]> out = mul(x = h, y = h)[name = string("out")];
                } -> (out, wf);
            }
            """;

    static GradException refuse(String loss, String... wrt) {
        Program p = MilParser.parse(TEXT);
        return assertThrows(GradException.class, () -> Grad.program(p, null, loss, List.of(wrt), TEXT));
    }

    static void oneLine(GradException e) {
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }

    @Test
    void lossNotAnOutput() {
        GradException e = refuse("h", "q");
        assertEquals("[grad] loss 'h' is not an output of function main at 10:33 (outputs: out, wf); name one of them with --loss, or make 'h' an output", e.getMessage());
        assertEquals(10, e.line());
        assertEquals(33, e.column());
        oneLine(refuse("nothing", "q"));
    }

    @Test
    void wrtNotAnInput() {
        GradException e = refuse("out", "att");
        assertEquals("[grad] wrt 'att' is not an input of function main at 5:33 (it is computed by scaled_dot_product_attention); inputs: q, k, ids, w", e.getMessage());
        assertEquals("[grad] wrt 'zz' is not an input of function main at 4:10; inputs: q, k, ids, w", refuse("out", "zz").getMessage());
    }

    @Test
    void integerWrt() {
        assertEquals("[grad] wrt 'ids' is int32[4] at 4:95: integer inputs have no gradient; differentiate with respect to fp16 or fp32 inputs",
                refuse("out", "ids").getMessage());
    }

    @Test
    void opWithoutRule() {
        GradException e = refuse("out", "q");
        assertEquals("[grad] no gradient for op scaled_dot_product_attention at 5:33 (value 'att', on the path from 'q' to the loss 'out'); "
                + "build it from ops that have rules (docs/autograd.md)", e.getMessage());
    }

    @Test
    void nonDifferentiablePath() {
        GradException e = refuse("wf", "w");
        assertEquals("[grad] no differentiable path from 'w' to the loss 'wf': it goes through cast at 7:31 (value 'wi', int32[4,8]), which is not "
                + "differentiable (integer or bool values carry no gradient); keep the path in fp16/fp32 ops", e.getMessage());
    }

    @Test
    void stopGradientCutsThePath() {
        Program p = Mil.program().function("main", f -> {
            var x = f.input("x", fp16(2, 4));
            var y = f.named("y", f.exp(f.stopGradient(x)));
            f.output(y);
        }).build();
        GradException e = assertThrows(GradException.class, () -> Mil.grad(p, "y", "x"));
        assertEquals("[grad] no differentiable path from 'x' to the loss 'y': it goes through identity at 5:30 (value 'stop_gradient_0', fp16[2,4]), "
                + "which is not differentiable; keep the path in fp16/fp32 ops", e.getMessage());
    }

    @Test
    void builtProgramsGetPositionsInTheirCanonicalText() {
        Program p = Mil.program().function("main", f -> {
            var x = f.input("x", fp16(2, 4));
            var y = f.named("y", f.exp(x));
            f.output(y);
        }).build();
        GradException e = assertThrows(GradException.class, () -> Mil.grad(p, "y", "y"));
        assertEquals("[grad] wrt 'y' is not an input of function main at 5:30 (it is computed by exp); inputs: x", e.getMessage());
    }
}
