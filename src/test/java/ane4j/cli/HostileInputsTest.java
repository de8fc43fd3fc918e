package ane4j.cli;

import static org.junit.jupiter.api.Assertions.*;

import ane4j.backend.ref.RefBackend;
import ane4j.model.HfExport;
import ane4j.model.Llama2Bin;
import ane4j.model.ModelConfig;
import ane4j.model.ModelFormatException;
import ane4j.model.Parameters;
import ane4j.model.Safetensors;
import ane4j.model.Sampler;
import ane4j.train.Checkpoint;
import ane4j.train.CheckpointFormatException;
import ane4j.run.RunFolder;
import ane4j.run.TrainOptions;
import ane4j.train.TrainState;
import ane4j.train.Trainer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 30, points 4-7 (docs/reliability.md): the findings F34, F56, H-a … H-k of the 2026-12-05 reliability report,
 * each through the CLI's own entry point (or the API where the CLI has no hook), each one line naming what to do.
 */
class HostileInputsTest {
    @TempDir Path tmp;

    private static final ModelConfig MINI = ModelConfig.llama("mini", 48, 96, 2, 4, 100, 16);

    private static boolean oneLine(String s) { return s.strip().lines().count() == 1; }

    private Path fifo(String name) throws Exception {
        Path p = tmp.resolve(name);
        Files.createDirectories(p.getParent());
        Process mk;
        try {
            mk = new ProcessBuilder("mkfifo", p.toString()).inheritIO().start();
        } catch (java.io.IOException e) {
            Assumptions.abort("mkfifo is not available: " + e.getMessage());
            return null;
        }
        Assumptions.assumeTrue(mk.waitFor() == 0, "mkfifo failed");
        return p;
    }

    private Path miniBin(String name, Parameters p) {
        Path bin = tmp.resolve(name);
        Llama2Bin.write(bin, p);
        return bin;
    }

    // ---- point 4: FIFOs are refused before they are opened (each call would block forever without the check)

    @Test
    void fifoAsDataIsRefused() throws Exception {
        Path f = fifo("fifo.bin");
        Path init = miniBin("mini.bin", Parameters.init(MINI, 3));
        var r = assertTimeoutPreemptively(Duration.ofSeconds(120), () -> RunFolderTest.train("--in-process", "--steps", "2",
                "--init", init.toString(), "--data", f.toString(), "--run-dir", tmp.resolve("r").toString(), "--backend", "ref"));
        assertNotEquals(0, r.code(), r.all());
        assertTrue(r.err().contains("is a named pipe (FIFO), not a regular file"), r.all());
        assertTrue(oneLine(r.err()), r.err());
    }

    @Test
    void fifoAsModelTokenizerConfigCheckpointAndWeightIsRefused() throws Exception {
        Path f = fifo("model.bin");
        var gen = assertTimeoutPreemptively(Duration.ofSeconds(120), () -> MilCommandTest.run("generate", "--model", f.toString(), "--prompt", "a"));
        assertNotEquals(0, gen.code());
        assertTrue(gen.err().contains("named pipe (FIFO)"), gen.err() + gen.out());

        Path tok = fifo("tok/tokenizer.json");
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> assertTimeoutPreemptively(Duration.ofSeconds(120),
                () -> ane4j.model.Tokenizer.readJson(tok)));
        assertTrue(e.getMessage().startsWith("[tokenizer] ") && e.getMessage().contains("named pipe (FIFO)"), e.getMessage());

        Path conf = fifo("c.conf");
        var c = assertTimeoutPreemptively(Duration.ofSeconds(120), () -> RunFolderTest.train("--in-process", "--steps", "1",
                "--model", conf.toString(), "--run-dir", tmp.resolve("rc").toString(), "--backend", "ref"));
        assertNotEquals(0, c.code());
        assertTrue(c.err().contains("[config] ") && c.err().contains("named pipe (FIFO)"), c.all());

        Path ckpt = fifo("ck/checkpoints/ckpt-00000010.ane4j");
        CheckpointFormatException ce = assertThrows(CheckpointFormatException.class, () -> assertTimeoutPreemptively(Duration.ofSeconds(120),
                () -> Checkpoint.loadWeights(ckpt)));
        assertTrue(ce.getMessage().contains("named pipe (FIFO)"), ce.getMessage());

        // mil check with a FIFO as weights/weight.bin (H-k)
        Path prog = tmp.resolve("m/prog.mil");
        Files.createDirectories(prog.getParent());
        Files.copy(Path.of("examples/a1-conv.mil"), prog);
        String text = Files.readString(prog);
        Assumptions.assumeTrue(text.contains("BLOBFILE"), "a1-conv.mil has BLOBFILE weights");
        fifo("m/weights/weight.bin");
        var mil = assertTimeoutPreemptively(Duration.ofSeconds(120), () -> MilCommandTest.run("mil", "check", prog.toString()));
        assertNotEquals(0, mil.code(), mil.out());
        assertTrue(mil.err().contains("named pipe (FIFO)"), mil.err() + mil.out());
    }

    // ---- point 5: non-finite weights are named at load; the sampler never indexes -1

    @Test
    void nanInALlama2BinIsNamedAtLoad() {
        Parameters p = Parameters.init(MINI, 3);
        p.data()[p.layout().layer(1).wq().offset() + 7] = Float.NaN;
        Path bin = miniBin("nan.bin", p);
        var r = MilCommandTest.run("generate", "--model", bin.toString(), "--prompt", "a", "--tokens", "3");
        assertNotEquals(0, r.code(), r.out());
        assertTrue(r.err().contains("nan.bin: tensor '" + p.layout().layer(1).wq().name() + "' holds NaN at index 7"), r.err());
        assertTrue(oneLine(r.err()), r.err());
        var t = RunFolderTest.train("--in-process", "--steps", "2", "--init", bin.toString(), "--run-dir", tmp.resolve("r").toString(), "--backend", "ref");
        assertNotEquals(0, t.code());
        assertTrue(t.err().contains("holds NaN at index 7") && !t.err().contains("learning rate"), t.all());
    }

    @Test
    void infInSafetensorsIsNamedAtLoad() {
        ModelConfig half = ModelConfig.fromFileText("dim = 48\nhiddenDim = 96\nnLayers = 2\nnHeads = 4\nvocabSize = 100\nseqLen = 16\nropeStyle = half\n", "test");
        Parameters p = Parameters.init(half, 4);
        p.data()[p.layout().tokenEmbedding().offset() + 130] = Float.POSITIVE_INFINITY;
        Path dir = HfExport.write(tmp.resolve("hf"), p, Safetensors.DType.F32);
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> Safetensors.read(dir));
        assertTrue(e.getMessage().startsWith("[safetensors] ") && e.getMessage().contains("tensor 'model.embed_tokens.weight' holds +Inf at index 130"), e.getMessage());
    }

    @Test
    void nanCheckpointIsNamedAtLoad() {
        Parameters p = Parameters.init(MINI, 5);
        p.data()[p.layout().rmsFinal().offset() + 2] = Float.NaN;
        int n = p.data().length;
        TrainState st = new TrainState(MINI, "x", 10, 10, 1, 1f, 0, 1f);
        Path f = Checkpoint.save(tmp.resolve("ck"), new Checkpoint.Contents(st, p.data(), new float[n], new float[n], null), 2);
        CheckpointFormatException e = assertThrows(CheckpointFormatException.class, () -> Checkpoint.loadWeights(f));
        assertTrue(e.getMessage().contains(f.getFileName() + ": tensor '" + p.layout().rmsFinal().name() + "' holds NaN at index 2"), e.getMessage());
    }

    @Test
    void samplerNeverIndexesMinusOne() {
        float[] allNaN = {Float.NaN, Float.NaN, Float.NaN};
        for (float topP : new float[] {0.9f, 1f}) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> new Sampler(1f, topP, 1).sample(allNaN.clone()));
            assertTrue(e.getMessage().startsWith("[sampler] every one of the 3 logits is NaN"), e.getMessage());
        }
        assertThrows(IllegalStateException.class, () -> new Sampler(0f, 0.9f, 1).sample(allNaN.clone()));
        for (int seed = 0; seed < 50; seed++) {
            int t = new Sampler(1f, 0.9f, seed).sample(new float[] {Float.NaN, 1f, Float.NaN, 0.5f});
            assertTrue(t == 1 || t == 3, "picked " + t);
        }
        assertEquals(3, new Sampler(0f, 0.9f, 1).sample(new float[] {Float.NaN, 1f, 0f, 2f}));
    }

    // ---- point 6: the run folder or its run.lock replaced or deleted under a running run

    @Test
    void deletedRunLockStopsTheRunAtTheNextWrite() throws Exception {
        Path run = tmp.resolve("run");
        TrainOptions o = TrainOptions.of(Map.of("steps", "40", "checkpointEvery", "10", "runDir", run.toString(), "backend", "ref"));
        int[] seen = {0};
        IllegalStateException e;
        try (Trainer t = new Trainer(o, new RefBackend(), null)) {
            e = assertThrows(IllegalStateException.class, () -> t.run(m -> {
                if (++seen[0] == 15) {
                    try {
                        Files.delete(run.resolve(RunFolder.LOCK_FILE));
                    } catch (java.io.IOException x) {
                        throw new java.io.UncheckedIOException(x);
                    }
                }
            }, 0));
        }
        assertTrue(e.getMessage().startsWith("[run] its run.lock is gone"), e.getMessage());
        assertEquals(15, Files.readAllLines(run.resolve("metrics.jsonl")).size(), "no metrics line after the lock vanished");
        assertTrue(Files.exists(run.resolve("checkpoints/ckpt-00000010.ane4j")), "what was written is kept");
        assertFalse(Files.exists(run.resolve("checkpoints/ckpt-00000020.ane4j")));
    }

    @Test
    void replacedRunFolderStopsTheRun() throws Exception {
        Path run = tmp.resolve("run");
        TrainOptions o = TrainOptions.of(Map.of("steps", "40", "checkpointEvery", "10", "runDir", run.toString(), "backend", "ref"));
        int[] seen = {0};
        IllegalStateException e;
        try (Trainer t = new Trainer(o, new RefBackend(), null)) {
            e = assertThrows(IllegalStateException.class, () -> t.run(m -> {
                if (++seen[0] == 12) {
                    try {
                        Files.move(run, tmp.resolve("moved"));
                        Files.createDirectories(run);
                    } catch (java.io.IOException x) {
                        throw new java.io.UncheckedIOException(x);
                    }
                }
            }, 0));
        }
        assertTrue(e.getMessage().contains("is no longer the folder this run started in"), e.getMessage());
        assertFalse(Files.exists(run.resolve("metrics.jsonl")), "nothing is written into the new folder");
        assertEquals(12, Files.readAllLines(tmp.resolve("moved/metrics.jsonl")).size());
    }

    // ---- point 7: the unclear messages H-d … H-j

    @Test
    void nanInConfigJsonIsNamedWithoutGsonAdvice() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ane4j.model.Json.parse("{\"hidden_size\": 64, \"rms_norm_eps\": NaN}"));
        assertFalse(e.getMessage().contains("setStrictness") || e.getMessage().contains("JsonReader"), e.getMessage());
        assertTrue(e.getMessage().contains("not valid JSON at line 1") && e.getMessage().contains("(NaN is not JSON"), e.getMessage());
        IllegalArgumentException e2 = assertThrows(IllegalArgumentException.class, () -> ane4j.model.Json.parse("{\"loss\":abc}"));
        assertFalse(e2.getMessage().contains("setStrictness"), e2.getMessage());
    }

    @Test
    void nonUtf8TokenizerJsonSaysSo() throws Exception {
        Path f = tmp.resolve("nonutf8.json");
        Files.write(f, new byte[] {'{', '"', 'B', (byte) 0xFF, (byte) 0xFE, '"', '}'});
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> ane4j.model.Tokenizer.readJson(f));
        assertEquals("[tokenizer] nonutf8.json: not UTF-8 text; tokenizer.json is UTF-8: re-save it as UTF-8", e.getMessage());
    }

    @Test
    void bomInConfigAndMilIsSkipped() throws Exception {
        Path conf = tmp.resolve("c.conf");
        Files.write(conf, ("\uFEFFpreset = tiny\nvocabSize = 4352\n").getBytes(StandardCharsets.UTF_8));
        assertEquals(4352, ModelConfig.load(conf).vocabSize());
        Path mil = tmp.resolve("bom.mil");
        Files.write(mil, ("\uFEFF" + Files.readString(Path.of("examples/a4-dynamic-matmul.mil"))).getBytes(StandardCharsets.UTF_8));
        var r = MilCommandTest.run("mil", "check", mil.toString());
        assertEquals(0, r.code(), r.err());
    }

    @Test
    void hugeDimSaysTooLarge() {
        var r = RunFolderTest.train("--in-process", "--steps", "1", "--dim", "1073741824", "--run-dir", tmp.resolve("r").toString());
        assertNotEquals(0, r.code());
        assertTrue(r.err().contains("dim 1073741824 is too large"), r.all());
    }

    @Test
    void resumeWithRestartFromScratchIsRefused() {
        var r = RunFolderTest.train("--in-process", "--steps", "1", "--resume", "--restart-from-scratch", "--run-dir", tmp.resolve("r").toString());
        assertNotEquals(0, r.code());
        assertTrue(r.err().contains("contradict each other"), r.all());
        assertFalse(Files.exists(tmp.resolve("r")), "nothing is created");
    }

    @Test
    void duplicateTokenizerIdIsRefused() throws Exception {
        Path f = tmp.resolve("dup.json");
        Files.writeString(f, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"zzdup\": 1}, \"merges\": []}}");
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> ane4j.model.Tokenizer.readJson(f));
        assertTrue(e.getMessage().contains("'b' and 'zzdup' share id 1"), e.getMessage());
    }

    @Test
    void negativeCheckpointStepIsNamedAsCorruption() {
        Parameters p = Parameters.init(MINI, 5);
        int n = p.data().length;
        TrainState st = new TrainState(MINI, "x", -5, 3, 1, 1f, 0, 1f);
        Path f = Checkpoint.save(tmp.resolve("neg"), new Checkpoint.Contents(st, p.data(), new float[n], new float[n], null), 2);
        CheckpointFormatException e = assertThrows(CheckpointFormatException.class, () -> Checkpoint.loadWeights(f));
        assertTrue(e.getMessage().contains(f + ": step -5 is negative: the file is corrupt"), e.getMessage());
    }
}
