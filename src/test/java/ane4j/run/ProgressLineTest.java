package ane4j.run;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The one progress line of a step (cli, notebook, JShell, a StepMetrics shown alone): its fields, val carried, the ETA. */
class ProgressLineTest {
    static StepMetrics step(long step, float loss, boolean updated, boolean skipped, float val) {
        return new StepMetrics(step, 2000, loss, 3.7e-4f, 256, 1, updated, skipped, 2.94, 22452.4, Map.of(), 0, 0, val, 1);
    }

    @Test
    void aStepReadsAsTheMainJobPrintsIt() {
        // README's main job: "step 1800/2000  loss 0.6103  val 0.6422  lr 3.70e-04  22452 tok/s  2.9 ms/step  ETA 0:01"
        assertEquals("step 1800/2000  loss 0.6103  val 0.6422  lr 3.70e-04  22452 tok/s  2.9 ms/step  ETA 0:01",
                ProgressLine.format(step(1799, 0.61034f, true, false, Float.NaN), 0.64219f, 1));
        assertEquals("step 1800/2000  loss 0.6103  lr 3.70e-04  22452 tok/s  2.9 ms/step",
                ProgressLine.format(step(1799, 0.61034f, true, false, Float.NaN), Float.NaN, -1), "no val yet, no ETA");
        assertEquals("step 1800/2000  loss 0.6103  val 0.6422  lr 3.70e-04  22452 tok/s  2.9 ms/step",
                ProgressLine.of(step(1799, 0.61034f, true, false, 0.64219f)), "a step alone: its own val, no ETA");
        assertEquals("step 3/2000  loss 6.0000  lr 3.70e-04  22452 tok/s  2.9 ms/step  ETA 0:00  (update skipped)",
                ProgressLine.format(step(2, 6, false, true, Float.NaN), Float.NaN, 0));
        assertEquals("step 3/2000  loss 6.0000  lr 3.70e-04  22452 tok/s  2.9 ms/step  (accumulating)",
                ProgressLine.of(step(2, 6, false, false, Float.NaN)));
        StepMetrics graph = new StepMetrics(4, 60, 0.5f, 1e-2f, 1, 1, true, false, 1.25, 0, Map.of());
        assertEquals("step 5/60  loss 0.5000  lr 1.00e-02  1.3 ms/step", ProgressLine.of(graph), "a graph's step has no tokens");
        assertEquals("step 0/2000 · compiling kernel 3/10 (ffnFused)…", ProgressLine.beforeFirstStep(2000, SetupProgress.compiling(3, 10, "ffnFused").line()));
    }

    @Test
    void aFollowedRunCarriesTheLatestValidationLossAndStartsItsEtaAtZero() {
        ProgressLine line = new ProgressLine();
        assertNull(line.last());
        String first = line.add(step(0, 6.2f, true, false, Float.NaN));
        assertTrue(first.endsWith("  ETA 0:00"), "the first step has no pace yet: " + first);
        line.add(step(99, 2f, true, false, 2.5f));
        String after = line.add(step(100, 1.9f, true, false, Float.NaN));
        assertTrue(after.startsWith("step 101/2000  loss 1.9000  val 2.5000  lr "), "val stays until the next validation: " + after);
        assertTrue(after.matches(".*  ETA \\d+:\\d\\d"), after);
        assertEquals(after, line.last());
    }
}
