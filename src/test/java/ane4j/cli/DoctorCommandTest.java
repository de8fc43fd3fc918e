package ane4j.cli;

import ane4j.golden.Json;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/** {@code ane4j doctor} where the ANE is not available: the reference-backend half, its table and its JSON report. */
class DoctorCommandTest {
    @TempDir Path tmp;

    static final List<String> PROBES = List.of("conv", "dynamic-matmul", "attention-mask", "train/sdpaFwd", "train/woFwd",
            "train/ffnFused", "train/ffnBwdW2t", "train/ffnBwdW13t", "train/wotBwd", "train/sdpaBwd1", "train/sdpaBwd2",
            "train/qBwd", "train/kvBwd");

    record Run(int code, String out, String err) {}

    static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        int code = DoctorCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8),
                null, "not macOS (Linux)");
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    @SuppressWarnings("unchecked")
    void withoutTheAneItRunsEveryProbeOnTheReferenceBackendAndWritesTheReport() throws Exception {
        Path json = tmp.resolve("reports/doctor.json");
        Run r = run("--model", "tiny", "--json", json.toString());
        assertEquals(0, r.code(), r.out());
        List<String> lines = r.out().lines().toList();
        assertTrue(lines.contains("ane:     not available: not macOS (Linux)"), r.out());
        assertEquals(1, lines.stream().filter(l -> l.startsWith("The ANE is not available here (not macOS (Linux))")).count(), r.out());
        assertTrue(lines.contains("model:   tiny"), r.out());
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("jdk:") && l.contains(System.getProperty("java.runtime.version"))));
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("blas:") && !l.contains("unknown")), r.out());
        int table = lines.indexOf(DoctorCommand.header());
        assertTrue(table > 0, r.out());
        for (int i = 0; i < PROBES.size(); i++) {
            String row = lines.get(table + 1 + i);
            assertTrue(row.startsWith(PROBES.get(i) + " "), row);
            assertTrue(row.contains(" ref  ref-fp32 ") && row.endsWith("  ok"), row);
        }
        assertEquals("all 13 probes passed", lines.get(table + 1 + PROBES.size()));

        Map<String, Object> report = (Map<String, Object>) Json.parse(Files.readString(json));
        assertEquals(false, report.get("aneAvailable"));
        assertEquals("not macOS (Linux)", report.get("aneUnavailableReason"));
        assertEquals(true, report.get("passed"));
        Map<String, Object> host = (Map<String, Object>) report.get("host");
        assertEquals("tiny", host.get("model"));
        assertEquals("n/a", host.get("dialect"));
        List<Map<String, Object>> probes = (List<Map<String, Object>>) report.get("probes");
        assertEquals(PROBES, probes.stream().map(p -> p.get("probe")).toList());
        for (Map<String, Object> p : probes) {
            assertEquals("ref", p.get("backend"));
            assertEquals(true, p.get("passed"));
            assertTrue(((Number) p.get("evalMs")).doubleValue() > 0, p.toString());
            assertTrue(((Number) p.get("compileMs")).doubleValue() > 0, p.toString());
            double maxAbs = ((Number) p.get("maxAbsErr")).doubleValue(), maxRef = ((Number) p.get("maxAbsRef")).doubleValue();
            assertTrue(maxRef > 0, p + ": the probe produced something");
            assertTrue(maxAbs <= 0.02 + 0.02 * maxRef, p.toString());
        }
        // attention in fp16 storage rounds its intermediates: the comparison is not vacuous
        assertTrue(((Number) probes.get(2).get("maxAbsErr")).doubleValue() > 0, probes.get(2).toString());
    }

    @Test
    void badOptionsAreOneLineErrors() {
        var e = assertThrows(CliException.class, () -> run("--model", "gpt5"));
        assertTrue(e.getMessage().startsWith("[config] unknown model 'gpt5'"), e.getMessage());
        var u = assertThrows(CliException.class, () -> run("--frobnicate"));
        assertEquals("unknown option '--frobnicate'; " + DoctorCommand.USAGE, u.getMessage());
        assertThrows(CliException.class, () -> run("--json"));
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(1, Main.run(new String[] {"doctor", "--frobnicate"}, new PrintStream(new ByteArrayOutputStream()), new PrintStream(err)));
        assertEquals("ane4j doctor: unknown option '--frobnicate'; " + DoctorCommand.USAGE, err.toString().strip());
    }
}
