package ane4j.cli;

import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.*;

import ane4j.run.SetupProgress;
import ane4j.train.Trainer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code ane4j train}'s progress line before step 1: the setup stages in place on a terminal, nothing extra in a log. */
class TrainProgressLineTest {
    static String shown(boolean tty) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        TrainCommand.Progress p = new TrainCommand.Progress(out, tty).steps(40);
        p.onSetup(SetupProgress.startingWorker());
        p.onSetup(SetupProgress.compiling(7, 10, "sdpaBwd1"));
        p.onSetup(SetupProgress.firstStep());
        p.onStep(new StepMetrics(0, 40, 5.5f, 1e-3f, 256, 1, true, false, 10, 1000, Map.of()));
        p.onSetup(SetupProgress.compiling(1, 10, "sdpaFwd"));   // after step 1 (a resumed worker's setup): the step line stays
        p.finish();
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void aTerminalSeesEachStageInPlaceThenTheStepLine() {
        String s = shown(true);
        String[] frames = s.split("\r", -1);
        assertEquals("", frames[0]);
        assertEquals("step 0/40 · starting worker…", frames[1]);
        assertEquals("step 0/40 · compiling kernel 7/10 (sdpaBwd1)…", frames[2]);
        assertEquals("step 0/40 · first step…" + " ".repeat("step 0/40 · compiling kernel 7/10 (sdpaBwd1)…".length() - "step 0/40 · first step…".length()), frames[3]);
        assertTrue(frames[4].startsWith("step 1/40  loss 5.5000"), frames[4]);
        assertEquals(5, frames.length, "nothing after the first step line: " + s);
        assertTrue(s.endsWith("\n"), "finish ends the line");
    }

    @Test
    void aLogGetsOnlyTheStepLines() {
        String s = shown(false);
        assertFalse(s.contains("compiling") || s.contains("starting worker") || s.contains("\r"), s);
        assertTrue(s.startsWith("step 1/40  loss 5.5000"), s);
    }

    @Test
    void theStepLineIsTheOneEveryFaceShows() {
        // the first step's ETA is 0:00 whatever the clock, so the whole line is pinned: the CLI prints ProgressLine's line
        StepMetrics m = new StepMetrics(0, 40, 5.5f, 1e-3f, 256, 1, true, false, 10, 1000, Map.of());
        assertEquals("step 1/40  loss 5.5000  lr 1.00e-03  1000 tok/s  10.0 ms/step  ETA 0:00\n", shown(false));
        assertEquals(ane4j.run.ProgressLine.format(m, Float.NaN, 0) + "\n", shown(false));
        assertEquals(new ane4j.run.ProgressLine().add(m) + "\n", shown(false));
    }
}
