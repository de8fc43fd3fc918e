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
}
