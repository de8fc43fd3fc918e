package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ane4j.train.Checkpoint;
import ane4j.run.MetricsLog;
import ane4j.run.RunFolder;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18, "a run folder is a small database", through {@code ane4j train} in this JVM (rows 1, 2, 3, 10–13, 18, 19
 * of the table; the signal and SIGKILL rows are in {@link StopAndKillTest}, in real subprocesses).
 */
@Tag("process")
class RunFolderTest {
    @TempDir Path tmp;

    record Run(int code, String out, String err) {
        String all() { return out + err; }
    }

    static Run train(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        String[] a = Stream.concat(Stream.of("train"), Arrays.stream(args)).toArray(String[]::new);
        int code = Main.run(a, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** A short in-process run: 20 steps, checkpoints at 10 and 20. */
    private Path trained(String name) {
        Path run = tmp.resolve(name);
        Run r = train("--steps", "20", "--checkpoint-every", "10", "--run-dir", run.toString(), "--backend", "ref", "--in-process");
        assertEquals(0, r.code(), r.all());
        return run;
    }

    private static List<Long> steps(Path run) {
        List<Long> s = new ArrayList<>();
        for (var m : MetricsLog.read(run.resolve("metrics.jsonl"), 0, w -> {})) s.add(m.step());
        return s;
    }

    private static List<String> rawSteps(Path run) throws IOException {
        return Files.readAllLines(run.resolve("metrics.jsonl")).stream().map(l -> l.replaceAll(".*\"step\":(\\d+),.*", "$1")).toList();
    }

    private static List<Long> range(long from, long to) {
        List<Long> r = new ArrayList<>();
        for (long i = from; i < to; i++) r.add(i);
        return r;
    }

    /** Row 1: checkpoints exist but none is readable: refused with each file and why; nothing is touched. */
    @Test
    void resumeWithNoReadableCheckpointRefusesAndKeepsThem() throws IOException {
        Path run = trained("r1");
        List<Path> ckpts = Checkpoint.list(run.resolve("checkpoints"));
        for (Path p : ckpts) {   // one zeroed, one of a newer format version
            byte[] b = Files.readAllBytes(p);
            if (p.equals(ckpts.get(0))) Arrays.fill(b, 0, 4096, (byte) 0);
            else b[8] = 2;
            Files.write(p, b);
        }
        byte[][] before = {Files.readAllBytes(ckpts.get(0)), Files.readAllBytes(ckpts.get(1))};
        String metricsBefore = Files.readString(run.resolve("metrics.jsonl"));
        for (String mode : new String[] {"--in-process", "--backend"}) {
            Run r = mode.equals("--in-process")
                    ? train("--steps", "30", "--checkpoint-every", "10", "--run-dir", run.toString(), "--backend", "ref", "--resume", "--in-process")
                    : train("--steps", "30", "--checkpoint-every", "10", "--run-dir", run.toString(), "--backend", "ref", "--resume");
            assertEquals(1, r.code(), r.all());
            String line = r.err().strip();
            assertEquals(1, line.lines().count(), line);
            assertTrue(line.contains("[checkpoint] none of the 2 checkpoints in " + run.resolve("checkpoints") + " can be read"), line);
            assertTrue(line.contains("ckpt-00000020.ane4j: not an ane4j checkpoint (bad magic)"), line);
            assertTrue(line.contains("ckpt-00000010.ane4j: checkpoint format version 2"), line);
            assertTrue(line.contains("--restart-from-scratch"), line);
            assertEquals(ckpts, Checkpoint.list(run.resolve("checkpoints")), mode);
            assertArrayEquals2(before, ckpts);
            assertEquals(metricsBefore, Files.readString(run.resolve("metrics.jsonl")), "metrics untouched (" + mode + ")");
        }
        // --restart-from-scratch sets them aside (nothing deleted) and starts at 0
        Run r = train("--steps", "10", "--run-dir", run.toString(), "--backend", "ref", "--restart-from-scratch", "--in-process");
        assertEquals(0, r.code(), r.all());
        Path aside;
        try (Stream<Path> s = Files.list(run)) {
            aside = s.filter(p -> p.getFileName().toString().startsWith("set-aside-")).findFirst().orElseThrow();
        }
        assertTrue(r.out().contains("the earlier checkpoints and metrics are in " + aside), r.out());
        assertArrayEquals(before[0], Files.readAllBytes(aside.resolve("checkpoints").resolve(ckpts.get(0).getFileName())));
        assertEquals(metricsBefore, Files.readString(aside.resolve("metrics.jsonl")));
        assertEquals(range(0, 10), steps(run));
        assertTrue(Files.readString(run.resolve("run.txt")).contains("started at step 0 from scratch"), Files.readString(run.resolve("run.txt")));
    }

    private static void assertArrayEquals2(byte[][] before, List<Path> files) throws IOException {
        for (int i = 0; i < files.size(); i++) assertArrayEquals(before[i], Files.readAllBytes(files.get(i)), files.get(i) + " unchanged");
    }

    private static void assertArrayEquals(byte[] a, byte[] b) { org.junit.jupiter.api.Assertions.assertArrayEquals(a, b); }

    private static void assertArrayEquals(byte[] a, byte[] b, String m) { org.junit.jupiter.api.Assertions.assertArrayEquals(a, b, m); }

    /** Row 1, the other half: a newer unreadable checkpoint is kept (renamed), never overwritten by the resumed run. */
    @Test
    void newerUnreadableCheckpointIsKeptAsideNotOverwritten() throws IOException {
        Path run = trained("r1b");
        Path newest = Checkpoint.pathFor(run.resolve("checkpoints"), 20);
        byte[] b = Files.readAllBytes(newest);
        b[8] = 9;   // a format version from the future
        Files.write(newest, b);
        Run r = train("--steps", "30", "--checkpoint-every", "10", "--run-dir", run.toString(), "--backend", "ref", "--resume", "--in-process");
        assertEquals(0, r.code(), r.all());
        assertTrue(r.out().contains("[checkpoint] skipping " + newest + ": checkpoint format version 9"), r.out());
        assertTrue(r.out().contains("kept as ckpt-00000020.ane4j.unreadable, resuming from the previous one"), r.out());
        assertTrue(r.out().contains("[train] resumed from step 10"), r.out());
        assertArrayEquals(b, Files.readAllBytes(run.resolve("checkpoints/ckpt-00000020.ane4j.unreadable")), "kept byte for byte");
        assertEquals(20, Checkpoint.load(newest).state().step(), "a new, valid ckpt-20");
        assertEquals(range(0, 30), steps(run));
    }

    /** A fresh start in a folder with checkpoints is refused (in process as with the worker). */
    @Test
    void freshRunOnAnOldRunIsRefused() {
        Path run = trained("fresh");
        Run r = train("--steps", "20", "--run-dir", run.toString(), "--backend", "ref", "--in-process");
        assertEquals(1, r.code(), r.all());
        assertTrue(r.err().contains("already has checkpoints (newest ckpt-00000020.ane4j); pass --resume (resume = true)"), r.err());
        assertEquals(range(0, 20), steps(run));
    }

    /** Row 2: decoding a checkpoint writes no temp file (it used to, and a full /tmp destroyed every good checkpoint). */
    @Test
    void checkpointsDecodeWithoutTempFiles() throws Exception {
        Path run = trained("r2");
        String tmpdir = System.getProperty("java.io.tmpdir");
        Path unusable = tmp.resolve("no-such-tmp");
        try {
            // createTempFile reads java.io.tmpdir once per JVM; the subprocess test covers a fresh JVM, this the reader
            System.setProperty("java.io.tmpdir", unusable.toString());
            Checkpoint.Contents c = Checkpoint.load(Checkpoint.pathFor(run.resolve("checkpoints"), 20));
            assertEquals(20, c.state().step());
        } finally {
            System.setProperty("java.io.tmpdir", tmpdir);
        }
        // and the CLI in a JVM whose java.io.tmpdir does not exist resumes from the newest checkpoint
        var p = StopAndKillTest.ane4j(List.of("-Djava.io.tmpdir=" + unusable), "train", "--steps", "25", "--checkpoint-every", "10",
                "--run-dir", run.toString(), "--backend", "ref", "--resume", "--in-process");
        assertEquals(0, p.code(), p.out());
        assertTrue(p.out().contains("[train] resumed from step 20 (ckpt-00000020.ane4j)"), p.out());
        assertEquals(range(0, 25), steps(run));
    }

    /** Row 3 in one JVM: a folder held by another run (here: this test) is refused, naming the holder. */
    @Test
    void aHeldRunFolderIsRefusedWithTheHolder() {
        Path run = tmp.resolve("r3");
        try (RunFolder held = RunFolder.lock(run, "the test holding it")) {
            for (String mode : new String[] {"--in-process", "--resume"}) {
                Run r = train("--steps", "5", "--run-dir", run.toString(), "--backend", "ref", mode);
                assertEquals(1, r.code(), r.all());
                assertTrue(r.err().contains("[run] " + run + " is in use by process " + ProcessHandle.current().pid() + " (the test holding it, since "), r.err());
                assertFalse(Files.exists(run.resolve("metrics.jsonl")));
            }
        }
        assertEquals(0, train("--steps", "5", "--run-dir", run.toString(), "--backend", "ref", "--in-process").code(), "free again");
    }

    /** Row 10: a partial checkpoint is removed on failure (real ENOSPC: the .tmp is /dev/full) and on the next start. */
    @Test
    void partialCheckpointsAreRemoved() throws IOException {
        assumeTrue(Files.isWritable(Path.of("/dev/full")), "needs /dev/full");
        Path run = trained("r10");
        Path ckpts = run.resolve("checkpoints");
        // a stale partial file of a dead run: removed by the next start
        Path stale = ckpts.resolve("ckpt-00000025.ane4j.tmp");
        Files.write(stale, new byte[1000]);
        // the write of ckpt-30 hits a full disk: the kernel's "No space left on device"
        Path full = ckpts.resolve("ckpt-00000030.ane4j.tmp");
        ane4j.run.TrainOptions o = ane4j.run.TrainOptions.of(java.util.Map.of("steps", "30", "checkpointEvery", "10", "runDir", run.toString(),
                "backend", "ref", "resume", "true"));
        List<String> log = new ArrayList<>();
        try (var t = new ane4j.train.Trainer(o, new ane4j.backend.ref.RefBackend(ane4j.backend.ref.RefBackend.Options.ANE_LIKE),
                new ane4j.train.Trainer.Listener() {
                    @Override public void onStep(ane4j.run.StepMetrics m) {}
                    @Override public void onMessage(String line) { log.add(line); }
                })) {
            assertTrue(String.join("\n", log).contains("[run] removed " + stale + " (1000 bytes), a partial file left by an earlier run"), log.toString());
            assertFalse(Files.exists(stale));
            Files.createSymbolicLink(full, Path.of("/dev/full"));
            var e = org.junit.jupiter.api.Assertions.assertThrows(java.io.UncheckedIOException.class, () -> t.run(null, 0));
            assertEquals("[checkpoint] cannot write ckpt-00000030.ane4j to " + ckpts + ": No space left on device; the older checkpoints are intact", e.getMessage());
        }
        assertFalse(Files.exists(full, java.nio.file.LinkOption.NOFOLLOW_LINKS), "the partial file is gone");
        assertEquals(List.of(Checkpoint.pathFor(ckpts, 20), Checkpoint.pathFor(ckpts, 10)), Checkpoint.list(ckpts));
        assertEquals(20, Checkpoint.load(Checkpoint.pathFor(ckpts, 20)).state().step());
    }

    /** Row 11: other optimiser/data settings on a resume are refused unless --override, which run.txt records. */
    @Test
    void changedSettingsNeedOverrideAndAreRecorded() throws IOException {
        Path run = trained("r11");
        String record = Files.readString(run.resolve("run.txt"));
        for (String[] change : new String[][] {{"--lr", "1e-3"}, {"--seed", "7"}, {"--storage", "fp32"}}) {
            Run r = train("--steps", "30", "--checkpoint-every", "10", "--run-dir", run.toString(), "--backend", "ref", "--resume", "--in-process", change[0], change[1]);
            assertEquals(1, r.code(), r.all());
            assertTrue(r.err().contains("[train] this resume changes settings the run in " + run + " was trained with: "), r.err());
            assertTrue(r.err().contains("--override"), r.err());
            assertEquals(record, Files.readString(run.resolve("run.txt")), "run.txt untouched");
        }
        Run r = train("--steps", "30", "--checkpoint-every", "10", "--run-dir", run.toString(), "--backend", "ref", "--resume", "--in-process",
                "--lr", "1e-3", "--seed", "7", "--override");
        assertEquals(0, r.code(), r.all());
        assertTrue(r.out().contains("[train] --override: continuing with lr 0.003 → 0.001, seed 42 → 7"), r.out());
        String now = Files.readString(run.resolve("run.txt"));
        assertTrue(now.contains("\nlr = 0.001\n"), now);
        assertTrue(now.matches("(?s).*\\[history]\n\\S+  started at step 0 \\(backend ref, 20 steps\\)\n\\S+  resumed at step 20 with --override: lr 0.003 → 0.001, seed 42 → 7 \\(backend ref, 30 steps\\)\n"), now);
        // more steps is not a change of settings
        assertEquals(0, train("--steps", "35", "--run-dir", run.toString(), "--backend", "ref", "--resume", "--in-process", "--lr", "1e-3", "--seed", "7").code());
    }

    /** Row 12: another model shape on a resume names both configurations and what differs. */
    @Test
    void anotherModelNamesBothConfigurations() throws IOException {
        Path run = trained("r12");
        Path cfg = tmp.resolve("longer.txt");
        Files.writeString(cfg, "preset = tiny\nseqLen = 128\nhiddenDim = 256\n");
        Run r = train("--model", cfg.toString(), "--steps", "30", "--run-dir", run.toString(), "--backend", "ref", "--resume", "--in-process");
        assertEquals(1, r.code(), r.all());
        int heads = ane4j.model.ModelConfig.parse("tiny").nHeads();
        assertTrue(r.err().contains("ckpt-00000020.ane4j is for model tiny (dim 64, hidden 192, 2 layers, " + heads + " heads, vocabulary 512, seq 64), "
                + "this run's model is tiny (dim 64, hidden 256, 2 layers, " + heads + " heads, vocabulary 512, seq 128) (they differ in hiddenDim 192 → 256, seqLen 64 → 128)"), r.err());
    }

    /** Row 13: a bad line in metrics.jsonl is skipped with a warning naming it; the resume truncates to the checkpoint's step. */
    @Test
    void badMetricsLinesAreSkippedAndNoStepAppearsTwice() throws IOException {
        Path run = trained("r13");
        Path metrics = run.resolve("metrics.jsonl");
        List<String> lines = new ArrayList<>(Files.readAllLines(metrics));
        lines.set(3, lines.get(3).replaceFirst("\"loss\":[^,]*", "\"loss\":1.2.3"));
        lines.set(5, lines.get(5).replaceFirst("\"loss\":[^,]*", "\"loss\":abc"));
        Files.write(metrics, lines);
        Files.writeString(metrics, "{\"type\":\"step\",\"step\":21,\"lo", java.nio.file.StandardOpenOption.APPEND);   // torn last line
        Run r = train("--steps", "30", "--checkpoint-every", "10", "--run-dir", run.toString(), "--backend", "ref", "--resume", "--in-process");
        assertEquals(0, r.code(), r.all());
        assertTrue(r.out().contains("[metrics] " + metrics + " line 4: not JSON (JSON: "), r.out());
        assertTrue(r.out().contains("[metrics] " + metrics + " line 6: not JSON"), r.out());
        assertTrue(r.out().contains("[metrics] " + metrics + " line 21: not JSON"), r.out());
        List<String> expected = new ArrayList<>();
        for (long s : range(0, 30)) if (s != 3 && s != 5) expected.add(Long.toString(s));
        assertEquals(expected, rawSteps(run), "each step once, in order");
    }

    /** Row 19: messages keep their reason and name the user's flags. */
    @Test
    void messagesKeepTheReason() {
        Run r = train("--steps", "99999999999", "--run-dir", tmp.resolve("m").toString());
        assertEquals("ane4j train: [train] steps = 99999999999 is out of range (at most 2147483647)", r.err().lines().findFirst().orElseThrow());
        r = train("--seed", "99999999999999999999", "--run-dir", tmp.resolve("m").toString());
        assertTrue(r.err().startsWith("ane4j train: [train] seed = 99999999999999999999 is out of range"), r.err());
    }

    /** Row 19: a read-only run folder says it cannot be written, with the reason (not "cannot read metrics.jsonl"). */
    @Test
    void readOnlyRunFolderSaysSo() throws Exception {
        Path run = trained("ro");
        boolean immutable = ReadOnly.make(run);
        try {
            assumeTrue(!Files.isWritable(run) || immutable, "cannot make a folder read-only here");
            Run r = train("--steps", "30", "--run-dir", run.toString(), "--backend", "ref", "--resume", "--in-process");
            assertEquals(1, r.code(), r.all());
            String line = r.err().strip();
            assertEquals(1, line.lines().count(), line);
            assertFalse(line.contains("cannot read"), line);
            assertTrue(line.matches("ane4j train: \\[(run|metrics)] cannot .*" + java.util.regex.Pattern.quote(run.toString()) + ".*: (permission denied|Operation not permitted).*"), line);
        } finally {
            ReadOnly.undo(run, immutable);
        }
    }

    /** Makes a folder read-only: chmod, and for root (whom chmod does not stop) chattr +i. */
    static final class ReadOnly {
        static boolean make(Path dir) throws Exception {
            Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("r-xr-xr-x"));
            if (Files.isWritable(dir)) {
                try {
                    Process p = new ProcessBuilder("chattr", "+i", dir.toString()).redirectErrorStream(true).start();
                    p.getInputStream().readAllBytes();
                    return p.waitFor() == 0;
                } catch (java.io.IOException noChattr) {
                    return false; // no chattr on this machine: the caller skips with a reason
                }
            }
            return false;
        }

        static void undo(Path dir, boolean immutable) throws Exception {
            if (immutable) new ProcessBuilder("chattr", "-i", dir.toString()).start().waitFor();
            Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }
}
