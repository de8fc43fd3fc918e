package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ane4j.model.Json;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code bench step --compare-torch} reports PyTorch's peak memory next to ane4j's, against the same 16 bytes per parameter. */
class StepBenchMemoryTest {
    @TempDir Path dir;

    @SuppressWarnings("unchecked")
    private Map<String, Object> stepWithTorch(String... torch) throws IOException {
        Path json = dir.resolve("step.json");
        String[] base = {"bench", "step", "--quick", "--steps", "1", "--warmup", "0", "--backend", "ref", "--json", json.toString(), "--compare-torch"};
        String[] args = java.util.stream.Stream.concat(java.util.Arrays.stream(base), java.util.Arrays.stream(torch)).toArray(String[]::new);
        var r = BenchCommandTest.run(args);
        assumeTrue(r.code() == 0 || !r.err().contains("failed"), "no PyTorch for /usr/bin/python3: " + r.err());
        assertEquals(0, r.code(), r.err() + r.out());
        assertTrue(r.out().contains("PyTorch's process"), r.out());
        return (Map<String, Object>) Json.parse(Files.readString(json));
    }

    private static double num(Map<String, Object> s, String key) { return ((Number) s.get(key)).doubleValue(); }

    @Test
    void torchsPeakRssIsReportedWithItsRatio() throws IOException {
        var s = BenchCommandTest.summary(stepWithTorch("--torch-threads", "1"));
        double torchRss = num(s, "torchPeakRssMB");
        assertTrue(torchRss > 50, "a Python process with torch loaded holds more than 50 MB: " + torchRss);
        assertEquals(torchRss / num(s, "weightsGradsMomentsMB"), num(s, "torchMemoryRatio"), 1e-3 * num(s, "torchMemoryRatio"));   // the JSON keeps 3 decimals
        assertTrue(num(s, "peakRssMB") > 0);
    }

    @Test
    void anOlderScriptWithoutPeakMemoryStillReportsTheStep() throws IOException {
        Path script = Files.writeString(dir.resolve("old_torch_step.py"),
                "import json\nprint(json.dumps({'ms_per_step_median': 12.5, 'threads': 1, 'torch': 'x', 'loadavg': [0, 0]}))\n");
        Path json = dir.resolve("step.json");
        var r = BenchCommandTest.run("bench", "step", "--quick", "--steps", "1", "--warmup", "0", "--backend", "ref", "--json", json.toString(),
                "--compare-torch", "--torch-script", script.toString());
        assertEquals(0, r.code(), r.err() + r.out());
        @SuppressWarnings("unchecked") var s = BenchCommandTest.summary((Map<String, Object>) Json.parse(Files.readString(json)));
        assertEquals(12.5, num(s, "torchMsPerStep"));
        assertTrue(!s.containsKey("torchPeakRssMB") && !r.out().contains("PyTorch's process"), r.out());
    }
}
