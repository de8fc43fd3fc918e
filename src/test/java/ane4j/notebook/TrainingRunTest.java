package ane4j.notebook;

import ane4j.run.RunSpec;
import ane4j.run.RunState;
import ane4j.session.*;
import static org.junit.jupiter.api.Assertions.*;

import ane4j.backend.ref.RefBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tech.tablesaw.api.Table;

/** Training runs through the notebook API on the reference backend: reproducible, restartable, recorded. */
class TrainingRunTest {
    @TempDir
    Path dir;

    static LocalSession ref() {
        return new LocalSession(new RefBackend());
    }

    TrainingRun run(String name, String config) {
        return TrainingRun.start(ref(), "backend = ref\nrunDir = " + dir.resolve(name) + "\n" + config).await();
    }

    @Test
    void configLinesCommentsAndErrors() {
        Map<String, String> m = RunSpec.parseText("steps = 20   # short\n\n# a comment\nlr=1e-3; seed = 9\nweight-decay = 0");
        assertEquals(Map.of("steps", "20", "lr", "1e-3", "seed", "9", "weight-decay", "0"), m);
        var e = assertThrows(IllegalArgumentException.class, () -> RunSpec.parseText("steps = 3\nsteps 4"));
        assertEquals("[train] line 2 'steps 4' is not 'key = value' (e.g. steps = 60)", e.getMessage());
        RunSpec b = RunSpec.of(Map.of("compile-budget", "40", "steps", "3"));
        assertEquals(40L, b.compileBudget());
        assertEquals(3, b.train().steps());
        assertFalse(b.train().toMap().containsKey("compileBudget"), "compileBudget is a run key, not a training key");
        assertThrows(IllegalArgumentException.class, () -> RunSpec.of(Map.of("compileBudget", "0")));
        var u = assertThrows(IllegalArgumentException.class, () -> TrainingRun.start(ref(), "stepz = 3"));
        assertTrue(u.getMessage().startsWith("[train] unknown option 'stepz'"), u.getMessage());
    }

    @Test
    void sameSeedSameNumbersAndTheRunRecord() throws Exception {
        TrainingRun a = run("a", "steps = 8\nseed = 5"), b = run("b", "steps = 8\nseed = 5"), c = run("c", "steps = 8\nseed = 6");
        assertEquals(RunState.FINISHED, a.state());
        assertEquals(8, a.losses().length);
        assertArrayEquals(a.losses(), b.losses(), "same seed on ref: bit-identical losses");
        assertFalse(java.util.Arrays.equals(a.losses(), c.losses()), "another seed gives other numbers");
        assertTrue(a.losses()[7] < a.losses()[0], "the loss falls: " + java.util.Arrays.toString(a.losses()));
        String record = Files.readString(dir.resolve("a/run.txt"));
        assertTrue(record.contains("seed = 5") && record.contains("backend = ref") && record.contains("java = " + System.getProperty("java.version")), record);
        Table t = a.runTable();
        assertEquals("5", value(t, "seed"));
        assertEquals("ref", value(t, "environment.backend"));
        assertEquals(LocalSession.chip(), value(t, "environment.chip"));
        assertEquals("0", value(t, "environment.restarts"));
        Table m = a.table();
        assertEquals(8, m.rowCount());
        assertEquals(a.losses()[3], m.doubleColumn("loss").get(3), 0.0);
        assertTrue(m.name().contains("seed 5"), m.name());
    }

    static String value(Table t, String key) {
        for (int r = 0; r < t.rowCount(); r++) if (t.getString(r, "key").equals(key)) return t.getString(r, "value");
        return fail("no " + key + " in\n" + t.print());
    }

    @Test
    void compileBudgetRestartsAndTheNumbersStayTheSame() {
        TrainingRun plain = run("plain", "steps = 6\nseed = 3\nweights = static");
        TrainingRun restarted = run("restarted", "steps = 6\nseed = 3\nweights = static\ncompileBudget = 40");
        assertEquals(0, plain.restarts());
        assertTrue(restarted.restarts() >= 2, "static weights recompile after each update: restarts " + restarted.restarts());
        assertEquals(restarted.restarts(), restarted.messages().stream().filter(l -> l.startsWith("backend restarted: compile budget 40 reached")).count(),
                "one line per restart: " + restarted.messages());
        assertArrayEquals(plain.losses(), restarted.losses(), "restarts do not change the numbers");
    }

    @Test
    void budgetTooSmallForOneStepIsOneLine() {
        TrainingRun r = TrainingRun.start(ref(), "backend = ref\nsteps = 3\nweights = static\ncompileBudget = 2\nrunDir = " + dir.resolve("small"));
        var e = assertThrows(MagicException.class, r::await);
        assertTrue(e.getMessage().startsWith("[train] compileBudget 2 is too small"), e.getMessage());
        assertEquals(RunState.FAILED, r.state());
    }

    @Test
    void stopAndResumeContinueTheSameRun() throws Exception {
        TrainingRun whole = run("whole", "steps = 10\nseed = 11");
        TrainingRun parts = TrainingRun.start(ref(), "backend = ref\nsteps = 10\nseed = 11\nrunDir = " + dir.resolve("parts"));
        while (parts.history().size() < 3 && parts.running()) Thread.sleep(5);
        parts.stop().await();
        assertEquals(RunState.STOPPED, parts.state());
        int at = parts.history().size();
        assertTrue(at >= 3 && at < 10, "stopped between steps at " + at);
        parts.resume().await();
        assertEquals(RunState.FINISHED, parts.state());
        assertArrayEquals(whole.losses(), parts.losses());
        var e = assertThrows(IllegalStateException.class, parts::resume);
        assertTrue(e.getMessage().contains("finished"), e.getMessage());
        String text = parts.generate("Once upon a time", 16, 0.8f, 0.9f, 1);
        assertTrue(text.startsWith("Once upon a time") && text.length() > "Once upon a time".length(), text);
        assertEquals(text, whole.generate("Once upon a time", 16, 0.8f, 0.9f, 1), "same weights, same seed: same text");
    }
}
