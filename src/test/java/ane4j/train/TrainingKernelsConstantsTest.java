package ane4j.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.Program;
import ane4j.model.ModelConfig;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The training kernels carry no weight file in dynamic-weights mode (macOS 27 refuses programs with two or more,
 * docs/macos27-ane.md C2): RoPE tables, rotation, mask and head pads are regions of the packed input, written once per
 * input set. Static mode bakes only the weights.
 */
class TrainingKernelsConstantsTest {
    static final List<String> PRESETS = List.of("tiny", "stories15m", "stories42m", "stories110m", "qwen3-0.6b");

    static int weightFiles(Program p) { return p.weights().files().size(); }

    @Test
    void noDynamicWeightsKernelOfAnyPresetOrAttentionModeHasAWeightFile() {
        for (String preset : PRESETS)
            for (boolean threeStage : new boolean[] {false, true})
                for (TrainingKernels.Spec k : new TrainingKernels(ModelConfig.parse(preset), DType.FP16, null, threeStage).all())
                    assertEquals(0, weightFiles(k.program()), preset + " " + k.name() + " threeStage=" + threeStage + ": " + k.program().weights().files().keySet());
    }

    @Test
    void staticKernelsBakeOnlyTheirWeightSegments() {
        ModelConfig c = ModelConfig.parse("qwen3-0.6b");
        c = ModelConfig.override(c, java.util.Map.of("dim", 128, "hiddenDim", 256, "nHeads", 2, "nKvHeads", 1, "headDim", 64, "seqLen", 64, "nLayers", 1, "vocabSize", 256));
        ModelConfig cfg = c;
        TrainingKernels baked = new TrainingKernels(cfg, DType.FP16, seg -> new float[blockSize(cfg, seg)], false);
        for (TrainingKernels.Spec k : baked.all())
            for (String path : k.program().weights().files().keySet()) {
                String seg = path.substring(path.lastIndexOf('/') + 1).replace(".bin", "");
                assertTrue(k.input().segments().containsKey(seg) || seg.equals("qNorm") || seg.equals("kNorm"), k.name() + " bakes " + path);
            }
    }

    private static int blockSize(ModelConfig c, String seg) {
        return switch (seg) {
            case "qNorm", "kNorm" -> c.headDim();
            case "wqT", "wq" -> c.dim() * c.qDim();
            case "wkT", "wvT", "wk", "wv" -> c.dim() * c.kvDim();
            case "woT", "wo" -> c.qDim() * c.dim();
            default -> c.dim() * c.hiddenDim();
        };
    }

    /** The blocks land where the kernels slice them, in row-major order of the constant (any rows × cols split of it). */
    @Test
    void writeConstantsPutsEachTableWhereTheKernelReadsIt() {
        ModelConfig c = ModelConfig.parse("stories15m");   // head dim 48: heads padded to 64 through the inputs (R4)
        TrainingKernels.Spec fwd = new TrainingKernels(c, DType.FP32).sdpaFwd();
        TensorBuffer in = TensorBuffer.allocate(fwd.program().main().inputs().get(0).type());
        fwd.writeConstants(in);
        List<String> names = fwd.constants().stream().map(TrainingKernels.Constant::segment).toList();
        assertEquals(List.of("ropeCos", "ropeSin", "mask"), names);   // rotation: reshape/slice/concat (S·HDp/2 = 8192); no head-pad constant
        assertTrue(new TrainingKernels(ModelConfig.parse("stories42m"), DType.FP32).sdpaFwd().constants().stream()
                .anyMatch(k -> k.segment().equals("ropeRotation")), "stories42m: S·HD/2 = 32768 is over the cap, the permutation matmul");
        assertArrayEquals(HeadPaddingTest.padded(RopeTables.cos(c), c.seqLen(), 48, 64), read(in, fwd, "ropeCos"));
        assertArrayEquals(HeadPaddingTest.padded(RopeTables.sin(c), c.seqLen(), 48, 64), read(in, fwd, "ropeSin"));
        assertArrayEquals(RopeTables.causalMask(c.seqLen()), read(in, fwd, "mask"));
        for (TrainingKernels.Constant k : fwd.constants()) {
            var seg = fwd.input().get(k.segment());
            assertEquals(0, seg.size() % 32, k.segment() + ": segments stay whole 64-byte fp16 rows");
            assertTrue(k.cols() <= seg.size() && k.rows() <= c.dim(), k.segment());
        }
        TrainingKernels.Spec bwd1 = new TrainingKernels(c, DType.FP32).sdpaBwd1();
        TensorBuffer in1 = TensorBuffer.allocate(bwd1.program().main().inputs().get(0).type());
        bwd1.writeConstants(in1);
        assertArrayEquals(RopeTables.causalMask(c.seqLen()), read(in1, bwd1, "mask"));
    }

    /**
     * R3: maderix's reshape/slice/concat rotation and the ±1 permutation matmul give the same bits (each output one ±x
     * term), interleaved (llama) and half (qwen3) style, fp32 and fp16, on the reference backend.
     */
    @Test
    void bothRopeRotationsGiveTheSameBits() {
        ModelConfig llama = ModelConfig.override(ModelConfig.parse("stories15m"), java.util.Map.of("seqLen", 32, "dim", 96, "nHeads", 2, "hiddenDim", 128));
        ModelConfig qwen = ModelConfig.override(ModelConfig.parse("qwen3-0.6b"), java.util.Map.of("seqLen", 32, "dim", 128, "nHeads", 2, "nKvHeads", 1, "headDim", 64, "hiddenDim", 128));
        for (ModelConfig c : List.of(llama, qwen))
            for (DType io : List.of(DType.FP32, DType.FP16)) {
                TrainingKernels proven = new TrainingKernels(c, io), matmul = new TrainingKernels(c, io);
                matmul.matmulRotation = true;
                TrainingKernels.Spec a = proven.sdpaFwd(), b = matmul.sdpaFwd();
                assertTrue(b.constants().stream().anyMatch(k -> k.segment().equals("ropeRotation")));
                assertTrue(a.constants().stream().noneMatch(k -> k.segment().equals("ropeRotation")));
                var ref = new ane4j.backend.ref.RefBackend(io == DType.FP32 ? ane4j.backend.ref.RefBackend.Options.FP32_STORAGE : ane4j.backend.ref.RefBackend.Options.ANE_LIKE);
                TensorBuffer ina = TensorBuffer.random(a.program().main().inputs().get(0).type(), 11, 0.5f);
                TensorBuffer inb = TensorBuffer.allocate(b.program().main().inputs().get(0).type());
                // the same activations and weights (the columns both layouts share), each its own constants
                int shared = a.input().start("ropeCos"), wa = a.input().width(), wb = b.input().width();
                for (int ch = 0; ch < c.dim(); ch++) for (int j = 0; j < shared; j++) inb.set((long) ch * wb + j, ina.get((long) ch * wa + j));
                a.writeConstants(ina);
                b.writeConstants(inb);
                try (var ka = ref.compile(a.program()); var kb = ref.compile(b.program())) {
                    float[] ya = ka.evaluate(java.util.Map.of("x", ina)).get("out").toFloatArray();
                    float[] yb = kb.evaluate(java.util.Map.of("x", inb)).get("out").toFloatArray();
                    for (int i = 0; i < ya.length; i++)
                        assertEquals(Float.floatToIntBits(ya[i]), Float.floatToIntBits(yb[i]), c.name() + " " + io + " out[" + i + "]");
                }
            }
    }

    private static float[] read(TensorBuffer in, TrainingKernels.Spec spec, String segment) {
        TrainingKernels.Constant k = spec.constants().stream().filter(x -> x.segment().equals(segment)).findFirst().orElseThrow();
        int w = in.type().shape()[3];
        float[] out = new float[k.rows() * k.cols()];
        for (int r = 0; r < k.rows(); r++)
            for (int j = 0; j < k.cols(); j++) out[r * k.cols() + j] = in.get((long) (k.channel() + r) * w + k.column() + j);
        return out;
    }
}
