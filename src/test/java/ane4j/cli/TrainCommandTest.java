package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TrainCommandTest {
    @TempDir Path dir;

    private record Run(int code, String out, String err) {}

    private static Run run(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void trainsWritesThePlotAndASample() {
        Run r = run("train", "--steps", "12", "--run-dir", dir.toString(), "--backend", "ref");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("step 12/12"), r.out());
        assertTrue(r.out().matches("(?s).*loss \\d+\\.\\d+ → \\d+\\.\\d+ .*"), r.out());
        assertTrue(r.out().contains("sample: Once upon a time"), r.out());
        assertTrue(Files.exists(dir.resolve("loss.png")));
        assertTrue(Files.exists(dir.resolve("metrics.jsonl")));
    }

    @Test
    void badInputIsOneLineWithExitCode1() {
        Run r = run("train", "--model", "nosuch", "--run-dir", dir.toString());
        assertEquals(1, r.code());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertTrue(r.err().startsWith("ane4j train: [config] unknown model 'nosuch'"), r.err());
        r = run("train", "--init", dir.resolve("missing.bin").toString(), "--run-dir", dir.toString());
        assertEquals(1, r.code());
        assertTrue(r.err().contains("missing.bin: no such file"), r.err());
        r = run("train", "--compile-budget", "abc", "--run-dir", dir.toString());
        assertEquals(1, r.code());
        assertTrue(r.err().startsWith("ane4j train: [train] compileBudget = 'abc' is not a whole number ≥ 1"), r.err());
        r = run("train", "--heap", "1q", "--run-dir", dir.toString());
        assertEquals(1, r.code());
        assertTrue(r.err().startsWith("ane4j train: [train] heap = '1q' is not a JVM heap size"), r.err());
    }

    private static double[] losses(Path runDir) {
        return ane4j.train.MetricsLog.read(runDir.resolve("metrics.jsonl"), Long.MAX_VALUE, w -> {}).stream().mapToDouble(m -> m.loss()).toArray();
    }

    @Test
    void fromRecordRerunsTheRecordedRunWithTheFlagsOverIt() throws Exception {
        Run a = run("train", "--steps", "3", "--seed", "5", "--lr", "1e-3", "--eval-every", "0", "--in-process", "--backend", "ref", "--run-dir", dir.resolve("a").toString());
        assertEquals(0, a.code(), a.err());
        Path record = dir.resolve("a/run.json");
        assertTrue(Files.readString(record).contains("\"options\""), Files.readString(record));
        Run b = run("train", "--from-record", record.toString(), "--in-process", "--run-dir", dir.resolve("b").toString());
        assertEquals(0, b.code(), b.err());
        org.junit.jupiter.api.Assertions.assertArrayEquals(losses(dir.resolve("a")), losses(dir.resolve("b")), 0.0, "the same run again");
        Run c = run("train", "--from-record", record.toString(), "--seed", "6", "--in-process", "--run-dir", dir.resolve("c").toString());
        assertEquals(0, c.code(), c.err());
        assertTrue(Files.readString(dir.resolve("c/run.txt")).contains("seed = 6"), "the flag is over the record");
        Run bad = run("train", "--from-record", dir.resolve("nothing.json").toString());
        assertEquals(1, bad.code());
        assertTrue(bad.err().startsWith("ane4j train: [run] cannot read ") && bad.err().strip().lines().count() == 1, bad.err());
    }

    @Test
    void helpListsEveryKeyOfTheTable() {
        Run r = run("train", "--help");
        assertEquals(0, r.code(), r.err());
        for (var k : ane4j.session.RunSpec.KEYS.keys()) assertTrue(r.out().contains(k.flag()), k.flag() + " in\n" + r.out());
        Run unknown = run("train", "--stepz", "3");
        assertEquals(1, unknown.code());
        assertTrue(unknown.err().startsWith("ane4j train: [train] unknown option '--stepz' (options: model, init, "), unknown.err());
        Run camel = run("train", "--weightDecay=0", "--steps", "0");
        assertTrue(camel.err().startsWith("ane4j train: [train] steps must be at least 1, got 0"), "camelCase and --key=value are read: " + camel.err());
    }
}
