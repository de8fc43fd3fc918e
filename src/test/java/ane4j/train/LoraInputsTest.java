package ane4j.train;

import ane4j.run.TrainOptions;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ane4j.backend.ref.RefBackend;
import ane4j.golden.TensorCheck;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.Rng;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The adapters as kernel inputs (LoRA variants of sdpaFwd/ffnFused, o and w2 on the CPU, the adapter paths' input
 * gradients on the CPU) compute what the merged path computes (static weights: W + s·B·A baked into the kernels, the
 * path the PyTorch goldens pinned before): on tiny (dim 64) rank 4 stacks two targets per region (channels 0 and 32),
 * rank 64 gives each target its own region; both attention modes. fp32 storage: the two differ by summation order only.
 */
class LoraInputsTest {
    @ParameterizedTest
    @CsvSource({"4, false", "64, false", "4, true"})
    void inputsPathEqualsTheMergedPath(int rank, boolean threeStage) {
        ModelConfig c = ModelConfig.parse("tiny").withVocabSize(96);
        float[] base = Parameters.init(c, 5).data();
        LoraAdapters ad = new LoraAdapters(c, rank, 2f * rank, TrainOptions.LORA_TARGETS);
        Rng rng = new Rng(9);
        for (int i = 0; i < ad.size(); i++) ad.data()[i] = (2 * rng.nextFloat() - 1) * 0.1f;   // B ≠ 0: every path counts
        int[] tokens = new int[c.seqLen()], targets = new int[c.seqLen()];
        for (int t = 0; t < tokens.length; t++) { tokens[t] = rng.nextInt(96); targets[t] = t < 5 ? -1 : rng.nextInt(96); }
        float[] gIn = new float[ad.size()], gMerged = new float[ad.size()];
        float lossIn, lossMerged;
        try (TrainingStep step = new TrainingStep(c, new RefBackend(RefBackend.Options.FP32_STORAGE), TrainingStep.Options.of(DType.FP32).withThreeStage(threeStage).withLora(ad))) {
            step.stageWeights(base);
            lossIn = step.forwardBackward(base, gIn, tokens, targets, 1f, 0);
        }
        try (TrainingStep step = new TrainingStep(c, new RefBackend(RefBackend.Options.FP32_STORAGE), TrainingStep.Options.of(DType.FP32).withStaticWeights(true).withThreeStage(threeStage).withLora(ad))) {
            step.stageWeights(base);
            lossMerged = step.forwardBackward(base, gMerged, tokens, targets, 1f, 0);
        }
        assertEquals(lossMerged, lossIn, 1e-5f, "loss");
        for (var v : ad.views())
            TensorCheck.checkTensor(v.name(), Arrays.copyOfRange(gMerged, v.offset(), v.end()), Arrays.copyOfRange(gIn, v.offset(), v.end()), 2e-5, 1e-4);
        var slots = new TrainingKernels(c, DType.FP32, null, threeStage, new TrainingKernels.LoraInputs(rank, TrainOptions.LORA_TARGETS)).loraSlots("sdpaFwd");
        assertEquals(List.of("q", "k", "v"), List.copyOf(slots.keySet()));
        assertEquals(rank == 4 ? 32 : 0, slots.get("k").channel(), "rank 4 (padded 32) stacks two per region on dim 64");
    }

    /** Dropout only in training steps: validation's forward drops nothing; a training step's masks follow its sequence number. */
    @org.junit.jupiter.api.Test
    void dropoutIsOfTrainingStepsOnlyAndFollowsTheSequence() {
        ModelConfig c = ModelConfig.parse("tiny").withVocabSize(96);
        float[] base = Parameters.init(c, 5).data();
        LoraAdapters plain = new LoraAdapters(c, 4, 8f, TrainOptions.LORA_TARGETS);
        LoraAdapters dropped = new LoraAdapters(c, 4, 8f, TrainOptions.LORA_TARGETS, new LoraDropout(0.3f, 11));
        Rng rng = new Rng(9);
        for (int i = 0; i < plain.size(); i++) plain.data()[i] = dropped.data()[i] = (2 * rng.nextFloat() - 1) * 0.1f;
        int[] tokens = new int[c.seqLen()], targets = new int[c.seqLen()];
        for (int t = 0; t < tokens.length; t++) { tokens[t] = rng.nextInt(96); targets[t] = rng.nextInt(96); }
        var ref = new RefBackend(RefBackend.Options.FP32_STORAGE);
        try (TrainingStep p = new TrainingStep(c, ref, TrainingStep.Options.of(DType.FP32).withLora(plain));
             TrainingStep d = new TrainingStep(c, ref, TrainingStep.Options.of(DType.FP32).withLora(dropped))) {
            p.stageWeights(base);
            d.stageWeights(base);
            float noDropout = p.forwardLoss(base, tokens, targets);
            float[] g = new float[dropped.size()];
            float step3 = d.forwardBackward(base, g, tokens, targets, 1f, 3);
            assertEquals(noDropout, d.forwardLoss(base, tokens, targets), "validation loss: no dropout");
            assertEquals(step3, d.forwardBackward(base, g, tokens, targets, 1f, 3), "the same sequence, the same masks");
            org.junit.jupiter.api.Assertions.assertNotEquals(step3, d.forwardBackward(base, g, tokens, targets, 1f, 4), "another sequence, other masks");
            org.junit.jupiter.api.Assertions.assertNotEquals(noDropout, step3);
        }
    }
}
