package ane4j.backend.ref;

import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.mil.DType;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import ane4j.model.ModelConfig;
import ane4j.train.TrainingKernels;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A kernel in fp16 storage copies its results into direct (float-held) outputs without rounding them again: that is
 * right only if every fp16 value it leaves is an fp16 value already. Checked for the training kernels and a program of
 * every op kind (elementwise, reductions, softmax, casts, concat, slices, transposes, matmul), against packed outputs.
 */
class DirectOutputsTest {
    @Test
    void directOutputsHoldTheBitsOfPackedOnes() {
        for (ModelConfig c : List.of(ModelConfig.parse("tiny"), FusedChainTest.QWEN_LIKE))
            for (TrainingKernels.Spec k : new TrainingKernels(c, DType.FP16).all()) compare(c.name() + " " + k.name(), k.program());
        Program p = Mil.program().function("main", f -> {
            Value x = f.input("x", TensorType.of(DType.FP16, 1, 4, 1, 24));
            Value i = f.input("i", TensorType.of(DType.FP32, 1, 4, 1, 24));
            Value y = f.add(f.mul(x, 0.3f), f.cast(i, DType.FP16));
            Value m = f.matmul(f.reshape(y, 1, 4, 4, 6), f.reshape(x, 1, 4, 6, 4), false, false);
            Value t = f.transpose(f.reshape(f.softmax(y, -1), 1, 4, 24), 0, 2, 1);
            f.output(f.concat(1, y, f.exp(x)), m, f.reduceMean(f.mul(x, x), true, -1), t, f.sqrt(f.add(f.mul(x, x), 1e-3f)));
        }).build();
        compare("ops", p);
    }

    @Test
    void outputsWrittenInPlaceWaitForTheInputsTheyShareMemoryWith() {
        // y = 2x, z = 3x: were y written in place into x's own buffer, z would read 2x
        Program p = Mil.program().function("main", f -> {
            Value x = f.input("x", TensorType.of(DType.FP16, 1, 4, 1, 8));
            f.output(f.mul(x, 2f), f.mul(x, 3f));
        }).build();
        try (RefKernel k = new Planner(p.main(), p.weights(), RefBackend.Options.ANE_LIKE, true, true, true).plan()) {
            String y = k.outputs().get(0).name(), z = k.outputs().get(1).name();
            TensorBuffer x = k.allocateDirectInput("x"), yApart = k.allocateDirectOutput(y), zApart = k.allocateDirectOutput(z), zShared = k.allocateDirectOutput(z);
            for (long j = 0; j < x.count(); j++) x.set(j, j - 7.5f);
            k.evaluate(Map.of("x", x), Map.of(y, yApart, z, zApart));     // in place: nothing shared
            k.evaluate(Map.of("x", x), Map.of(y, x, z, zShared));         // y's buffer is x's
            for (long j = 0; j < x.count(); j++) {
                assertEquals(yApart.get(j), x.get(j), "y element " + j);
                assertEquals(zApart.get(j), zShared.get(j), "z element " + j);
            }
            assertEquals(3 * (1 - 7.5f), zShared.get(1), "3x");
            // a packed output after in-place ones: the planned buffer is back in place
            TensorBuffer packed = k.allocateOutput(z);
            for (long j = 0; j < x.count(); j++) x.set(j, j - 7.5f);
            k.evaluate(Map.of("x", x), Map.of(y, k.allocateOutput(y), z, packed));
            for (long j = 0; j < x.count(); j++) assertEquals(zApart.get(j), packed.get(j), "packed z element " + j);
        }
    }

    private static void compare(String what, Program p) {
        try (RefKernel k = new Planner(p.main(), p.weights(), RefBackend.Options.ANE_LIKE, true, true, true).plan()) {
            Random rnd = new Random(what.hashCode());
            Map<String, TensorBuffer> in = new HashMap<>(), packed = new HashMap<>(), direct = new HashMap<>();
            for (TensorSpec s : k.inputs()) {
                TensorBuffer b = k.allocateInput(s.name());
                for (long j = 0; j < b.count(); j++) b.set(j, (float) (rnd.nextGaussian() * 0.7));
                in.put(s.name(), b);
            }
            for (TensorSpec s : k.outputs()) { packed.put(s.name(), k.allocateOutput(s.name())); direct.put(s.name(), k.allocateDirectOutput(s.name())); }
            k.evaluate(in, packed);
            k.evaluate(in, direct);
            for (TensorSpec s : k.outputs()) {
                TensorBuffer a = packed.get(s.name()), b = direct.get(s.name());
                for (long j = 0; j < a.count(); j++)
                    if (Float.floatToIntBits(a.get(j)) != Float.floatToIntBits(b.get(j)))
                        assertEquals(a.get(j), b.get(j), what + " output " + s.name() + " element " + j + (b.floatHeld() ? " (float-held)" : ""));
            }
        }
    }
}
