package ane4j.cli;

import ane4j.model.Json;
import static org.junit.jupiter.api.Assertions.*;

import ane4j.bench.StepBench;
import ane4j.model.ModelConfig;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ane4j bench …} in quick mode: exit code, terminal table, JSON structure and PNG (not the speed). */
class BenchCommandTest {
    record Result(int code, String out, String err) {}

    @TempDir Path dir;

    static Result run(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** Runs a quick bench into dir/NAME.json; checks exit code, the files and the common JSON fields; returns the JSON. */
    @SuppressWarnings("unchecked")
    Map<String, Object> bench(String name, String... extra) throws IOException {
        Path json = dir.resolve(name + ".json");
        List<String> args = new java.util.ArrayList<>(List.of("bench", name, "--quick", "--json", json.toString()));
        args.addAll(List.of(extra));
        args.addAll(List.of("--backend", "ref"));
        Result r = run(args.toArray(String[]::new));
        assertEquals(0, r.code(), r.err() + r.out());
        assertTrue(r.out().contains("wrote " + json), r.out());
        Map<String, Object> m = (Map<String, Object>) Json.parse(Files.readString(json));
        assertEquals(name, m.get("bench"));
        Map<String, Object> machine = (Map<String, Object>) m.get("machine");
        for (String k : List.of("cpu", "cores", "os", "jdk", "blas")) assertNotNull(machine.get(k), k);
        assertEquals("ref", m.get("backend"));
        assertTrue(((String) m.get("command")).startsWith("ane4j bench " + name + " --quick"), (String) m.get("command"));
        assertFalse(((List<?>) m.get("rows")).isEmpty());
        Path png = dir.resolve(name + ".png");
        assertEquals(png.toString(), m.get("png"));
        byte[] head = Arrays.copyOf(Files.readAllBytes(png), 4);
        assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G'}, head);
        // every column of the table header is printed
        for (Object col : (List<?>) m.get("columns")) assertTrue(r.out().contains((String) col), col + " missing from\n" + r.out());
        return m;
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> rows(Map<String, Object> m) { return (List<Map<String, Object>>) m.get("rows"); }

    static double num(Map<String, Object> row, String key) { return ((Number) row.get(key)).doubleValue(); }

    @SuppressWarnings("unchecked")
    static Map<String, Object> summary(Map<String, Object> m) { return (Map<String, Object>) m.get("summary"); }

    @Test
    void peakReportsTopsConsistentWithFlops() throws IOException {
        var m = bench("peak", "--configs", "32x4,64x2", "--wide", "16x2");
        var rows = rows(m);
        assertEquals(3, rows.size());
        for (var row : rows) {
            double c = num(row, "channels"), n = num(row, "layers"), ms = num(row, "ms");
            double s = row.get("spatial").equals("64x64") ? 4096 : Double.parseDouble((String) row.get("spatial"));
            assertTrue(ms > 0);
            assertEquals(2 * c * c * s * n / (ms * 1e-3) / 1e12, num(row, "TOPS"), 1e-3 * num(row, "TOPS") + 1e-9);
            assertEquals(num(row, "TOPS") * 1e3, num(row, "GFLOPS"), 1e-3 * num(row, "GFLOPS"));
            assertTrue(num(row, "evals") >= 3);
        }
        assertEquals("64x64", rows.get(2).get("spatial"));
        assertEquals("fp16", m.get("io"));
    }

    @Test
    void peakWithMaderixCastsAndTheInt8BlobCodeOptions() throws IOException {
        assertEquals("fp32 with cast", bench("peak", "--configs", "32x2", "--wide", "16x1", "--io", "fp32").get("io"));
        assertEquals(4.0, ((Number) bench("int8", "--configs", "32x2", "--spatial", "8x8", "--blob-code", "4").get("int8BlobCode")).doubleValue());
        Result r = run("bench", "int8", "--quick", "--no-save", "--blob-code", "1", "--backend", "ref");
        assertEquals(1, r.code());
        assertTrue(r.err().startsWith("ane4j bench: [bench] --blob-code 1 is for the ANE only"), r.err());
        r = run("bench", "peak", "--quick", "--no-save", "--io", "bf16", "--backend", "ref");
        assertTrue(r.err().startsWith("ane4j bench: [bench] --io bf16: use fp16"), r.err());
    }

    /** bench generate: per model the CPU path and the backend with either decode, side by side, tokens compared with the CPU's. */
    @Test
    void generateReportsPrefillAndDecodePerPathAgainstTheCpu() throws IOException {
        var m = bench("generate", "--models", "tiny", "--prompt-tokens", "12", "--tokens", "4");
        var rows = rows(m);
        assertEquals(List.of("cpu", "ref, decode cpu", "ref, decode backend"), rows.stream().map(r -> r.get("path")).toList());
        for (var row : rows) {
            assertEquals("tiny", row.get("model"));
            assertEquals(12.0, num(row, "prompt"));
            assertTrue(num(row, "prefill tok/s") > 0 && num(row, "decode tok/s") > 0, row.toString());
            assertEquals(12 / (num(row, "prefill ms") / 1e3), num(row, "prefill tok/s"), 1e-6 * num(row, "prefill tok/s"));
        }
        assertEquals(32.0, num(rows.get(1), "bucket"));
        assertEquals(2.0, num(rows.get(1), "kernels"), "prefill attention and FFN");
        assertEquals(4.0, num(rows.get(2), "kernels"), "and the decode pair, from the same cache");
        assertTrue(summary(m).containsKey("tiny ref, decode backend decode tok/s"), summary(m).toString());
        Result r = run("bench", "generate", "--quick", "--no-save", "--decode", "gpu", "--backend", "ref");
        assertTrue(r.err().startsWith("ane4j bench: [bench] --decode gpu: use both, cpu or backend"), r.err());
    }

    @Test
    void int8ReportsBothChainsAndTheirRatio() throws IOException {
        var m = bench("int8", "--configs", "32x3", "--spatial", "8x8");
        var row = rows(m).getFirst();
        assertEquals(num(row, "fp16 ms") / num(row, "int8 ms"), num(row, "int8/fp16 speed"), 1e-5 * num(row, "int8/fp16 speed"));
        assertTrue(num(row, "fp16 TOPS") > 0 && num(row, "int8 TOPS") > 0);
        assertEquals(num(row, "int8/fp16 speed"), ((Number) summary(m).get("ratio (first config)")).doubleValue(), 1e-9);
    }

    @Test
    void generatedStepWithTheLossOnTheCpuOrInMilReachesTheSameLoss() throws IOException {
        var cpu = summary(bench("step", "--steps", "2", "--warmup", "0", "--kernels", "generated"));
        var mil = summary(bench("step", "--steps", "2", "--warmup", "0", "--kernels", "generated", "--loss-head", "mil"));
        // fp16 storage: the same first loss and the same loss after one update, fp16 rounding apart
        for (String k : List.of("firstLoss", "lastLoss"))
            assertEquals(((Number) mil.get(k)).doubleValue(), ((Number) cpu.get(k)).doubleValue(), 5e-3, k);
        // the loss's ops are gone from the programs
        assertTrue(((Number) cpu.get("forwardOps")).intValue() < ((Number) mil.get("forwardOps")).intValue());
        Result r = run("bench", "step", "--quick", "--no-save", "--loss-head", "cpu");
        assertEquals("ane4j bench: [bench] --loss-head chooses where the generated step's loss runs: give --kernels generated too\n", r.err());
    }

    @Test
    void stepReportsMedianPhasesFlopsAndMemory() throws IOException {
        var m = bench("step", "--steps", "2", "--warmup", "0");
        var s = summary(m);
        double ms = ((Number) s.get("msPerStep")).doubleValue();
        assertTrue(ms > 0);
        assertTrue(((String) s.get("median")).endsWith(" ms/step"));
        assertEquals(10.0, ((Number) s.get("compiles")).doubleValue());
        assertEquals(StepBench.flopsPerStep(ModelConfig.parse("tiny")) / 1e9, ((Number) s.get("gflopPerStep")).doubleValue(), 1e-5 * ((Number) s.get("gflopPerStep")).doubleValue());
        // the peak is the faster of the measurements before and after the steps, and the utilisation is against it
        double peak = ((Number) s.get("sgemmPeakGflops")).doubleValue(), before = ((Number) s.get("sgemmPeakGflopsBefore")).doubleValue(),
                after = ((Number) s.get("sgemmPeakGflopsAfter")).doubleValue();
        assertTrue(before > 0 && after > 0, before + ", " + after);
        assertEquals(Math.max(before, after), peak);
        assertEquals(((Number) s.get("achievedGflops")).doubleValue() / peak, ((Number) s.get("utilisation")).doubleValue(), 1e-9);
        long params = ((Number) m.get("parameters")).longValue();
        assertEquals(16.0 * params / 1e6, ((Number) s.get("weightsGradsMomentsMB")).doubleValue(), 1e-5 * 16.0 * params / 1e6);
        assertTrue(((Number) s.get("peakRssMB")).doubleValue() > 0);
        float lastLoss = ((Number) s.get("lastLoss")).floatValue();
        assertTrue(lastLoss > 0 && lastLoss < 1.5 * Math.log(ModelConfig.parse("tiny").vocabSize()), "two steps from init stay near ln V: " + lastLoss);
        var rows = rows(m);
        assertEquals("total (median step)", rows.getLast().get("phase"));
        assertEquals(ms, num(rows.getLast(), "ms"), 1e-9);
        for (String p : List.of("forward (backend)", "backward (backend)", "AdamW + clip", "stage weights"))
            assertTrue(rows.stream().anyMatch(r -> r.get("phase").equals(p) && num(r, "ms") > 0), p);
    }

    @Test
    void compileTimesEveryKernelAndHitsTheBudget() throws IOException {
        var m = bench("compile", "--budget", "3");
        assertEquals(List.of("sdpaFwd", "woFwd", "ffnFused", "ffnBwdW2t", "ffnBwdW13t", "wotBwd", "sdpaBwd1", "sdpaBwd2", "qBwd", "kvBwd"),
                rows(m).stream().map(r -> r.get("kernel")).toList());
        var s = summary(m);
        assertEquals(3.0, ((Number) s.get("compiles before refusal")).doubleValue());
        assertEquals(true, s.get("refused"));
        assertTrue(((List<?>) m.get("notes")).getFirst().toString().contains("exceeds the compile budget of 3"));
    }

    @Test
    void sgemmComparesWithNumpyAndTimesA4() throws IOException {
        var m = bench("sgemm", "--sizes", "64,128", "--java-max", "64", "--a4", "32x16x32");
        var rows = rows(m);
        assertEquals(List.of(64.0, 128.0), rows.stream().map(r -> num(r, "n")).toList());
        for (var r : rows) {
            assertTrue(num(r, "ane4j GFLOPS") > 0);
            if (r.get("numpy GFLOPS") != null) assertEquals(num(r, "ane4j GFLOPS") / num(r, "numpy GFLOPS"), num(r, "ane4j/numpy"), 1e-5 * num(r, "ane4j/numpy"));
            else assertTrue(m.get("notes").toString().contains("numpy not measured"));
        }
        assertNull(rows.get(1).get("java GFLOPS"), "the Java fallback is skipped above --java-max");
        @SuppressWarnings("unchecked") var a4 = (Map<String, Object>) summary(m).get("A4 32x16x32");
        // the ratio is the median pairwise ratio of the best of 3 rounds (all rounds listed, rounded to 3 decimals)
        double ratio = ((Number) a4.get("ratio")).doubleValue();
        @SuppressWarnings("unchecked") var rounds = (List<Number>) a4.get("roundRatios");
        assertEquals(3, rounds.size());
        assertEquals(rounds.stream().mapToDouble(Number::doubleValue).min().orElseThrow(), ratio, 1e-3 * ratio + 5e-4);
        assertTrue(ratio > 0 && ((Number) a4.get("kernelMs")).doubleValue() > 0 && ((Number) a4.get("sgemmMs")).doubleValue() > 0);
    }

    @Test
    void badInputIsOneLine() {
        Result r = run("bench", "warp");
        assertEquals(1, r.code());
        assertEquals("ane4j bench: unknown benchmark 'warp'; use one of peak, int8, step, compile, sgemm, soak, generate (ane4j bench --help)\n", r.err());
        r = run("bench", "step", "--quick", "--no-save", "--stepz", "3");
        assertEquals(1, r.code());
        assertTrue(r.err().startsWith("ane4j bench: [bench] unknown option --stepz for bench step; options: "), r.err());
        assertEquals(1, r.err().lines().count());
        r = run("bench", "peak", "--no-save", "--configs", "512by3");
        assertEquals(1, r.code());
        assertTrue(r.err().contains("--configs '512by3' is not AxB"), r.err());
        r = run("bench", "step", "--quick", "--no-save", "--steps", "1", "--warmup", "0", "--compare-torch", "--python", dir.resolve("no-python").toString());
        assertEquals(1, r.code());
        assertTrue(r.err().contains("[bench] cannot run") && r.err().contains("--python PATH"), r.err());
        if (!System.getProperty("os.name").startsWith("Mac")) {
            r = run("bench", "peak", "--quick", "--no-save", "--backend", "ane");
            assertEquals(1, r.code());
            assertTrue(r.err().startsWith("ane4j bench: [bench] --backend ane: the ANE backend is not available"), r.err());
        }
        r = run("bench", "peak", "--quick", "--no-save", "--backend", "gpu");
        assertTrue(r.err().startsWith("ane4j bench: [bench] --backend gpu: use ane or ref"), r.err());
        assertEquals(2, run("bench").code());
    }

    /** Issue 30: the soak benchmark runs a launcher and a worker and reads both from /proc (short here; slow: ~30 s). */
    @org.junit.jupiter.api.Tag("slow")
    @Test
    void soakSamplesLauncherAndWorker() {
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isDirectory(Path.of("/proc/self/fd")), "needs /proc");
        Result r = run("bench", "soak", "--steps", "300", "--no-save");
        assertEquals(0, r.code(), r.out() + r.err());
        assertTrue(r.out().matches("(?s).*launcher\\s+start\\s+[0-9.]+.*launcher\\s+end.*worker\\s+start.*worker\\s+end.*"), r.out());
        assertTrue(r.out().contains("steps: 300"), r.out());
    }
}
