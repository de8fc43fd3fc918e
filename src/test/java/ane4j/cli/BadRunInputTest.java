package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.Llama2Bin;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.TokenShard;
import ane4j.model.Tokenizer;
import ane4j.train.Checkpoint;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 14 point 6: small bad (or merely unusual) inputs of {@code ane4j train}, each one line naming the problem and the fix. */
class BadRunInputTest {
    @TempDir Path tmp;

    private static final ModelConfig MINI = ModelConfig.llama("mini", 48, 96, 2, 4, 100, 16);

    private Path miniBin() {
        Path bin = tmp.resolve("mini.bin");
        Llama2Bin.write(bin, Parameters.init(MINI, 3));
        return bin;
    }

    private Path tokens(int n) {
        Path shard = tmp.resolve("tokens.bin");
        int[] t = new int[n];
        for (int i = 0; i < n; i++) t[i] = (i * 37 + 11) % MINI.vocabSize();
        TokenShard.write(shard, t);
        return shard;
    }

    private static boolean oneLine(String s) { return s.strip().lines().count() == 1; }

    /** A token file of exactly seq+1 tokens is one training window: it trains (it used to fail with "[rng] bound must be positive, got 0"). */
    @Test
    void oneWindowTokenFileTrains() {
        var r = RunFolderTest.train("--init", miniBin().toString(), "--data", tokens(MINI.seqLen() + 1).toString(), "--steps", "3",
                "--run-dir", tmp.resolve("run").toString(), "--backend", "ref", "--in-process");
        assertEquals(0, r.code(), r.all());
        assertFalse(r.all().contains("[rng]"), r.all());
        assertTrue(Files.exists(tmp.resolve("run/metrics.jsonl")));
    }

    /** A tokenizer.bin next to --data with fewer tokens than the model's vocabulary is refused before step 0, in one line. */
    @Test
    void smallerTokenizerBesideDataIsRefusedBeforeTraining() {
        Path data = tokens(200);
        List<byte[]> pieces = new ArrayList<>();
        for (int i = 0; i < 50; i++) pieces.add(("p" + i).getBytes(StandardCharsets.UTF_8));
        new Tokenizer(pieces, new float[50]).write(data.resolveSibling("tokenizer.bin"));
        Path run = tmp.resolve("run");
        for (String mode : new String[] {"--in-process", "--heap"}) {
            String[] args = mode.equals("--in-process")
                    ? new String[] {"--init", miniBin().toString(), "--data", data.toString(), "--steps", "3", "--run-dir", run.toString(), "--backend", "ref", mode}
                    : new String[] {"--init", miniBin().toString(), "--data", data.toString(), "--steps", "3", "--run-dir", run.toString(), "--backend", "ref", mode, "256m"};
            var r = RunFolderTest.train(args);
            assertEquals(1, r.code(), r.all());
            assertTrue(r.err().contains("[tokenizer] ") && r.err().contains("vocabulary of 50 tokens is smaller than model mini's 100")
                    && r.err().contains("the data's ids reach 99"), r.err());
            assertTrue(oneLine(r.err()), r.err());
            assertFalse(r.out().contains("step 0"), r.out());
            assertFalse(Files.exists(run.resolve("metrics.jsonl")) && !readOrEmpty(run.resolve("metrics.jsonl")).isBlank(), "no step ran");
        }
    }

    private static String readOrEmpty(Path p) {
        try { return Files.readString(p); } catch (java.io.IOException e) { return ""; }
    }

    /**
     * A failed start (here a corrupt --init) leaves runs/latest on the previous run and no empty folder; a bare --resume
     * then continues that run, and one whose runs/latest names a folder without a checkpoint refuses in one line.
     */
    @Test
    void failedStartLeavesRunsLatestAloneAndBareResumeNeedsACheckpoint() throws java.io.IOException {
        Path runs = tmp.resolve("runs"), latest = runs.resolve("latest");
        String before = System.getProperty("ane4j.runs");
        System.setProperty("ane4j.runs", runs.toString());
        try {
            var ok = RunFolderTest.train("--steps", "2", "--backend", "ref", "--in-process");
            assertEquals(0, ok.code(), ok.all());
            Path first = latest.toRealPath();
            assertFalse(Checkpoint.list(first.resolve("checkpoints")).isEmpty());

            Path bad = tmp.resolve("bad.bin");
            Files.write(bad, new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
            var failed = RunFolderTest.train("--init", bad.toString(), "--steps", "2", "--backend", "ref", "--in-process");
            assertEquals(1, failed.code(), failed.all());
            assertEquals(first, latest.toRealPath(), "runs/latest still names the run that started");
            try (var s = Files.list(runs)) {
                assertEquals(2, s.count(), "only the first run and runs/latest: the failed start left no folder");
            }
            var failedWorker = RunFolderTest.train("--init", bad.toString(), "--steps", "2", "--backend", "ref");
            assertEquals(1, failedWorker.code(), failedWorker.all());
            try (var s = Files.list(runs)) {
                assertEquals(2, s.count(), "a failed start in a worker JVM leaves no folder holding only run.lock");
            }

            var resumed = RunFolderTest.train("--resume", "--steps", "3", "--backend", "ref", "--in-process");
            assertEquals(0, resumed.code(), resumed.all());
            assertTrue(resumed.all().contains("resumed from step"), resumed.all());

            Path empty = Files.createDirectories(runs.resolve("empty-run"));
            Files.delete(latest);
            Files.createSymbolicLink(latest, empty.getFileName());
            var refused = RunFolderTest.train("--resume", "--steps", "2", "--backend", "ref", "--in-process");
            assertEquals(1, refused.code(), refused.all());
            assertTrue(refused.err().contains("[run] --resume: ") && refused.err().contains("has no checkpoint to resume from"), refused.err());
            assertTrue(oneLine(refused.err()), refused.err());
            try (var s = Files.list(empty)) {
                assertEquals(0, s.count(), "nothing was started in it");
            }
        } finally {
            if (before == null) System.clearProperty("ane4j.runs");
            else System.setProperty("ane4j.runs", before);
        }
    }

    private static byte[] ints(int bytes, int... values) {
        var b = java.nio.ByteBuffer.allocate(bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int v : values) b.putInt(v);
        return b.array();
    }

    /** llama2.c's version-2 files (magic "ak42", int8) are named with the float32 re-export; a short version-1 file says what it lacks. */
    @Test
    void llama2cVersion2FilesAreNamedAndVersion1SizesChecked() throws java.io.IOException {
        for (int version : new int[] {1, 2, 3}) {
            Path bin = tmp.resolve("v" + version + ".bin");
            byte[] header = ints(256, 0x616b3432, version, 48, 96, 2, 4, 4, 100, 16);
            byte[] file = java.util.Arrays.copyOf(header, 256 + 4096);
            Files.write(bin, file);
            var r = RunFolderTest.train("--init", bin.toString(), "--steps", "2", "--run-dir", tmp.resolve("run" + version).toString(), "--backend", "ref", "--in-process");
            assertEquals(1, r.code(), r.all());
            String want = switch (version) {
                case 1 -> "[llama2.bin] v1.bin: expected ";
                case 2 -> "[llama2.bin] v2.bin: a llama2.c version-2 file (magic ak42, int8 group-quantized Q8_0 weights)";
                default -> "[llama2.bin] v3.bin: a llama2.c file (magic ak42) of version 3, which ane4j does not know";
            };
            assertTrue(r.err().contains(want) && !r.err().contains("foreign or corrupt"), r.err());
            if (version == 1) assertTrue(r.err().contains("bytes for version=1 dim=48") && r.err().contains("found 4352 (truncated?)"), r.err());
            else assertTrue(r.err().contains("export.py OUT.bin --version 1"), r.err());
            assertTrue(oneLine(r.err()), r.err());
        }
    }

    /** An llm.c shard (256 int32 header, magic 20240520, then uint16 tokens) trains on its tokens, not its header. */
    @Test
    void llmcTokenShardIsReadAfterItsHeader() throws java.io.IOException {
        int n = MINI.seqLen() + 1;
        Path raw = tokens(n), shard = tmp.resolve("llmc_train_000001.bin");
        byte[] tokens = Files.readAllBytes(raw);
        byte[] header = ints(1024, 20240520, 1, n);
        byte[] file = java.util.Arrays.copyOf(header, 1024 + tokens.length);
        System.arraycopy(tokens, 0, file, 1024, tokens.length);
        Files.write(shard, file);
        try (TokenShard s = TokenShard.open(shard, MINI.vocabSize(), MINI.seqLen())) {
            assertEquals(n, s.size());
            assertEquals(11, s.get(0));
            assertEquals((16 * 37 + 11) % MINI.vocabSize(), s.get(n - 1));
        }
        var r = RunFolderTest.train("--init", miniBin().toString(), "--data", shard.toString(), "--steps", "2",
                "--run-dir", tmp.resolve("run").toString(), "--backend", "ref", "--in-process");
        assertEquals(0, r.code(), r.all());

        Files.write(shard, java.util.Arrays.copyOf(file, file.length - 2));    // one token short of the header's count
        var shortFile = RunFolderTest.train("--init", miniBin().toString(), "--data", shard.toString(), "--steps", "2",
                "--run-dir", tmp.resolve("run2").toString(), "--backend", "ref", "--in-process");
        assertEquals(1, shortFile.code(), shortFile.all());
        assertTrue(shortFile.err().contains("[tokens] llmc_train_000001.bin: an llm.c token shard header (magic 20240520) with version 1 and 17 tokens"), shortFile.err());
        assertTrue(oneLine(shortFile.err()), shortFile.err());

        Files.write(shard, java.util.Arrays.copyOf(ints(1024, 20240801, 7, 4), 1024 + 16));
        var llama3 = RunFolderTest.train("--init", miniBin().toString(), "--data", shard.toString(), "--steps", "2",
                "--run-dir", tmp.resolve("run3").toString(), "--backend", "ref", "--in-process");
        assertEquals(1, llama3.code(), llama3.all());
        assertTrue(llama3.err().contains("an llm.c shard of uint32 tokens (magic 20240801, version 7), read as uint16; pass --data-dtype uint32") && oneLine(llama3.err()), llama3.err());
    }

    /** LoRA settings without --lora (a full fine-tune in their place) are refused as the options are read: one line, no run folder, worker or not. */
    @Test
    void loraSettingsWithoutARankAreOneLineAndLeaveNoFolder() {
        String[][] cases = {{"--lora-targets", "q,k"}, {"--lora-alpha", "32"}, {"--lora-dropout", "0.1"}};
        for (String[] c : cases)
            for (boolean inProcess : new boolean[] {true, false}) {
                Path run = tmp.resolve("lora-" + c[0].substring(2) + "-" + inProcess);
                List<String> args = new ArrayList<>(List.of("--init", miniBin().toString(), "--steps", "2", "--run-dir", run.toString(), "--backend", "ref", c[0], c[1]));
                if (inProcess) args.add("--in-process");
                var r = RunFolderTest.train(args.toArray(String[]::new));
                assertEquals(1, r.code(), r.all());
                assertTrue(oneLine(r.err()) && r.err().contains("without lora") && r.err().contains("add lora = RANK (--lora RANK)"), r.all());
                assertFalse(Files.exists(run), run + " was created for a refused run");
            }
    }
}
