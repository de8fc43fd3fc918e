package ane4j.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MetricsLogTest {
    @TempDir Path dir;

    /** valLoss is read where present; lines without it (older runs) or with null are steps without validation, not bad lines. */
    @Test
    void validationFieldIsReadTolerantly() throws Exception {
        Path f = dir.resolve("metrics.jsonl");
        Files.writeString(f, String.join("\n",
                "{\"type\":\"step\",\"step\":0,\"loss\":5.0,\"lr\":0.001}",
                "{\"type\":\"step\",\"step\":1,\"loss\":4.5,\"lr\":0.001,\"valLoss\":4.75,\"valMs\":12.5}",
                "{\"type\":\"step\",\"step\":2,\"loss\":4.0,\"lr\":0.001,\"valLoss\":null}",
                "{\"type\":\"step\",\"step\":3,\"loss\":3.5,\"lr\":0.001,\"valLoss\":\"low\"}") + "\n");
        List<String> warnings = new ArrayList<>();
        List<StepMetrics> h = MetricsLog.read(f, 4, warnings::add);
        assertEquals(3, h.size());
        assertFalse(h.get(0).validated());
        assertTrue(h.get(1).validated());
        assertEquals(4.75f, h.get(1).valLoss());
        assertEquals(12.5, h.get(1).valMs());
        assertFalse(h.get(2).validated());
        assertEquals(1, warnings.size());
        assertTrue(warnings.getFirst().contains("line 4: \"valLoss\" is not a number; line skipped"), warnings.getFirst());
    }
}
