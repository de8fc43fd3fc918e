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

    static final List<String> RUNGS = List.of("conv", "dynamic-matmul", "attention-mask", "a2-conv-chain", "train/sdpaFwd", "train/woFwd",
            "train/ffnFused", "train/ffnBwdW2t", "train/ffnBwdW13t", "train/wotBwd", "train/sdpaBwd1", "train/sdpaBwd2",
            "train/qBwd", "train/kvBwd");
    static final List<String> PROBES = List.of("conv-reload", "weights-2-files", "weights-packed-2", "row-32B", "a2-fp32-cast", "a2-packed-blob", "int8-blob-code4", "int8-blob-code1",
            "matmul-k32", "matmul-k16", "slice-clamp-4094", "matmul-saturation", "width-16384", "width-32768", "multi-input-equal",
            "multi-input-ascending", "multi-input-descending", "multi-output-descending", "multi-output-ascending", "small-surface");

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
        int table = lines.indexOf(DoctorReport.header());
        assertTrue(table > 0, r.out());
        List<String> ladder = Probes.ladder(ane4j.model.ModelConfig.parse("tiny")).stream().map(Probes.Probe::name).toList();
        assertEquals(RUNGS.size() + PROBES.size(), ladder.size());
        for (int i = 0; i < ladder.size(); i++) {
            String row = lines.get(table + 1 + i), name = ladder.get(i);
            assertTrue(row.startsWith(name + " "), row);
            assertTrue(row.contains((RUNGS.contains(name) ? " rung " : " probe") + " ref  ref-fp32 ") && row.endsWith("  ok"), row);
        }
        assertEquals("all 14 rungs passed; 20 probes observed", lines.get(table + 1 + ladder.size()));
        int assumptions = lines.indexOf("assumptions (audit F1–F14; what the first Mac run confirms):");
        int verdict = lines.indexOf("verdict (paste into a bug report):");
        assertTrue(assumptions > table && verdict > assumptions, r.out());
        List<String> assumed = lines.subList(assumptions + 1, verdict - 1).stream().map(String::strip).toList();
        assertEquals(17, assumed.size(), assumed.toString());
        for (String l : assumed) assertTrue(l.contains("needs the ANE (not available: not macOS (Linux))"), l);
        assertTrue(assumed.contains("F4  width-offset slice clamps |v| > 4094 (M1–M3): the reference: no: values 4100–6000 read at width offset 64 "
                + "kept (max rel err 0.00e+00) [slice-clamp-4094]; on the reference only, needs the ANE (not available: not macOS (Linux))"), assumed.toString());
        assertTrue(assumed.contains("F5–F8 chip rules (ane4j.chip) vs what compiled: no chip family known (--chip m1..m5 checks the ladder against one); "
                + "on the reference only, needs the ANE (not available: not macOS (Linux))"), assumed.toString());

        Map<String, Object> report = (Map<String, Object>) Json.parse(Files.readString(json));
        assertEquals(false, report.get("aneAvailable"));
        assertEquals("not macOS (Linux)", report.get("aneUnavailableReason"));
        assertEquals(true, report.get("passed"));
        assertNull(report.get("stopped"));
        assertEquals(assumed, report.get("assumptions"));
        List<String> v = (List<String>) report.get("verdict");
        assertEquals(v, lines.subList(verdict + 1, verdict + 1 + v.size()).stream().map(String::strip).toList());
        assertTrue(v.get(0).startsWith("ane4j doctor: chip n/a, " + System.getProperty("os.name")), v.toString());
        assertEquals("ANE not available (not macOS (Linux)): only the reference half ran", v.get(1));
        assertEquals("passed 14 of 14 rungs (conv, dynamic-matmul, attention-mask … train/kvBwd)", v.get(2));
        assertEquals("no rung failed", v.get(3));
        Map<String, Object> host = (Map<String, Object>) report.get("host");
        assertEquals("tiny", host.get("model"));
        assertEquals("n/a", host.get("dialect"));
        List<Map<String, Object>> probes = (List<Map<String, Object>>) report.get("probes");
        assertEquals(ladder, probes.stream().map(p -> p.get("probe")).toList());
        for (Map<String, Object> p : probes) {
            assertEquals("ref", p.get("backend"));
            assertEquals("ok", p.get("status"));
            assertEquals(RUNGS.contains(p.get("probe")) ? "rung" : "probe", p.get("kind"));
            assertEquals(true, p.get("passed"));
            assertNull(p.get("identifier"));
            assertTrue(((Number) p.get("evalMs")).doubleValue() > 0, p.toString());
            assertTrue(((Number) p.get("compileMs")).doubleValue() > 0, p.toString());
            double maxAbs = ((Number) p.get("maxAbsErr")).doubleValue(), maxRef = ((Number) p.get("maxAbsRef")).doubleValue();
            assertTrue(maxRef > 0, p + ": the probe produced something");
            assertTrue(maxAbs <= 0.02 + 0.02 * maxRef, p.toString());
            assertEquals(maxAbs / maxRef, ((Number) p.get("maxRelErr")).doubleValue(), 1e-12, p.toString());
        }
        // attention in fp16 storage rounds its intermediates: the comparison is not vacuous
        assertTrue(((Number) probes.get(ladder.indexOf("attention-mask")).get("maxAbsErr")).doubleValue() > 0);
        // the probes' special inputs: the width-offset slice sees |v| > 4094, the saturation matmul outputs 40000
        Map<String, Object> clamp = probes.get(ladder.indexOf("slice-clamp-4094")), sat = probes.get(ladder.indexOf("matmul-saturation"));
        assertTrue(((Number) clamp.get("maxAbsRef")).doubleValue() > 4094, clamp.toString());
        assertEquals(40000.0, ((Number) sat.get("maxAbsRef")).doubleValue(), sat.toString());
    }

    @Test
    @SuppressWarnings("unchecked")
    void withAChipTheReferenceHalfEmulatesItsRulesAndCliffs() throws Exception {
        Path json = tmp.resolve("m1.json");
        Run r = run("--chip", "m1", "--json", json.toString());
        assertEquals(0, r.code(), r.out());   // the rungs meet M1's rules; the probes that break them are observations
        assertTrue(r.out().contains("rules:   M1 (the reference backend emulates it)\n"), r.out());
        assertTrue(r.out().contains("running the reference-backend half of the probes, emulating M1.\n"), r.out());
        Map<String, Object> report = (Map<String, Object>) Json.parse(Files.readString(json));
        assertEquals("M1", report.get("chip"));
        Map<String, Map<String, Object>> byName = new java.util.HashMap<>();
        for (Map<String, Object> p : (List<Map<String, Object>>) report.get("probes")) byName.put((String) p.get("probe"), p);
        // the rules name what M1 refuses (maderix PR #6, benchmark report, #47; ANEForge caps), and the emulation refuses it
        for (String refused : List.of("a2-fp32-cast", "a2-packed-blob", "matmul-k16", "width-32768")) {
            Map<String, Object> p = byName.get(refused);
            assertEquals(true, p.get("ruleError"), p.toString());
            assertEquals("failed", p.get("status"), p.toString());
            assertTrue(((String) p.get("error")).startsWith("[ane] main breaks chip rule "), p.toString());
        }
        assertTrue(((List<String>) byName.get("width-32768").get("violations")).contains("error [axis-cap] reshape_1 tensor<fp16, [1, 1, 1, 32768]>: axis 3 is 32768"),
                byName.get("width-32768").toString());
        for (String rung : RUNGS) assertEquals(false, byName.get(rung).get("ruleError"), rung);
        // and applies the fp16 cliffs: the 4094 clamp and the saturation above 32752 give ±inf
        for (String cliff : List.of("slice-clamp-4094", "matmul-saturation")) {
            Map<String, Object> p = byName.get(cliff);
            assertEquals("differs", p.get("status"), p.toString());
            assertTrue(((Number) p.get("nonFinite")).intValue() > 0, p.toString());
        }
        List<String> assumed = (List<String>) report.get("assumptions");
        assertTrue(assumed.stream().anyMatch(l -> l.startsWith("F4  width-offset slice clamps |v| > 4094 (M1–M3): the reference emulating M1: ")
                && l.contains(" outputs became ±inf/NaN [slice-clamp-4094]")), assumed.toString());
        assertTrue(assumed.stream().anyMatch(l -> l.startsWith("F5–F8 chip rules (ane4j.chip) vs what compiled: M1: 5 of 34 programs break an error rule "
                + "(weights-packed-2, a2-fp32-cast, a2-packed-blob … width-32768); the reference emulating M1 refused 5")), assumed.toString());
        assertTrue(((List<String>) report.get("verdict")).get(0).startsWith("ane4j doctor: chip n/a (rules and cliffs of M1 emulated), "));
    }

    @Test
    void badOptionsAreOneLineErrors() {
        var e = assertThrows(CliException.class, () -> run("--model", "gpt5"));
        assertTrue(e.getMessage().startsWith("[config] unknown model 'gpt5'"), e.getMessage());
        var u = assertThrows(CliException.class, () -> run("--frobnicate"));
        assertEquals("[cli] unknown option --frobnicate; options: --model, --json, --chip, --worker (ane4j doctor --help)", u.getMessage());
        assertEquals("[cli] --json has no value; give --json FILE (or --json=FILE)", assertThrows(CliException.class, () -> run("--json")).getMessage());
        assertThrows(CliException.class, () -> run("--json"));
        var c = assertThrows(CliException.class, () -> run("--chip", "m9"));
        assertTrue(c.getMessage().startsWith("[chip] unknown chip 'm9'; use m1, m2, m3, m4 or m5"), c.getMessage());
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(1, Main.run(new String[] {"doctor", "--frobnicate"}, new PrintStream(new ByteArrayOutputStream()), new PrintStream(err)));
        assertEquals("ane4j doctor: [cli] unknown option --frobnicate; options: --model, --json, --chip, --worker (ane4j doctor --help)", err.toString().strip());
    }

    /** --worker ref: the conv rung once more inside a supervised worker JVM (macOS 27's background restriction, C10), in the verdict and the JSON. */
    @Test
    void theConvRungRunsOnceMoreInsideASupervisedWorker() throws Exception {
        Path json = tmp.resolve("worker.json");
        Run r = run("--model", "tiny", "--worker", "ref", "--json", json.toString());
        assertEquals(0, r.code(), r.out());
        String line = r.out().lines().filter(l -> l.startsWith("  worker: ")).findFirst().orElseThrow(() -> new AssertionError(r.out()));
        assertTrue(line.matches("  worker: conv ok in a supervised worker \\(pid \\d+, backend ref\\): compile .*"), line);
        assertTrue(Files.readString(json).contains("\"worker\": \"conv ok in a supervised worker (pid "), Files.readString(json));
        assertTrue(r.out().lines().anyMatch(l -> l.startsWith("context: ") && l.contains("; parent ")), r.out());
        // the default with a backend handed in (as here): no worker, said so
        assertTrue(run("--model", "tiny").out().contains("  worker: not run (a backend handed in by the caller; --worker ane|ref runs it)"));
    }

    /** M1 on macOS 27: programs with 2 or more weight files are refused before compiling, said once before the ladder. */
    @Test
    void onM1UnderMacos27TheRefusalIsSaidBeforeTheLadder() {
        System.setProperty(ane4j.backend.MacOs.PROPERTY, "27.0");
        try {
            Run r = run("--model", "tiny", "--chip", "m1", "--worker", "off");
            String line = r.out().lines().filter(l -> l.startsWith("refused:")).findFirst().orElseThrow(() -> new AssertionError(r.out()));
            assertTrue(line.contains("M1 on macOS 27.0: no weight layout is known to work for a program with 2 or more weight files"), line);
            assertTrue(line.contains("a2-conv-chain (4 files)") && line.contains("; the training kernels carry none"), line);
            assertTrue(r.out().indexOf(line) < r.out().indexOf(DoctorReport.header()), "before the ladder");
            assertTrue(r.out().contains("  refused before compiling: M1 on macOS 27.0"), "in the verdict");
            System.setProperty(ane4j.backend.MacOs.PROPERTY, "26.4");
            assertTrue(run("--model", "tiny", "--chip", "m1", "--worker", "off").out().lines().noneMatch(l -> l.startsWith("refused:")), "26: several files compile");
        } finally {
            System.clearProperty(ane4j.backend.MacOs.PROPERTY);
        }
    }
}
