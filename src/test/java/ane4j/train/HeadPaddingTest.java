package ane4j.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.Op;
import ane4j.mil.Operation;
import ane4j.mil.Value;
import ane4j.model.ModelConfig;
import ane4j.model.RopeStyle;
import ane4j.run.TrainOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * ane-audit-2 R4: head dims that are not a multiple of 32 are padded through the staged inputs (zero columns after each
 * head of Wqᵀ and Wkᵀ, zero channels after each head of sdpaBwd1's q, k, v and dA), never by an in-graph width concat at
 * a head boundary (a 96-byte offset for stories15m's 48), a pattern no hardware-run kernel uses. That the padded kernels
 * still compute the model is checked against PyTorch by TrainingGoldenTest, whose two configs have heads of 8 and 16
 * (padded to 32), and on the fake ANE bit for bit against the reference backend by TrainingStagingOnFakeTest (heads of 48).
 */
class HeadPaddingTest {
    /** dim 64, 4 heads of 24 (padded to 32), 2 KV heads, QK-norm, half RoPE (FusedChainTest's Qwen-like config). */
    static final ModelConfig QWEN_LIKE = new ModelConfig("qwen-like", 64, 128, 1, 4, 2, 24, 512, 32, 1e6f, RopeStyle.HALF, true, true, 1e-6f, 1f);
    /** stories15m at seqLen 1024: S·HDp/2 = 32768 is over the axis cap, so RoPE is the permutation matmul on padded heads. */
    static final ModelConfig LONG_STORIES15M = ModelConfig.override(ModelConfig.parse("stories15m"), Map.of("seqLen", 1024));

    /** m (rows, HD) → (rows, HDp) with zero columns after HD. */
    static float[] padded(float[] m, int rows, int hd, int hdp) {
        float[] out = new float[rows * hdp];
        for (int r = 0; r < rows; r++) System.arraycopy(m, r * hd, out, r * hdp, hd);
        return out;
    }

    static List<ModelConfig> configs() {
        List<ModelConfig> all = new ArrayList<>();
        for (String p : ModelConfig.PRESETS) all.add(ModelConfig.parse(p));
        all.add(QWEN_LIKE);
        all.add(LONG_STORIES15M);
        return all;
    }

    /**
     * Every concat on the width axis in every training kernel (both attention modes, dynamic and static weights, LoRA
     * variants) is RoPE's rotation: maderix's pairs (operands one column wide) or, for unpadded half-style heads, the two
     * halves (HD/2 columns, a multiple of 16 fp16 values when HD is a multiple of 32). None appends pad columns to a head.
     */
    @Test
    void noKernelConcatenatesOnTheWidthAxisAtAHeadBoundary() {
        int checked = 0;
        for (ModelConfig c : configs())
            for (boolean threeStage : new boolean[] {false, true})
                for (boolean stat : new boolean[] {false, true})
                    for (TrainingKernels.LoraInputs lora : stat ? List.<TrainingKernels.LoraInputs>of() : List.of(new TrainingKernels.LoraInputs(8, TrainOptions.LORA_TARGETS))) {
                        java.util.function.Function<String, float[]> w = stat ? seg -> new float[TrainingKernelsChipRulesTest.size(c, seg)] : null;
                        for (var k : List.of(new TrainingKernels(c, DType.FP16, w, threeStage).all(), stat ? List.<TrainingKernels.Spec>of() : new TrainingKernels(c, DType.FP16, null, threeStage, lora).all()))
                            for (TrainingKernels.Spec spec : k)
                                for (Operation op : spec.program().main().operations()) {
                                    if (op.op() != Op.CONCAT) continue;
                                    int axis = op.literal("axis").intValue();
                                    List<Value> vs = op.values("values");
                                    if (axis != 3 && axis != -1) continue;
                                    checked++;
                                    for (Value v : vs) {
                                        int width = v.shape()[3];
                                        boolean pair = width == 1, half = c.ropeStyle() == RopeStyle.HALF && c.headDim() % 32 == 0 && width == c.headDim() / 2;
                                        assertTrue(pair || half, c.name() + " " + spec.name() + (stat ? " static" : "") + (threeStage ? " three-stage" : "")
                                                + ": a width concat of an operand " + width + " wide (head dim " + c.headDim() + ")");
                                    }
                                }
                    }
        assertTrue(checked > 0, "the RoPE pair concats were seen");
    }

    /** The padded configs carry no head-pad constant: the pads are zero columns and channels of segments the kernels read whole. */
    @Test
    void paddedHeadsAreSegmentsOfTheInputNotConstants() {
        for (ModelConfig c : List.of(ModelConfig.parse("stories15m"), QWEN_LIKE, LONG_STORIES15M)) {
            TrainingKernels k = new TrainingKernels(c, DType.FP16);
            int hd = c.headDim(), hdp = (hd + 31) / 32 * 32;
            TrainingKernels.Spec fwd = k.sdpaFwd(), bwd1 = k.sdpaBwd1();
            for (TrainingKernels.Spec s : List.of(fwd, bwd1))
                assertTrue(s.constants().stream().noneMatch(x -> x.segment().startsWith("headPad")), c.name() + " " + s.name());
            assertEquals(new PackedLayout.Range(fwd.input().start("wqT"), c.nHeads() * hdp, hd, hdp), fwd.input().get("wqT"), c.name());
            assertEquals(new PackedLayout.Range(fwd.input().start("wkT"), c.nKvHeads() * hdp, hd, hdp), fwd.input().get("wkT"), c.name());
            assertEquals(c.kvDim(), fwd.input().get("wvT").size(), c.name() + ": V's head dim is no contraction, unpadded");
            for (String seg : List.of("q", "k", "v", "da"))
                assertEquals(new PackedLayout.Range(bwd1.input().start(seg), c.nHeads() * hdp, hd, hdp), bwd1.input().get(seg), c.name() + " sdpaBwd1 " + seg);
            if (c.qkNorm()) assertEquals(2 * hdp, fwd.input().get("qkNorm").size());
        }
        // heads of 32, 64, 128: plain segments, as before
        for (String p : List.of("tiny", "stories42m", "stories110m", "qwen3-0.6b"))
            assertTrue(new TrainingKernels(ModelConfig.parse(p)).sdpaFwd().input().segments().values().stream().noneMatch(PackedLayout.Range::padded), p);
    }

    /** writeConstants zeros every pad position (an input set filled with anything first, as doctor's rungs fill theirs). */
    @Test
    void writeConstantsZerosThePadsOfAnInputFilledWithAnything() {
        for (ModelConfig c : List.of(ModelConfig.parse("stories15m"), QWEN_LIKE)) {
            TrainingKernels k = new TrainingKernels(c, DType.FP32, null, false, new TrainingKernels.LoraInputs(8, TrainOptions.LORA_TARGETS));
            for (TrainingKernels.Spec spec : List.of(k.sdpaFwd(), k.sdpaBwd1())) {
                TensorBuffer in = TensorBuffer.random(spec.program().main().inputs().get(0).type(), 5, 1f);
                spec.writeConstants(in);
                PackedLayout l = spec.input();
                boolean columns = spec.name().equals("sdpaFwd");
                int pads = 0;
                for (var e : l.segments().entrySet()) {
                    PackedLayout.Range r = e.getValue();
                    for (int pos = r.start(); pos < r.end(); pos++) {
                        if ((pos - r.start()) % r.stride() < r.block()) continue;
                        pads++;
                        for (int i = 0; i < (columns ? l.channels() : l.width()); i++) {
                            long at = columns ? (long) i * l.width() + pos : (long) pos * l.width() + i;
                            assertEquals(0f, in.get(at), c.name() + " " + spec.name() + " " + e.getKey() + " pad " + pos);
                        }
                    }
                }
                assertTrue(pads > 0, c.name() + " " + spec.name());
            }
        }
    }

    /** The LoRA slots of q and k place Bᵀ's columns as their projections come out: head by head, zero columns after each. */
    @Test
    void loraSlotsOfQAndKFollowThePaddedHeads() {
        var slots = new TrainingKernels(ModelConfig.parse("stories15m"), DType.FP16, null, false, new TrainingKernels.LoraInputs(8, TrainOptions.LORA_TARGETS)).loraSlots("sdpaFwd");
        TrainingKernels.LoraSlot q = slots.get("q"), v = slots.get("v");
        assertEquals(6 * 64, q.width());
        assertEquals(47, q.column(47));
        assertEquals(64, q.column(48));
        assertEquals(5 * 64 + 47, q.column(287));
        assertEquals(288, v.width());
        assertEquals(287, v.column(287));
    }
}
