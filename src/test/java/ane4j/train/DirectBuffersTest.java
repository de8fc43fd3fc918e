package ane4j.train;

import ane4j.backend.Backend;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.backend.ref.RefBackend;
import ane4j.golden.GoldenSafetensors;
import ane4j.mil.DType;
import ane4j.mil.Program;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The reference backend's kernels read their fp16 inputs and write their fp16 outputs held as floats
 * ({@link Kernel#allocateDirectInput}): a training step through them gives the bits of the same step through packed
 * fp16 buffers that every evaluation converts — loss and every gradient, in fp16 and fp32 storage.
 */
class DirectBuffersTest {
    @Test
    void aStepGivesTheSameBitsWithDirectAndPackedBuffers() {
        for (String golden : List.of("llama", "qwen3"))
            for (boolean fp32Storage : new boolean[] {false, true}) {
                GoldenSafetensors g = GoldenSafetensors.load("golden/train/" + golden + ".safetensors");
                ModelConfig c = TrainingGoldenTest.config(g);
                ParameterLayout layout = new ParameterLayout(c);
                float[] params = TrainingGoldenTest.params(g, layout);
                var opt = RefBackend.Options.ANE_LIKE.withFp32Storage(fp32Storage);
                float[] direct = new float[layout.size()], packed = new float[layout.size()];
                float lossDirect, lossPacked;
                try (TrainingStep step = new TrainingStep(c, new RefBackend(opt), TrainingStep.Options.of(DType.FP16))) {
                    step.stageWeights(params);
                    lossDirect = step.forwardBackward(params, direct, g.i32("tokens"), g.i32("targets"), 256f);
                }
                try (TrainingStep step = new TrainingStep(c, new PackedOnly(new RefBackend(opt)), TrainingStep.Options.of(DType.FP16))) {
                    step.stageWeights(params);
                    lossPacked = step.forwardBackward(params, packed, g.i32("tokens"), g.i32("targets"), 256f);
                }
                String what = golden + (fp32Storage ? " fp32" : " fp16") + " storage";
                assertTrue(Float.isFinite(lossDirect), what);
                assertEquals(Float.floatToIntBits(lossPacked), Float.floatToIntBits(lossDirect), what + ": loss");
                for (int i = 0; i < packed.length; i++)
                    if (Float.floatToIntBits(packed[i]) != Float.floatToIntBits(direct[i]))
                        assertEquals(packed[i], direct[i], what + ": gradient " + i);
            }
    }

    /** A backend whose kernels know nothing of direct buffers: every input and output is a packed fp16 buffer. */
    private record PackedOnly(Backend inner) implements Backend {
        @Override public String name() { return inner.name(); }
        @Override public boolean isAvailable() { return true; }
        @Override public long compileCount() { return inner.compileCount(); }
        @Override public long compileBudget() { return inner.compileBudget(); }
        @Override public Kernel compile(Program program, String functionName) {
            Kernel k = inner.compile(program, functionName);
            return new Kernel() {
                @Override public List<TensorSpec> inputs() { return k.inputs(); }
                @Override public List<TensorSpec> outputs() { return k.outputs(); }
                @Override public void evaluate(Map<String, TensorBuffer> in, Map<String, TensorBuffer> out) {
                    for (TensorBuffer b : in.values()) assertTrue(!b.floatHeld(), "a packed input");
                    k.evaluate(in, out);
                }
                @Override public void close() { k.close(); }
            };
        }
    }
}
