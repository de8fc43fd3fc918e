package ane4j.train;

import ane4j.backend.ref.RefBackend;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class TrainingStepInputTest {

    @Test
    void tokensAndTargetsOutsideTheVocabularyAreOneLineErrors() {
        ModelConfig c = ModelConfig.parse("tiny");
        Parameters p = Parameters.init(c, 1);
        float[] grads = new float[p.data().length];
        try (TrainingStep step = new TrainingStep(c, new RefBackend(), TrainingStep.Options.of(DType.FP16))) {
            step.stageWeights(p.data());
            int s = c.seqLen(), v = c.vocabSize();
            int[] tokens = new int[s], targets = new int[s];
            targets[7] = v;
            var e = assertThrows(IllegalArgumentException.class, () -> step.forwardBackward(p.data(), grads, tokens, targets, 1f));
            assertEquals("[train] target " + v + " at position 7 is outside the vocabulary of " + v
                    + " (−1 means ignore); check the data's tokenizer against the model's vocabSize", e.getMessage());
            targets[7] = -1;
            tokens[3] = -2;
            e = assertThrows(IllegalArgumentException.class, () -> step.forwardBackward(p.data(), grads, tokens, targets, 1f));
            assertEquals("[train] token -2 at position 3 is outside the vocabulary of " + v, e.getMessage());
            // −1 targets are valid: the step runs
            step.forwardBackward(p.data(), grads, new int[s], targets, 1f);
        }
    }
}
