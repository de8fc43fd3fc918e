package ane4j.mil;

import static ane4j.programs.AcceptancePrograms.*;

import ane4j.programs.AcceptancePrograms;
import java.util.ArrayList;
import java.util.List;

/** The acceptance programs ({@link AcceptancePrograms}) at the sizes the golden texts and the interpreter tests use. */
public final class AcceptanceCases {
    private AcceptanceCases() {}

    /** A named program for table-driven tests. */
    public record Case(String name, Program program) {
        @Override public String toString() { return name; }
    }

    /** Every acceptance program at the sizes whose golden text is committed (real model sizes where the text stays small). */
    public static List<Case> goldenCases() {
        List<Case> l = new ArrayList<>();
        l.add(new Case("a1-conv", a1Conv(64, 64)));
        l.add(new Case("a2-peak-conv-chain", a2PeakConvChain(64, 64, 8, Io.FP32_CAST, WeightFiles.PER_WEIGHT)));
        l.add(new Case("a2-peak-conv-chain-fp16", a2PeakConvChain(64, 64, 8)));
        l.add(new Case("a2-peak-conv-chain-packed", a2PeakConvChain(64, 64, 8, Io.FP32_CAST, WeightFiles.PACKED)));
        l.add(new Case("a3-int8-chain", a3Int8Chain(64, 64, 64, 3)));
        l.add(new Case("a3-fp16-chain", a3Fp16Chain(64, 64, 64, 3)));
        l.add(new Case("a4-dynamic-matmul-stories110m-wo", a4DynamicMatmul(768, 256, 768)));
        l.add(new Case("a4-dynamic-matmul-qwen3-wo", a4DynamicMatmul(2048, 256, 1024)));
        l.add(new Case("a5-two-term-backward-stories110m", a5TwoTermBackward(2048, 256, 768)));
        l.add(new Case("a5-two-term-backward-qwen3", a5TwoTermBackward(3072, 256, 1024)));
        l.add(new Case("a6-sdpa-forward-qwen3", a6SdpaForward(QWEN3_06B)));
        l.add(new Case("a6-sdpa-forward-stories110m", a6SdpaForward(STORIES110M)));
        l.add(new Case("a7-ffn-fused-stories110m", a7FfnFused(STORIES110M)));
        l.add(new Case("a7-ffn-fused-qwen3", a7FfnFused(QWEN3_06B)));
        l.add(new Case("a8-sdpa-backward1-stories110m", a8SdpaBackward1(STORIES110M)));
        l.add(new Case("a8-sdpa-backward1-qwen3", a8SdpaBackward1(QWEN3_06B)));
        l.add(new Case("a8-sdpa-backward2-stories110m", a8SdpaBackward2(STORIES110M)));
        l.add(new Case("a8-sdpa-backward2-qwen3", a8SdpaBackward2(QWEN3_06B)));
        l.add(new Case("a9-static-attention-taps", a9StaticAttentionTaps(768, 12, 256)));
        l.add(new Case("a10-rmsnorm-backward", a10RmsNormBackward(768, 256)));
        l.add(new Case("a10-softmax-vocab", a10SoftmaxVocab(32000, 256)));
        l.add(new Case("a10-classifier-backward", a10ClassifierBackward(64, 512, 32)));
        l.add(new Case("a10-qkt", a10QkT(12, 256, 64)));
        l.add(new Case("a10-fused-qkv", a10FusedQkv(64, 64)));
        return l;
    }

    /** The same programs at tiny sizes (GQA included), for interpreter tests and the fuzzer. */
    public static List<Case> tinyCases() {
        List<Case> l = new ArrayList<>();
        l.add(new Case("a1", a1Conv(8, 4)));
        l.add(new Case("a2", a2PeakConvChain(8, 4, 3, Io.FP32_CAST, WeightFiles.PER_WEIGHT)));
        l.add(new Case("a2fp16", a2PeakConvChain(8, 4, 3)));
        l.add(new Case("a3", a3Int8Chain(8, 2, 2, 2)));
        l.add(new Case("a3fp16", a3Fp16Chain(8, 2, 2, 2)));
        l.add(new Case("a4", a4DynamicMatmul(8, 4, 6)));
        l.add(new Case("a5", a5TwoTermBackward(6, 4, 8)));
        l.add(new Case("a6", a6SdpaForward(TINY)));
        l.add(new Case("a7", a7FfnFused(TINY)));
        l.add(new Case("a8a", a8SdpaBackward1(TINY)));
        l.add(new Case("a8b", a8SdpaBackward2(TINY)));
        l.add(new Case("a9", a9StaticAttentionTaps(16, 4, 8)));
        l.add(new Case("a10a", a10RmsNormBackward(8, 4)));
        l.add(new Case("a10b", a10SoftmaxVocab(32, 4)));
        l.add(new Case("a10c", a10ClassifierBackward(8, 32, 4)));
        l.add(new Case("a10d", a10QkT(2, 4, 8)));
        l.add(new Case("a10e", a10FusedQkv(8, 4)));
        return l;
    }
}
