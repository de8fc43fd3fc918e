package ane4j.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.train.Checkpoint;
import ane4j.train.Trainer;
import ane4j.model.Json;
import ane4j.model.TokenShard;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** run.json (the shape docs/DESIGN.md §5 fixes: options, command, git, machine, data, seed) and the corrected run.txt. */
class RunRecordTest {
    @TempDir Path dir;

    private static TrainOptions options(Path runDir, String... kv) {
        var m = new LinkedHashMap<String, String>(Map.of("steps", "2", "runDir", runDir.toString(), "evalEvery", "0"));
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return TrainOptions.of(m);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> runJson(Path runDir) throws Exception {
        return (Map<String, Object>) Json.parse(Files.readString(runDir.resolve("run.json")));
    }

    private static String settingOf(Path runDir, String key) throws Exception {
        for (String line : Files.readAllLines(runDir.resolve("run.txt"))) if (line.startsWith(key + " = ")) return line.substring(key.length() + 3);
        throw new AssertionError("no " + key + " in run.txt");
    }

    /**
     * A fresh run given --resume records resume = false (it did not resume) and the loss scale it starts at (256, not
     * the 0 that means "default"); the resumed start records resume = true. run.json's options read back to the run.
     */
    @Test
    @SuppressWarnings("unchecked")
    void recordsWhatTheRunDidAndReadsBack() throws Exception {
        Path run = dir.resolve("run");
        String old = System.getProperty(RunJson.COMMAND_PROPERTY);
        System.setProperty(RunJson.COMMAND_PROPERTY, "ane4j train --steps 2 --resume");
        try (Trainer t = new Trainer(options(run, "resume", "true"), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            t.run(null, 0);
        } finally {
            if (old == null) System.clearProperty(RunJson.COMMAND_PROPERTY);
            else System.setProperty(RunJson.COMMAND_PROPERTY, old);
        }
        assertEquals("false", settingOf(run, "resume"));
        assertEquals("256.0", settingOf(run, "lossScale"));
        Map<String, Object> root = runJson(run);
        var opts = (Map<String, String>) root.get("options");
        assertEquals(TrainOptions.DEFAULTS.keySet(), opts.keySet(), "every run key, canonical names");
        assertEquals("false", opts.get("resume"));
        assertEquals("256.0", opts.get("lossScale"));
        TrainOptions again = TrainOptions.of(opts);
        assertEquals(options(run, "lossScale", "256"), again, "options read back to the run (with its effective loss scale)");
        assertEquals("42", root.get("seed"));
        var command = (Map<String, Object>) root.get("command");
        assertEquals("ane4j train --steps 2 --resume", command.get("line"));
        assertEquals(Path.of("").toAbsolutePath().toString(), command.get("workingDir"));
        var machine = (Map<String, Object>) root.get("machine");
        for (String k : List.of("ane4j", "jdk", "os", "cpu", "blas", "backend", "chip")) assertInstanceOf(String.class, machine.get(k), k + " in " + machine);
        assertEquals(Version.ane4j(), machine.get("ane4j"));
        assertEquals("ref", machine.get("backend"));
        assertTrue(((String) machine.get("chip")).startsWith("none (reference backend"), (String) machine.get("chip"));
        assertTrue(((String) machine.get("jdk")).contains(System.getProperty("java.runtime.version")), (String) machine.get("jdk"));
        var data = (Map<String, Map<String, Object>>) root.get("data");
        assertEquals(800_000L, data.get("data").get("bytes"), "the embedded corpus's 400000 training tokens as uint16");
        assertTrue(((String) data.get("data").get("sha256")).matches("[0-9a-f]{64}"));
        assertEquals("64", ((Map<String, String>) root.get("model")).get("seqLen"));

        // the tests run in the ane4j checkout: its commit and dirty flag, as git itself reports them
        var git = (Map<String, Object>) root.get("git");
        assertNotNull(git, "a git checkout");
        Process p = new ProcessBuilder("git", "rev-parse", "HEAD").start();
        assertEquals(new String(p.getInputStream().readAllBytes()).strip(), git.get("commit"));
        assertInstanceOf(Boolean.class, git.get("dirty"));

        try (Trainer t = new Trainer(options(run, "resume", "true", "steps", "3"), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            assertEquals(2, t.nextStep());
        }
        assertEquals("true", settingOf(run, "resume"));
        assertEquals("true", ((Map<String, String>) runJson(run).get("options")).get("resume"));
    }

    /** Data files are recorded with their SHA-256 (checked with the JDK's digest of the bytes), the held-out file too. */
    @Test
    @SuppressWarnings("unchecked")
    void dataFilesCarryTheirSha256() throws Exception {
        ane4j.model.ModelConfig c = ane4j.model.ModelConfig.llama("mini", 48, 96, 2, 4, 100, 16);
        Path bin = dir.resolve("mini.bin"), shard = dir.resolve("tokens.bin"), val = dir.resolve("val.bin");
        ane4j.model.Llama2Bin.write(bin, ane4j.model.Parameters.init(c, 3));
        int[] tokens = new int[200];
        for (int i = 0; i < tokens.length; i++) tokens[i] = (i * 37 + 11) % 100;
        TokenShard.write(shard, tokens);
        TokenShard.write(val, java.util.Arrays.copyOf(tokens, 50));
        Path run = dir.resolve("files");
        try (Trainer t = new Trainer(options(run, "init", bin.toString(), "data", shard.toString(), "valData", val.toString()), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            t.run(null, 0);
        }
        var data = (Map<String, Map<String, Object>>) runJson(run).get("data");
        for (var e : Map.of("init", bin, "data", shard, "valData", val).entrySet()) {
            String want = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(e.getValue())));
            assertEquals(want, data.get(e.getKey()).get("sha256"), e.getKey());
            assertEquals(e.getValue().toString(), data.get(e.getKey()).get("path"));
        }
    }

    /** A record written before the effective loss scale (lossScale = 0.0) resumes without a settings change. */
    @Test
    void oldRecordsWithLossScaleZeroStillResume() throws Exception {
        Path run = dir.resolve("old");
        try (Trainer t = new Trainer(options(run), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            t.run(null, 0);
        }
        Path txt = run.resolve("run.txt");
        Files.writeString(txt, Files.readString(txt).replace("lossScale = 256.0", "lossScale = 0.0"));
        try (Trainer t = new Trainer(options(run, "resume", "true", "steps", "3"), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            assertEquals(2, t.nextStep());
        }
    }

    /** Files ane4j writes get the mode the user's umask gives any new file (not always 0600). */
    @Test
    void writtenFilesFollowTheUmask() throws Exception {
        Path probe = Files.createFile(dir.resolve("probe"));   // what the umask gives a new file here
        String expected = PosixFilePermissions.toString(Files.getPosixFilePermissions(probe));
        Path shard = dir.resolve("t.bin"), bin = dir.resolve("m.bin");
        TokenShard.write(shard, new int[] {1, 2, 3});
        ane4j.model.Llama2Bin.write(bin, ane4j.model.Parameters.init(ane4j.model.ModelConfig.llama("mini", 48, 96, 2, 4, 100, 16), 3));
        Path run = dir.resolve("modes");
        try (Trainer t = new Trainer(options(run), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            t.run(null, 0);
        }
        for (Path f : List.of(shard, bin, run.resolve("run.txt"), run.resolve("run.json"), run.resolve("metrics.jsonl"), Checkpoint.list(run.resolve("checkpoints")).getFirst()))
            assertEquals(expected, PosixFilePermissions.toString(Files.getPosixFilePermissions(f)), f.toString());
        try (var s = Files.list(dir)) {
            assertEquals(List.of(), s.filter(f -> f.toString().endsWith(".tmp")).toList(), "no temp file left");
        }
    }
}
