package ane4j.train;

import ane4j.run.TrainOptions;
import ane4j.run.StepMetrics;
import ane4j.backend.ref.RefBackend;
import ane4j.chip.Chip;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * fp16 training on a chip profile of the reference backend ({@code -Dane4j.ref.chip}): the default model on M1, the
 * strictest profile (every error rule of M2/M3 holds on M1 too, and M1–M3 share the cliffs).
 */
class ChipEmulatedTrainingTest {
    @TempDir Path dir;

    List<StepMetrics> train(Chip chip, String name, String... kv) {
        var m = new LinkedHashMap<String, String>(Map.of("steps", "12", "runDir", dir.resolve(name).toString(), "checkpointEvery", "100", "warmup", "3"));
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        try (Trainer t = new Trainer(TrainOptions.of(m), new RefBackend(RefBackend.Options.ANE_LIKE.withChip(chip)), null)) {
            return t.run(null, 0);
        }
    }

    /**
     * Every kernel of the default model passes the rules of the strictest profiles, and while no value reaches a cliff the
     * emulation changes nothing: the losses are bit-identical to the unemulated run.
     */
    @Test
    void theDefaultModelTrainsOnAPreM4ProfileBitIdenticallyWhileNoCliffIsReached() {
        List<StepMetrics> plain = train(null, "plain"), emulated = train(Chip.M1, "m1");
        assertEquals(plain.size(), emulated.size());
        for (int i = 0; i < plain.size(); i++)
            assertEquals(Float.floatToIntBits(plain.get(i).loss()), Float.floatToIntBits(emulated.get(i).loss()), "step " + (i + 1));
        assertTrue(plain.get(plain.size() - 1).loss() < plain.get(0).loss(), "it learns");
    }
}
