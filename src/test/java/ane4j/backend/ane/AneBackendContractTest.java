package ane4j.backend.ane;

import ane4j.backend.AneException;
import ane4j.backend.BackendException;
import ane4j.backend.CompileBudgetExceededException;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.backend.ane.ffm.FakeObjc;
import ane4j.backend.ref.RefBackend;
import ane4j.programs.AcceptancePrograms;
import ane4j.mil.AcceptanceCases;
import ane4j.mil.DType;
import ane4j.mil.Mil;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.backend.MacOs;
import ane4j.model.LlamaGraph;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.train.CpuLossHead;
import ane4j.train.GraphStep;
import ane4j.train.TrainingKernels;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.*;

/**
 * {@link AneBackend} end to end on the fake runtime, whose evaluate runs the reference interpreter on the surfaces
 * ({@link RefOnFake}): a kernel compiled by the ANE path must give exactly what {@link RefBackend} gives directly.
 */
class AneBackendContractTest extends FakeRuntimeFixture {
    @AfterEach
    void noViolations() {
        ane.close();
        FakeRuntime.assertNoViolationsAndPoolsPopped(fake);
    }

    static AneBackend backend() { return new AneBackend(new AneBackend.Options(null, null, null, CompileBudget.LEAK_SUSPECT_AFTER)); }

    static Map<String, TensorBuffer> randomInputs(Kernel k, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        Map<String, TensorBuffer> m = new LinkedHashMap<>();
        for (TensorSpec s : k.inputs()) {
            TensorBuffer b = TensorBuffer.allocate(s.type());
            for (long i = 0; i < b.count(); i++) b.set(i, (float) (r.nextDouble() * 2 - 1));
            m.put(s.name(), b);
        }
        return m;
    }

    /** Compiles through the ANE path and the reference backend, evaluates both on the same inputs, requires equal bits. */
    void assertSameAsRef(String name, Program program) {
        Map<String, TensorBuffer> viaAne, direct;
        int before = ane.evaluated().size();
        try (Kernel a = backend().compile(program); Kernel r = new RefBackend().compile(program)) {
            assertEquals(r.inputs(), a.inputs(), name);
            assertEquals(r.outputs(), a.outputs(), name);
            Map<String, TensorBuffer> in = randomInputs(r, name.hashCode());
            viaAne = a.evaluate(in);
            direct = r.evaluate(in);
        }
        assertEquals(before + 1, ane.evaluated().size(), name + ": the fake's evaluate ran the program once");
        for (String out : direct.keySet()) {
            float[] want = direct.get(out).toFloatArray(), got = viaAne.get(out).toFloatArray();
            boolean anyNonZero = false;
            for (float v : want) anyNonZero |= v != 0;
            assertTrue(anyNonZero, name + "/" + out + ": the reference output is not all zeros");
            for (int i = 0; i < want.length; i++)
                assertEquals(Float.floatToIntBits(want[i]), Float.floatToIntBits(got[i]), name + "/" + out + "[" + i + "]: " + want[i] + " vs " + got[i]);
        }
    }

    /**
     * The programs of the generic training split ({@link GraphStep}: tiny built as a graph, fp16) under this OS profile.
     * With the loss on the CPU (the graph ends at the logits; the token lookup is on the CPU too) every input and output
     * is an fp16 surface: forward and backward go through the ANE path as the reference runs them, and under macOS 27
     * each reaches the compiler with at most one weight file. With the loss in MIL the forward reads the int32 targets,
     * which no ANE kernel takes as a surface: refused in one line before the compiler. Not yet run on Apple hardware.
     */
    @Test
    void theGenericTrainingSplitsProgramsOnTheAnePath() {
        ModelConfig c = ModelConfig.parse("tiny");
        List<String> names = new ParameterLayout(c).views().stream().map(v -> LlamaGraph.inputName(v.name())).toList();
        RefBackend ref = new RefBackend(RefBackend.Options.ANE_LIKE);
        try (GraphStep head = new GraphStep(LlamaGraph.buildLogits(c, DType.FP16), new CpuLossHead("logits", "targets"), names, ref, GraphStep.Options.defaults());
             GraphStep loss = new GraphStep(LlamaGraph.build(c, DType.FP16, 512f), "loss", names, ref, GraphStep.Options.defaults())) {
            for (Program p : List.of(head.forwardProgram(), head.backwardProgram())) {
                Program sent = backend().forThisMac(p, "main", MacOs.parse(macos() + ".0"), java.util.Optional.empty());
                if (macos() >= 27) assertTrue(sent.weights().files().size() <= 1, p.main().name() + ": " + sent.weights().files().keySet());
                assertSameAsRef("cpu loss head, " + p.main().name(), p);
            }
            int before = fake.realCompiles();
            BackendException e = assertThrows(BackendException.class, () -> backend().compile(loss.forwardProgram()));
            assertEquals("[ane] input 'targets' is int32[64]; ANE kernel inputs and outputs are IOSurfaces of fp16 or fp32 (cast inside the program)", e.getMessage());
            assertEquals(before, fake.realCompiles(), "refused before the compiler");
        }
    }

    @Test
    void everyTinyAcceptanceProgramRoundTripsThroughTheAnePath() {
        for (AcceptanceCases.Case c : AcceptanceCases.tinyCases()) assertSameAsRef(c.name(), c.program());
    }

    @Test
    void a1ConvAndA4DynamicMatmulAtAneSizes() {
        assertSameAsRef("a1", AcceptancePrograms.a1Conv(64, 64, AcceptancePrograms.uniform(7, 64 * 64, 0.125f)));
        assertSameAsRef("a4", AcceptancePrograms.a4DynamicMatmul(64, 32, 64));
    }

    @Test
    void everyTinyTrainingKernelRoundTripsThroughTheAnePath() {
        List<String> names = new ArrayList<>();
        for (TrainingKernels.Spec k : new TrainingKernels(ModelConfig.parse("tiny")).all()) {
            assertSameAsRef(k.name(), k.program());
            names.add(k.name());
        }
        assertEquals(10, names.size(), names.toString());
    }

    @Test
    void theCompiledTextIsTheWritersTextInTheChipsDialect() throws Exception {
        Program p = AcceptancePrograms.a4DynamicMatmul(8, 4, 6);
        AneBackend b = backend();
        try (AneKernel k = (AneKernel) b.compile(p)) {
            assertEquals(MilDialect.PROGRAM_1_3_IOS18, b.dialect(), "h16g (M4) → 1.3/ios18");
            assertEquals(MilWriter.write(p, ane4j.mil.Dialect.IOS18), k.milText());
            assertEquals(k.milText(), Files.readString(k.program().directory().resolve("model.mil")));
        }
        fake.setAneSubType("h14g");
        fake.setRefuseDialect("ios18");   // an M2 that wants program(1.0)
        AneBackend m2 = backend();
        Program fp16Conv = Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(1, 8, 1, 4));
            f.output(f.named("y", f.conv(x, f.weight("W", Mil.fp16(8, 8, 1, 1), AcceptancePrograms.identity(8)))));
        }).build();
        try (AneKernel k = (AneKernel) m2.compile(fp16Conv)) {
            assertEquals(MilDialect.PROGRAM_1_0_IOS16, m2.dialect(), "h14 (M2), ios18 refused → 1.0/ios16");
            assertEquals(MilDialect.PROGRAM_1_0_IOS16, k.dialect());
            assertTrue(k.milText().startsWith("program(1.0)\n"), k.milText());
            assertTrue(k.milText().contains("func main<ios16>"), k.milText());
            Map<String, byte[]> files = fp16Conv.weights().encoded();
            assertEquals(1, files.size());
            for (var f : files.entrySet())
                assertArrayEquals(f.getValue(), Files.readAllBytes(k.program().directory().resolve(f.getKey().substring("@model_path/".length()))));
        }
        AneBackend forced = new AneBackend(new AneBackend.Options(null, MilDialect.PROGRAM_1_3_IOS18, null, 100));
        assertEquals(MilDialect.PROGRAM_1_3_IOS18, forced.dialect(), "the option overrides the chip");
    }

    @Test
    void onM1AndM2Ios18IsTriedFirstAndIos16AfterACompileFailurePerProgram() {
        fake.setAneSubType("h13g");
        fake.setRefuseDialect("ios18");
        AneBackend m1 = backend();
        assertEquals("1.3/ios18: not settled yet (on M1/M2 ios16 is tried if ios18 fails)", m1.dialectChoice());
        try (AneKernel k = (AneKernel) m1.compile(fp16Conv(21))) {
            assertEquals(MilDialect.PROGRAM_1_0_IOS16, k.dialect());
            assertTrue(k.milText().contains("func main<ios16>"), k.milText());
            assertSameOutputsAsRef("conv21", fp16Conv(21), k);
        }
        assertEquals(MilDialect.PROGRAM_1_0_IOS16, m1.dialect());
        assertTrue(m1.dialectChoice().startsWith("1.0/ios16: ios18 failed to compile on M1 (h13g) ([compileWithQoS:options:error:] "
                + "_ANECompiler : ANECCompile() FAILED (fake: this chip refuses ios18)), ios16 compiled; tried first from now on, the other still tried per program"), m1.dialectChoice());
        assertEquals(2, m1.compileCount(), "both attempts were compiles");
        int compiles = compileSends();
        try (AneKernel k = (AneKernel) m1.compile(fp16Conv(22))) {
            assertEquals(MilDialect.PROGRAM_1_0_IOS16, k.dialect());
        }
        assertEquals(compiles + 1, compileSends(), "remembered: no second ios18 attempt");

        fake.setRefuseDialect("ios16");   // an M1 that takes program(1.3): it compiles first time and stays
        AneBackend other = backend();
        try (AneKernel k = (AneKernel) other.compile(fp16Conv(23))) {
            assertEquals(MilDialect.PROGRAM_1_3_IOS18, k.dialect());
        }
        assertEquals("1.3/ios18: compiled on M1 (h13g), tried first from now on, the other still tried per program", other.dialectChoice());
        // R1 (ane-audit-2): a later program that fails in ios18 is retried in ios16, although the first compiled in ios18
        fake.setRefuseDialect("ios18");
        try (AneKernel k = (AneKernel) other.compile(fp16Conv(27))) {
            assertEquals(MilDialect.PROGRAM_1_0_IOS16, k.dialect(), "this kernel's own dialect");
            assertSameOutputsAsRef("conv27", fp16Conv(27), k);
        }

        fake.setRefuseDialect(null);
        fake.setFailCompile("ANECCompile() FAILED");
        var both = assertThrows(AneException.class, () -> backend().compile(fp16Conv(24)));
        assertTrue(both.getMessage().startsWith("[ane] main compiled in neither MIL dialect on M1 (h13g): ios18: "), both.getMessage());
        fake.setFailCompile(null);

        fake.setAneSubType("h16g");
        fake.setRefuseDialect("ios18");
        AneBackend m4 = backend();
        assertThrows(AneException.class, () -> m4.compile(fp16Conv(25)), "M4: no fallback, the failure is real");
        assertEquals(1, m4.compileCount());
        AneBackend forced = new AneBackend(new AneBackend.Options(null, MilDialect.PROGRAM_1_0_IOS16, null, 100));
        try (AneKernel k = (AneKernel) forced.compile(fp16Conv(26))) {
            assertEquals(MilDialect.PROGRAM_1_0_IOS16, k.dialect());
        }
        assertEquals("1.0/ios16: set by AneBackend.Options", forced.dialectChoice());
    }

    /** An fp16-I/O 1x1 conv (no cast: M1/M2 refuse cast, chip rule) whose weights depend on the seed. */
    static Program fp16Conv(int seed) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(1, 8, 1, 4));
            f.output(f.named("y", f.conv(x, f.weight("W", Mil.fp16(8, 8, 1, 1), AcceptancePrograms.uniform(seed, 64, 0.125f)))));
        }).build();
    }

    @Test
    void surfaceBuffersAreZeroCopyAndEvaluateSkipsTheirCopies() {
        Program p = zeroCopyProgram();
        try (AneKernel k = (AneKernel) backend().compile(p); Kernel r = new RefBackend().compile(p)) {
            TensorBuffer x = k.allocateInput("x"), y = k.allocateOutput("y");
            assertSame(x, k.allocateInput("x"), "one buffer per surface");
            Map<String, TensorBuffer> in = randomInputs(r, 3);
            x.copyFrom(in.get("x"));
            // the buffer is the surface: the bytes are already in the IOSurface the request binds
            MemorySegmentView.assertSameBytes(in.get("x"), k.program().input("x"));

            int logBefore = fake.log().size();
            k.evaluate(Map.of("x", x), Map.of("y", y));
            List<FakeObjc.Entry> during = fake.log().subList(logBefore, fake.log().size());
            assertEquals(List.of("IOSurfaceUnlock", "IOSurfaceUnlock", "IOSurfaceLock", "IOSurfaceLock"),
                    during.stream().map(FakeObjc.Entry::kind).filter(s -> s.startsWith("IOSurface")).toList(),
                    "no copy: the held locks are dropped for the ANE and taken again, nothing else");
            assertArrayEquals(r.evaluate(in).get("y").toFloatArray(), y.toFloatArray());

            // plain buffers still work, and the surface buffers keep their contents
            TensorBuffer y2 = TensorBuffer.allocate(y.type());
            k.evaluate(in, Map.of("y", y2));
            assertArrayEquals(y.toFloatArray(), y2.toFloatArray());
            assertEquals(2, k.evaluations());
            var wrongType = assertThrows(IllegalArgumentException.class,
                    () -> k.evaluate(Map.of("x", TensorBuffer.allocate(DType.FP32, x.shape())), Map.of("y", y)));
            assertTrue(wrongType.getMessage().startsWith("[kernel] main: input 'x' is fp32"), wrongType.getMessage());
            k.close();
            assertThrows(IllegalStateException.class, () -> x.get(0), "the surface buffer dies with the kernel");
            assertThrows(IllegalStateException.class, () -> k.evaluate(in));
        }
        assertEquals(0, fake.liveObjects(), "leaked: " + fake.liveDescription());
    }

    /** A dynamic matmul whose surfaces are packed under this OS profile (x [1,8,1,10], y [1,6,1,4]). */
    Program zeroCopyProgram() { return AcceptancePrograms.a4DynamicMatmul(8, 4, 6); }

    @Test
    void plainBuffersAreCopiedInsideLocks() {
        Program p = AcceptancePrograms.a10QkT(2, 4, 8);   // two inputs, q and k
        try (AneKernel k = (AneKernel) backend().compile(p); Kernel r = new RefBackend().compile(p)) {
            Map<String, TensorBuffer> in = randomInputs(r, 5);
            int logBefore = fake.log().size();
            Map<String, TensorBuffer> out = k.evaluate(in);
            List<String> locks = fake.log().subList(logBefore, fake.log().size()).stream().map(FakeObjc.Entry::kind)
                    .filter(s -> s.startsWith("IOSurface")).toList();
            assertEquals(List.of("IOSurfaceLock", "IOSurfaceUnlock", "IOSurfaceLock", "IOSurfaceUnlock", "IOSurfaceLock", "IOSurfaceUnlock"), locks,
                    "write q, write k, read scores");
            assertArrayEquals(r.evaluate(in).get("scores").toFloatArray(), out.get("scores").toFloatArray());
        }
    }

    /** A 1x1 conv whose weights (and so identifier) depend on the seed. */
    static Program conv(int seed) { return AcceptancePrograms.a1Conv(8, 4, AcceptancePrograms.uniform(seed, 8 * 8, 0.125f)); }

    @Test
    void theBudgetStopsTheCompilePastItBeforeTheFrameworkCompiles() {
        AneBackend b = new AneBackend(new AneBackend.Options(2L, null, null, 100));
        b.compile(conv(1)).close();
        b.compile(conv(2)).close();
        int compiles = compileSends();
        var e = assertThrows(CompileBudgetExceededException.class, () -> b.compile(conv(3)));
        assertEquals("[ane] compile 3 exceeds the compile budget of 2 (2 compiles done in this process); restart the worker "
                + "process (the supervisor does this automatically) or raise -Dane4j.compileBudget", e.getMessage());
        assertEquals(compiles, compileSends(), "no compileWithQoS for the refused one");
        assertEquals(2, b.compileCount());
        try (AneKernel k = (AneKernel) b.compile(conv(1))) {   // aned still has it: no compile, so no budget needed
            assertEquals(AneProgram.Origin.DAEMON_CACHE, k.origin());
        }
        assertEquals(2, b.compileCount());
        assertEquals(1, b.daemonCacheLoads());
        assertEquals(100, backend().compileBudget(), "default budget");
    }

    int compileSends() { return (int) fake.log().stream().filter(x -> "compileWithQoS:options:error:".equals(x.selector())).count(); }

    @Test
    void aCompileFailingLikeTheLeakIsBudgetExhaustionAndEarlierFailuresAreNot() {
        Program p = AcceptancePrograms.a1Conv(8, 4);
        fake.setFailCompile("ANECCompile() FAILED: unsupported op");
        var early = assertThrows(AneException.class, () -> backend().compile(p));
        assertEquals("[compileWithQoS:options:error:] ANECCompile() FAILED: unsupported op", early.getMessage());
        assertInstanceOf(BackendException.class, early, "ANE errors are backend errors");
        fake.setFailCompile(null);

        fake.setLeakAfter(2);
        AneBackend b = new AneBackend(new AneBackend.Options(1000L, null, null, 2));
        b.compile(conv(1)).close();
        b.compile(conv(2)).close();
        var leak = assertThrows(CompileBudgetExceededException.class, () -> b.compile(conv(3)));
        assertTrue(leak.getMessage().startsWith("[ane.compile] compile failed after 2 earlier compiles in this process"), leak.getMessage());
        assertTrue(leak.getMessage().endsWith("[compileWithQoS:options:error:] fake: ANECCompile() FAILED (emulated compiler leak after 2 compiles)"), leak.getMessage());
        assertEquals(2, leak.count());
        assertInstanceOf(AneException.class, leak.getCause());
        assertEquals(0, fake.liveObjects(), "leaked: " + fake.liveDescription());
    }

    @Test
    void aRestartedBackendLoadsWhatTheDaemonCompiledWithoutCompilingAndTheKernelsRun() {
        Program p = conv(5);
        String id;
        try (AneKernel k = (AneKernel) backend().compile(p)) {
            assertEquals(AneProgram.Origin.COMPILED, k.origin());
            id = k.program().identifier();
        }
        assertFalse(Files.exists(tmp.resolve(id)), "unload removed the model directory");
        fake.newProcess();
        AneBackend restarted = backend();
        try (AneKernel k = (AneKernel) restarted.compile(p); Kernel r = new RefBackend().compile(p)) {
            assertEquals(AneProgram.Origin.DAEMON_CACHE, k.origin());
            Map<String, TensorBuffer> in = randomInputs(r, 9);
            assertArrayEquals(r.evaluate(in).get("y").toFloatArray(), k.evaluate(in).get("y").toFloatArray(), "a cached kernel runs");
        }
        assertEquals(0, restarted.compileCount());
        assertEquals(1, restarted.daemonCacheLoads());
        assertEquals(1, fake.realCompiles());
        AneBackend measuring = new AneBackend(backend().options().withDaemonCache(false));
        try (AneKernel k = (AneKernel) measuring.compile(p)) {
            assertEquals(AneProgram.Origin.COMPILED, k.origin(), "daemonCache=false compiles anyway");
        }
        assertEquals(2, fake.realCompiles());
    }

    @Test
    void aRestartAfterTheBudgetRanOutReloadsAllTenTrainingKernelsWithZeroCompiles() {
        List<TrainingKernels.Spec> kernels = new TrainingKernels(ModelConfig.parse("tiny")).all();
        assertEquals(10, kernels.size());
        // first worker: budget 8; tiny is MHA with dim == heads·headDim, so woFwd, wotBwd and qBwd are one program
        AneBackend first = new AneBackend(new AneBackend.Options(8L, null, null, 100));
        List<Kernel> live = new ArrayList<>();
        for (TrainingKernels.Spec k : kernels) live.add(first.compile(k.program()));
        long distinct = live.stream().map(k -> ((AneKernel) k).program().identifier()).distinct().count();
        assertEquals(first.compileCount(), distinct, "identical programs compiled once");
        assertEquals(10 - distinct, first.sharedLoads());
        assertTrue(distinct < 10, "woFwd/wotBwd/qBwd share: " + distinct);
        assertEquals(8, first.compileCount(), "the budget is spent");
        assertThrows(CompileBudgetExceededException.class, () -> first.compile(conv(11)), "the next compile asks for a restart");
        for (Kernel k : live) k.close();   // the worker exits

        fake.newProcess();
        int compilesBefore = fake.realCompiles();
        AneBackend restarted = new AneBackend(new AneBackend.Options(8L, null, null, 100));
        for (TrainingKernels.Spec k : kernels) {
            try (AneKernel a = (AneKernel) restarted.compile(k.program())) {
                assertNotEquals(AneProgram.Origin.COMPILED, a.origin(), k.name());
                assertSameOutputsAsRef(k.name(), k.program(), a);
            }
        }
        assertEquals(0, restarted.compileCount(), "zero new compiles");
        assertEquals(compilesBefore, fake.realCompiles());
        assertEquals(10, restarted.daemonCacheLoads(), "each closed before the next: every one from the daemon");
    }

    @Test
    void aSecondProcessLoadsTheTenTrainingKernelsFromTheSharedDaemonWithoutCompiling() throws Exception {
        List<TrainingKernels.Spec> kernels = new TrainingKernels(ModelConfig.parse("tiny")).all();
        AneBackend first = backend();
        for (TrainingKernels.Spec k : kernels) first.compile(k.program()).close();
        assertEquals(10, first.compileCount() + first.daemonCacheLoads(), "each closed before the next: none shared");

        Path childTmp = Files.createDirectories(tmp.resolve("child-tmp"));
        ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                SecondProcess.class.getName(), childTmp.toString()).redirectErrorStream(true);
        pb.environment().put("FAKE_ANED_DIR", fake.daemonDir().toString());   // aned is one daemon for both processes
        Process child = pb.start();
        String out = new String(child.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).strip();
        assertTrue(child.waitFor(120, java.util.concurrent.TimeUnit.SECONDS), out);
        assertEquals(0, child.exitValue(), out);
        assertTrue(out.endsWith("kernels=10 compiles=0 daemonLoads=10 fakeCompiles=0"), out);
    }

    /** The second process of the test above: the ten tiny training kernels on the fake, sharing aned's directory. */
    public static final class SecondProcess {
        public static void main(String[] args) {
            FakeObjc fake = FakeRuntime.compilingInto(Path.of(args[0]));
            AneBackend b = backend();
            int n = 0;
            for (TrainingKernels.Spec k : new TrainingKernels(ModelConfig.parse("tiny")).all()) {
                b.compile(k.program()).close();
                n++;
            }
            System.out.println("kernels=" + n + " compiles=" + b.compileCount() + " daemonLoads=" + b.daemonCacheLoads()
                    + " fakeCompiles=" + fake.realCompiles());
        }
    }

    /** One evaluation of an ANE kernel against the reference backend, bit for bit. */
    static void assertSameOutputsAsRef(String name, Program program, Kernel a) {
        try (Kernel r = new RefBackend().compile(program)) {
            Map<String, TensorBuffer> in = randomInputs(r, name.hashCode());
            Map<String, TensorBuffer> want = r.evaluate(in), got = a.evaluate(in);
            for (String out : want.keySet())
                assertArrayEquals(want.get(out).toFloatArray(), got.get(out).toFloatArray(), name + "/" + out);
        }
    }

    @Test
    void nonFloatInputsAreRejectedWithTheFix() {
        Program p = Mil.program().function("main", f -> {
            var x = f.input("x", Mil.int32(1, 4, 1, 4));
            f.output(f.named("y", f.cast(x, DType.FP16)));
        }).build();
        var e = assertThrows(BackendException.class, () -> backend().compile(p));
        assertEquals("[ane] input 'x' is int32[1,4,1,4]; ANE kernel inputs and outputs are IOSurfaces of fp16 or fp32 (cast inside the program)", e.getMessage());
    }

    /** Compares a buffer with the bytes in a surface. */
    static final class MemorySegmentView {
        static void assertSameBytes(TensorBuffer expected, AneSurface surface) {
            java.lang.foreign.MemorySegment got = java.lang.foreign.Arena.ofAuto().allocate(surface.bytes());
            // x's surface is held locked by the kernel; read the base memory through a second (nested) lock
            try (AneSurface.Access a = surface.lockForRead()) {
                got.copyFrom(a.segment());
            }
            assertEquals(-1, got.mismatch(expected.segment()));
        }
    }
}
