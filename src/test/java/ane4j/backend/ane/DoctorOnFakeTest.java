package ane4j.backend.ane;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ane.ffm.FakeObjc;
import ane4j.backend.ref.RefBackend;
import ane4j.cli.DoctorCommand;
import ane4j.cli.Probes;
import ane4j.golden.Json;
import ane4j.mil.MilException;
import ane4j.mil.Program;
import ane4j.model.ModelConfig;
import ane4j.train.TrainingKernels;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.*;

/** The ANE half of {@code ane4j doctor}, on the fake runtime whose evaluate runs the reference interpreter. */
class DoctorOnFakeTest {
    @TempDir Path tmp;
    FakeObjc fake;
    RefOnFake ane;

    static final List<String> LADDER = Probes.ladder(ModelConfig.parse("tiny")).stream().map(Probes.Probe::name).toList();
    static final List<String> UNEQUAL_SURFACES = List.of("multi-input-ascending", "multi-input-descending", "multi-output-descending", "multi-output-ascending");
    static final long RUNGS = Probes.ladder(ModelConfig.parse("tiny")).stream().filter(p -> p.kind() == Probes.Kind.RUNG).count();

    @AfterEach
    void clean() {
        if (ane != null) ane.close();
        FakeRuntime.assertNoViolations(fake);
    }

    record Run(int code, String text, Map<String, Object> report) {
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> probes() { return (List<Map<String, Object>>) report.get("probes"); }

        Map<String, Object> probe(String name) { return probes().stream().filter(p -> p.get("probe").equals(name)).findFirst().orElseThrow(); }

        @SuppressWarnings("unchecked")
        List<String> lines(String key) { return (List<String>) report.get(key); }

        String assumption(String prefix) { return lines("assumptions").stream().filter(l -> l.startsWith(prefix)).findFirst().orElseThrow(() -> new AssertionError(prefix + " in " + lines("assumptions"))); }
    }

    @SuppressWarnings("unchecked")
    Run doctor(AneBackend backend) throws Exception {
        Path json = tmp.resolve("doctor.json");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = DoctorCommand.run(new String[] {"--json", json.toString()}, new PrintStream(out, true, StandardCharsets.UTF_8), System.err, backend, null);
        String text = out.toString(StandardCharsets.UTF_8);
        Map<String, Object> report = (Map<String, Object>) Json.parse(Files.readString(json));
        Run r = new Run(code, text, report);
        assertEquals(LADDER, r.probes().stream().map(p -> p.get("probe")).toList(), "every rung is reported, whatever happened");
        // what is printed is what is written
        for (String line : r.lines("assumptions")) assertTrue(text.contains("\n  " + line + "\n"), line);
        for (String line : r.lines("verdict")) assertTrue(text.contains("\n  " + line + "\n"), line);
        assertEquals(17, r.lines("assumptions").size(), r.lines("assumptions").toString());
        return r;
    }

    static AneBackend backend(int leakSuspectAfter) { return new AneBackend(new AneBackend.Options(null, null, null, leakSuspectAfter)); }

    /**
     * The fake's macOS 27 profile: the two-file probe meets the bundle check (Code=10, one line with the file count), the
     * packed pair reads its second blob correctly, 32-byte rows written packed are misread, and every rung passes (ane4j
     * packs and strides what it sends).
     */
    @Test
    void onMacos27TheTwoFileProbeGetsCode10ThePackedPairMatchesAndPackedShortRowsAreMisread() throws Exception {
        fake = FakeRuntime.compilingInto(tmp);
        fake.setMacos(27);
        System.setProperty(ane4j.backend.MacOs.PROPERTY, "27.0");
        try {
            Tampering hook = new Tampering(fake, tmp);
            fake.setEvaluateHook(hook::evaluate);
            Run r = doctor(backend(CompileBudget.LEAK_SUSPECT_AFTER));
            hook.close();
            assertEquals(0, r.code(), r.text());
            assertTrue(r.text().contains("\nmacos27: one weight file per program (bundle hash check, Code=10)"), r.text());
            assertTrue(r.text().contains("\nframework: _ANEHashEncoding present, _ANECloneHelper present, _ANESandboxingHelper present "
                    + "(macOS 27's bundle hash check: kernels need ≤1 weight file)\n"), r.text());
            Map<String, Object> two = r.probe("weights-2-files");
            assertEquals("failed", two.get("status"), two.toString());
            assertTrue(((String) two.get("error")).startsWith("[ane] main (2 weight files): the compiler's bundle hash check refused it (Code=10 verifyBundleAtPath"), two.toString());
            assertEquals("ok", r.probe("weights-packed-2").get("status"), r.probe("weights-packed-2").toString());
            assertEquals("differs", r.probe("row-32B").get("status"), r.probe("row-32B").toString());
            assertEquals("ok", r.probe("a2-conv-chain").get("status"), "four weight files, packed by ane4j on 27");
            assertTrue(r.text().lines().anyMatch(l -> l.startsWith("a2-conv-chain ") && l.contains(" rung  ane  ref          4 ")), r.text());
        } finally {
            System.clearProperty(ane4j.backend.MacOs.PROPERTY);
        }
    }

    @Test
    void theWholeLadderRunsThroughTheAnePathAndMatchesTheReference() throws Exception {
        fake = FakeRuntime.compilingInto(tmp);
        fake.setAneSubType("h15g");
        Tampering hook = new Tampering(fake, tmp);   // tampers with nothing: the reference interpreter, as RefOnFake
        fake.setEvaluateHook(hook::evaluate);
        AneBackend backend = backend(CompileBudget.LEAK_SUSPECT_AFTER);
        Run r = doctor(backend);
        hook.close();
        assertEquals(0, r.code(), r.text());
        assertTrue(r.text().contains("chip:    M3 (h15g)\n"), r.text());
        assertTrue(r.text().contains("dialect: 1.3/ios18\n"), r.text());
        assertTrue(r.text().contains("ane:     available\n"), r.text());
        assertTrue(r.text().contains("\nframework: _ANEHashEncoding absent, _ANECloneHelper absent, _ANESandboxingHelper absent (no bundle hash check)\n"), r.text());
        // the staged bundle after the first compile: the fake's saveModelFiles leaves data and net.plist (rules D4, C1)
        assertTrue(r.text().contains("\nbundle after the first compile (conv: data, model.mil, net.plist, weights/W.bin)\n"), r.text());
        assertTrue(r.text().contains("\nall " + RUNGS + " rungs passed; " + (LADDER.size() - RUNGS) + " probes observed\n"), r.text());
        assertEquals(true, r.report().get("aneAvailable"));
        assertEquals(true, r.report().get("passed"));
        List<List<Object>> seen = new ArrayList<>();
        for (Map<String, Object> p : r.probes()) {
            Program prog = Probes.ladder(ModelConfig.parse("tiny")).get(LADDER.indexOf((String) p.get("probe"))).program();
            List<Object> program = List.of(prog, prog.weights());   // the identifier hashes MIL and weight bytes
            if (UNEQUAL_SURFACES.contains(p.get("probe"))) {
                // exact surface sizes (R2): the fake's Orion rule (#2/#12, equal sizes) answers at evaluate, as a Mac will
                assertEquals("failed", p.get("status"), p.toString());
                assertTrue(((String) p.get("error")).contains("0x1d"), p.toString());
                seen.add(program);
                continue;
            }
            // a program identical to an earlier one (conv-reload; matmul-saturation = matmul-k32 with other inputs) is
            // loaded from the (fake) aned daemon's cache without compiling
            assertEquals(seen.contains(program) ? "daemon cache" : "compiled", p.get("origin"), p.toString());
            assertEquals(seen.contains(program) ? 0.0 : -1, seen.contains(program) ? ((Number) p.get("compileMs")).doubleValue() : -1, p.toString());
            seen.add(program);
            assertEquals("ane", p.get("backend"), p.toString());
            assertEquals("1.3/ios18", p.get("dialect"), p.toString());
            assertFalse(((String) p.get("identifier")).isEmpty(), p.toString());
            for (String k : List.of("compileMs", "loadMs", "evalMs", "maxRelErr")) assertTrue(((Number) p.get(k)).doubleValue() >= 0, k + " " + p);
            assertEquals(false, p.get("dirAfterUnload"), p + ": the fake's unloadWithQoS deletes the model directory");
            if (p.get("probe").equals("int8-blob-code1")) continue;   // see below
            assertEquals("ok", p.get("status"), p.toString());
            assertEquals(0.0, ((Number) p.get("maxAbsErr")).doubleValue(), p + ": the same interpreter ran on both sides");
        }
        // the fake's evaluate re-reads the weight files with ane4j's parser; where that refuses mil_dtype 1 on int8 data,
        // the outputs stay unwritten and the probe differs — an observation, not a ladder failure (the real ANE read
        // maderix's code-1 int8 blobs on M4)
        String code1 = hook.refused.isEmpty() ? "ok" : "differs";
        for (String why : hook.refused) assertTrue(why.contains("holds 4096 bytes of fp16 but the literal declares tensor<int8"), why);
        assertEquals(code1, r.probe("int8-blob-code1").get("status"));
        assertTrue(r.assumption("F12 int8").contains("int8-blob-code4 ok, int8-blob-code1 " + code1), r.assumption("F12 int8"));
        assertTrue(r.assumption("F8  matmul").endsWith("→ k16 matches: not needed on this chip"), r.assumption("F8  matmul"));
        assertTrue(r.assumption("F4  width-offset").startsWith("F4  width-offset slice clamps |v| > 4094 (M1–M3): no: values 4100–6000"), r.assumption("F4  width"));
        // M3's rules refuse a 32768-wide axis (ANEForge _targets.py); the fake compiles it: the doctor says the rule and the
        // compiler disagree (on a real M3 this line is the answer)
        assertEquals(true, r.probe("width-32768").get("ruleError"));
        assertEquals("F5–F8 chip rules (ane4j.chip) vs what compiled: M3: 1 of " + LADDER.size() + " programs break an error rule; agreed with Apple's compiler on "
                + (LADDER.size() - 5) + " of " + LADDER.size() + "; compiled although a rule says no: width-32768 (error [axis-cap] reshape_1 tensor<fp16, "
                + "[1, 1, 1, 32768]>: axis 3 is 32768); failed with no rule predicting it: " + String.join(", ", UNEQUAL_SURFACES), r.assumption("F5–F8"));
        assertTrue(r.text().contains("rules:   M3 (checked, not enforced: the probes ask Apple's compiler)\n"), r.text());
        assertTrue(r.assumption("F4  matmul").contains("no: outputs of 40000 kept"), r.assumption("F4  matmul"));
        assertEquals("F7  dialect that compiled: 1.3/ios18 [every compiled rung]; 1.3/ios18: the dialect of M3 (h15g)", r.assumption("F7 "));
        assertTrue(r.assumption("F1 ").startsWith("F1  identifier accepted: yes: "), r.assumption("F1 "));
        // (the four unequal-surface probes fail at evaluate and are reported without an unload record)
        assertTrue(r.assumption("F13").contains("yes: gone after unloadWithQoS for all " + (LADDER.size() - UNEQUAL_SURFACES.size()) + " unloaded programs"), r.assumption("F13"));
        assertTrue(r.assumption("F2 ").contains("yes: conv reloaded without compiling (load "), r.assumption("F2 "));
        assertTrue(r.text().contains("  ok (daemon cache)\n"), r.text());
        assertTrue(r.assumption("F9 ").endsWith("; no framework exception during the ladder"), r.assumption("F9 "));
        List<String> verdict = r.lines("verdict");
        assertTrue(verdict.get(0).startsWith("ane4j doctor: chip M3 (h15g), "), verdict.toString());
        assertEquals("passed " + RUNGS + " of " + RUNGS + " rungs (conv, dynamic-matmul, attention-mask … train/kvBwd)", verdict.get(1));
        assertEquals("no rung failed", verdict.get(2));
        assertEquals("probes: " + (code1.equals("ok") ? "" : "int8-blob-code1 differs, ") + String.join(" failed, ", UNEQUAL_SURFACES) + " failed", verdict.get(3));
        assertEquals(0, fake.liveObjects(), "leaked: " + fake.liveDescription());
    }

    @Test
    void aRungThatGivesZerosIsTheFirstFailureAndTheProbesReadTheirCliffs() throws Exception {
        fake = FakeRuntime.compilingInto(tmp);
        fake.setAneSubType("h13g");
        fake.setRefuseDialect("ios18");   // M1 with the evidence of maderix PR #6: only ios16 compiles (F7)
        // the fake "ANE" silently zeroes two programs (as maderix #47 saw on M1) and clamps the width-offset slice to inf
        Program k16 = Probes.ladder(ModelConfig.parse("tiny")).stream().filter(p -> p.name().equals("matmul-k16")).findFirst().orElseThrow().program();
        Program bwd1 = new TrainingKernels(ModelConfig.parse("tiny")).byName("sdpaBwd1").program();
        Program slice = Probes.ladder(ModelConfig.parse("tiny")).stream().filter(p -> p.name().equals("slice-clamp-4094")).findFirst().orElseThrow().program();
        Tampering hook = new Tampering(fake, tmp);
        hook.zero(p -> p.equals(k16) || p.equals(bwd1));
        hook.infAbove(p -> p.equals(slice), 4094);
        fake.setEvaluateHook(hook::evaluate);
        Run r = doctor(backend(CompileBudget.LEAK_SUSPECT_AFTER));
        hook.close();
        assertEquals(1, r.code(), r.text());
        assertEquals(false, r.report().get("passed"));
        Map<String, Object> failed = r.probe("train/sdpaBwd1");
        assertEquals("differs", failed.get("status"));
        assertEquals(true, failed.get("allZero"));
        assertEquals(false, failed.get("passed"));
        assertEquals("outside fp16 tolerance", failed.get("error"));
        assertTrue(((Number) failed.get("maxRelErr")).doubleValue() > 0.99, failed.toString());
        assertTrue(r.text().contains("\ntrain/sdpaBwd1 "), r.text());
        assertTrue(r.text().contains("FAIL: outside fp16 tolerance\n"), r.text());
        assertTrue(r.text().contains("\n1 of " + RUNGS + " rungs FAILED; "), r.text());
        // the ladder went on after the failure
        assertEquals("ok", r.probe("train/sdpaBwd2").get("status"));
        List<String> verdict = r.lines("verdict");
        assertEquals("passed " + (RUNGS - 1) + " of " + RUNGS + " rungs (conv, dynamic-matmul, attention-mask … train/kvBwd)", verdict.get(1));
        assertEquals("first failure: train/sdpaBwd1 — differs: outside fp16 tolerance", verdict.get(2));
        // the F14 probes now run on surfaces of their own sizes (ane-audit-2 R2), so the fake's equal-size rule (Orion #2/#12) shows
        assertEquals("probes: int8-blob-code4 skipped, int8-blob-code1 skipped, matmul-k16 differs, slice-clamp-4094 differs, "
                + "multi-input-ascending failed, multi-input-descending failed, multi-output-descending failed, multi-output-ascending failed", verdict.get(3));
        assertTrue(verdict.get(0).startsWith("ane4j doctor: chip M1 (h13g), ") && verdict.get(0).endsWith(", model tiny, dialect 1.0/ios16"), verdict.get(0));
        assertTrue(r.assumption("F7 ").startsWith("F7  dialect that compiled: 1.0/ios16 [every compiled rung]; 1.0/ios16: ios18 failed to compile on M1"), r.assumption("F7 "));
        assertTrue(((String) r.probe("int8-blob-code4").get("error")).startsWith("needs the ios17 opset; this chip's dialect is 1.0/ios16"), r.probe("int8-blob-code4").toString());
        assertTrue(r.assumption("F5–F8").contains("compiled although a rule says no: weights-packed-2, a2-fp32-cast, a2-packed-blob … width-32768"), r.assumption("F5–F8"));
        assertTrue(r.assumption("F8  matmul").endsWith("→ k16 gives zeros: rule confirmed"), r.assumption("F8  matmul"));
        assertTrue(r.assumption("F4  width-offset").contains("outputs became ±inf/NaN: cliff confirmed [slice-clamp-4094]"), r.assumption("F4  width"));
        assertTrue(r.assumption("F4  matmul").contains("no: outputs of 40000 kept"), r.assumption("F4  matmul"));
    }

    @Test
    void aCompilerThatGivesOutStopsTheLadderAndTheVerdictSaysWhereAndWhatPassed() throws Exception {
        ane = FakeRuntime.withReferenceEvaluate(tmp);
        fake = ane.fake();
        // the eighth compile (the a2-fp32-cast probe, after conv, the three macOS 27 probes and three rungs) fails; with 7
        // compiles behind it, that is the compiler leak
        fake.setLeakAfter(7);
        Run r = doctor(backend(7));
        assertEquals(1, r.code(), r.text());
        List<Map<String, Object>> probes = r.probes();
        int stop = 0;
        while (!probes.get(stop).get("status").equals("failed")) stop++;
        String at = (String) probes.get(stop).get("probe");
        assertTrue(stop >= 4, "four compiles succeed first: " + probes);
        for (int i = 0; i < stop; i++) assertEquals("ok", probes.get(i).get("status"), probes.get(i).toString());
        for (int i = stop + 1; i < probes.size(); i++) assertEquals("not run", probes.get(i).get("status"), probes.get(i).toString());
        assertTrue(((String) probes.get(stop).get("error")).contains("ANECCompile() FAILED"), probes.get(stop).toString());
        assertEquals("ladder stopped at " + at + ": " + probes.get(stop).get("error"), r.report().get("stopped"));
        List<String> passed = probes.subList(0, stop).stream().filter(p -> p.get("kind").equals("rung")).map(p -> (String) p.get("probe")).toList();
        List<String> verdict = r.lines("verdict");
        assertEquals("passed " + passed.size() + " of " + RUNGS + " rungs (" + String.join(", ", passed) + ")", verdict.get(1));
        assertTrue(verdict.get(2).startsWith("first failure: " + at + " — failed: "), verdict.toString());
        assertEquals("ladder stopped at " + at + ": " + probes.get(stop).get("error") + " (" + (probes.size() - stop - 1) + " not run)", verdict.get(3));
        assertTrue(r.text().contains("; ladder stopped at " + at + ": "), r.text());
        assertTrue(r.text().contains("\n" + passed.size() + " of " + RUNGS + " rungs passed, " + (RUNGS - passed.size()) + " not run; "), r.text());
        assertTrue(r.assumption("F5  16384").endsWith("width-16384 not run, width-32768 not run"), r.assumption("F5  16384"));
        assertFalse(r.assumption("F5–F8").contains("failed with no rule"), r.assumption("F5–F8"));
    }

    @Test
    void aFailingCompileIsAFailedRungNotACrash() throws Exception {
        fake = FakeRuntime.compilingInto(tmp);
        fake.setFailCompile("ANECCompile() FAILED");
        Run r = doctor(backend(100));
        assertEquals(1, r.code());
        assertTrue(r.text().contains("FAIL: [compileWithQoS:options:error:] ANECCompile() FAILED"), r.text());
        assertTrue(r.text().contains(RUNGS + " of " + RUNGS + " rungs FAILED"), r.text());
        assertEquals("first failure: conv — failed: [compileWithQoS:options:error:] ANECCompile() FAILED", r.lines("verdict").get(2));
        assertTrue(r.assumption("F7 ").startsWith("F7  dialect that compiled: none: nothing compiled; "), r.assumption("F7 "));
        assertEquals("F1  identifier accepted: yes: compiles got past it to compileWithQoS [conv]", r.assumption("F1 "));
        for (Map<String, Object> p : r.probes()) assertEquals("failed", p.get("status"), p.toString());
    }

    @Test
    void anObjectiveCExceptionInsideTheFrameworkIsAFailedRungAndTheF9LineSaysSo() throws Exception {
        fake = FakeRuntime.compilingInto(tmp);
        fake.setThrow("loadWithQoS:options:error:", "NSInternalInconsistencyException", "doctor test");
        Run r = doctor(backend(100));
        assertEquals(1, r.code());
        String first = r.lines("verdict").get(2);
        assertTrue(first.startsWith("first failure: conv — failed: [loadWithQoS:options:error:] raised NSInternalInconsistencyException: doctor test"), first);
        assertTrue(r.assumption("F9 ").contains("caught as failed rungs, first: [loadWithQoS:options:error:] raised NSInternalInconsistencyException"), r.assumption("F9 "));
        assertFalse(r.assumption("F9 ").contains("NO guard"), r.assumption("F9 "));
    }

    /**
     * The fake's evaluate as {@link RefOnFake} runs it (the reference interpreter on the files the compile saw, surfaces
     * bound alphabetically), then the outputs of chosen programs tampered with, as a misbehaving ANE would.
     */
    static final class Tampering implements AutoCloseable {
        private final FakeObjc fake;
        private final Path tmp;
        private final RefBackend ref = new RefBackend();
        private final Map<String, Kernel> kernels = new HashMap<>();
        private final Map<String, Program> programs = new HashMap<>();
        private Predicate<Program> zero = p -> false, inf = p -> false;
        private float limit;
        final List<String> refused = new ArrayList<>();

        Tampering(FakeObjc fake, Path tmp) {
            this.fake = fake;
            this.tmp = tmp;
        }

        void zero(Predicate<Program> which) { zero = which; }

        void infAbove(Predicate<Program> which, float limit) {
            inf = which;
            this.limit = limit;
        }

        void evaluate(List<MemorySegment> in, List<MemorySegment> out) {
            String hex = fake.evaluatingHex();
            Program p;
            try {
                p = programs.computeIfAbsent(hex, h -> RefOnFake.parse(tmp.resolve(h)));
            } catch (MilException e) {
                refused.add(e.getMessage());   // this "ANE" cannot read the files: the outputs stay as they were
                return;
            }
            Kernel k = kernels.computeIfAbsent(hex, h -> ref.compile(p));
            Map<String, TensorBuffer> outs = RefOnFake.bind(k.outputs(), out);
            k.evaluate(RefOnFake.bind(k.inputs(), in), outs);
            for (TensorBuffer b : outs.values())
                for (long i = 0; i < b.count(); i++) {
                    if (zero.test(p)) b.set(i, 0f);
                    else if (inf.test(p) && Math.abs(b.get(i)) > limit) b.set(i, Math.copySign(Float.POSITIVE_INFINITY, b.get(i)));
                }
        }

        @Override
        public void close() {
            kernels.values().forEach(Kernel::close);
        }
    }
}
