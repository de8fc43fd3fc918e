package ane4j.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.ModelConfig;
import ane4j.session.Run;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The run layer's one key table: one normaliser, one reader for text, maps and records, one unknown-key message. */
class RunSpecTest {
    @TempDir Path dir;

    @Test
    void everySpellingIsOneKey() {
        for (String k : new String[] {"weightDecay", "weight-decay", "weight_decay", "WeightDecay", "--weight-decay", "train.weightDecay"})
            assertEquals("weightDecay", RunSpec.KEYS.canonical(k), k);
        assertEquals("dim", RunSpec.KEYS.canonical("model.dim"), "as %train record prints the run record");
        assertEquals("seqLen", RunSpec.KEYS.canonical("seq"));
        assertEquals("seqLen", RunSpec.KEYS.canonical("model.seqLen"));
        assertEquals("compileBudget", RunSpec.KEYS.canonical("compile-budget"));
        assertNull(RunSpec.KEYS.canonical("stepz"));
    }

    @Test
    void theUnknownKeyMessageListsEveryKey() {
        var e = assertThrows(IllegalArgumentException.class, () -> RunSpec.of(Map.of("stepz", "3")));
        assertTrue(e.getMessage().startsWith("[train] unknown option 'stepz' (options: model, init, data, "), e.getMessage());
        for (String k : RunSpec.KEYS.names()) assertTrue(e.getMessage().contains(k), k + " in " + e.getMessage());
        var twice = assertThrows(IllegalArgumentException.class, () -> RunSpec.of(Map.of("weight-decay", "0", "weightDecay", "0.1")));
        assertTrue(twice.getMessage().contains("is given twice"), twice.getMessage());
    }

    @Test
    void textMapAndRecordReadTheSame() throws Exception {
        RunSpec text = RunSpec.fromText("steps = 7; lr = 1e-3\ncompile-budget = 40 # a comment\nin_process = true\nmodel.dim = 128");
        RunSpec map = RunSpec.of(Map.of("steps", "7", "lr", "0.001", "compileBudget", "40", "inProcess", "true", "dim", "128"));
        assertEquals(text, map);
        assertEquals(40L, text.compileBudget());
        assertTrue(text.inProcess());
        assertEquals(text, RunSpec.of(text.toMap()), "toMap reads back to the same description");
        assertEquals(text.train(), TrainOptions.of(text.train().toMap()), "the training part crosses to the worker as its map");
        Path json = dir.resolve("run.json");
        Files.writeString(json, "{\"command\": {}, \"options\": {\"steps\": \"7\", \"lr\": \"0.001\", \"seed\": \"9\", \"runDir\": \"/old/run\", \"resume\": \"false\"}}");
        RunSpec rerun = RunSpec.of(RunSpec.overRecord(json, Map.of("seed", "10")));
        assertEquals(7, rerun.train().steps());
        assertEquals(10, rerun.train().seed(), "a given flag is over the record's");
        assertNull(rerun.train().runDir(), "a rerun gets a new run folder");
    }

    @Test
    void modelSettingsOverThePresetDeriveWhatFollows() {
        assertEquals(768, ModelConfig.llamaHiddenDim(288));
        assertEquals(1376, ModelConfig.llamaHiddenDim(512));
        assertEquals(2048, ModelConfig.llamaHiddenDim(768));
        assertEquals(192, ModelConfig.llamaHiddenDim(64), "tiny's");
        RunSpec s = RunSpec.of(Map.of("dim", "128", "nLayers", "3", "seq", "32"));
        ModelConfig c = ModelConfig.override(ModelConfig.parse(s.train().model()), s.train().modelSettings());
        assertEquals(128, c.dim());
        assertEquals(352, c.hiddenDim(), "dim 128 does not keep tiny's 192");
        assertEquals(64, c.headDim(), "dim/nHeads");
        assertEquals(3, c.nLayers());
        assertEquals(32, c.seqLen());
        ModelConfig given = ModelConfig.override(ModelConfig.parse("tiny"), Map.of("dim", 128, "hiddenDim", 256));
        assertEquals(256, given.hiddenDim(), "a given hiddenDim is kept");
        var bad = assertThrows(IllegalArgumentException.class, () -> ModelConfig.override(ModelConfig.parse("tiny"), Map.of("nHeads", 3)));
        assertTrue(bad.getMessage().contains("not divisible by nHeads 3"), bad.getMessage());
        var kv = assertThrows(IllegalArgumentException.class, () -> ModelConfig.override(ModelConfig.parse("tiny"), Map.of("nKvHeads", 3)));
        assertTrue(kv.getMessage().contains("is not a multiple of nKvHeads 3"), kv.getMessage());
        assertFalse(TrainOptions.of(Map.of()).describe().contains("dim ="), "settings left to the preset are not in the record");
    }

    @Test
    void aNewRunDirPerRunAndLatestAfterTheFirstStep() {
        String before = System.getProperty(Run.RUNS_PROPERTY);
        System.setProperty(Run.RUNS_PROPERTY, dir.resolve("runs").toString());
        try {
            Run.Placed a = Run.place(RunSpec.of(Map.of())), b = Run.place(RunSpec.of(Map.of()));
            assertTrue(a.isNew() && b.isNew());
            assertTrue(a.runDir().getFileName().toString().matches("tiny-\\d{8}-\\d{6}(-\\d+)?"), a.runDir().toString());
            assertFalse(a.runDir().equals(b.runDir()), "two runs in one second get two folders");
            var none = assertThrows(IllegalArgumentException.class, () -> Run.place(RunSpec.of(Map.of("resume", "true"))));
            assertTrue(none.getMessage().startsWith("[run] --resume"), none.getMessage());
            Run.pointLatestAt(b.runDir());
            assertEquals(b.runDir().getFileName(), readLink(dir.resolve("runs/latest")));
            Run.removeIfUnused(a);
            assertFalse(Files.exists(a.runDir()), "a run that never started leaves no folder");
        } finally {
            if (before == null) System.clearProperty(Run.RUNS_PROPERTY);
            else System.setProperty(Run.RUNS_PROPERTY, before);
        }
    }

    private static Path readLink(Path p) {
        try {
            return Files.readSymbolicLink(p);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }
}
