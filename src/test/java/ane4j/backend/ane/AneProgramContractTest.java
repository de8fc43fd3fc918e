package ane4j.backend.ane;

import ane4j.backend.FrameworkException;
import ane4j.backend.AneException;
import ane4j.backend.CompileBudgetExceededException;
import ane4j.backend.ane.ffm.FakeObjc;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.junit.jupiter.api.Assertions.*;

/** {@link AneProgram} against the fake runtime: the ANE call sequence, arguments, files, ownership and errors. */
class AneProgramContractTest {
    // A1-style program (docs/ane-facts.md §9): fp32 [1,C,1,S] in, fp32 out, one fp16 conv weight (the fake does not parse MIL)
    static final String MIL = """
            program(1.3)
            [buildInfo = dict<string, string>({{"coremlc-component-MIL", "3510.2.1"}, {"coremlc-version", "3505.4.1"}, {"coremltools-component-milinternal", ""}, {"coremltools-version", "9.0"}})]
            {
                func main<ios18>(tensor<fp32, [1, 64, 1, 64]> x) {
                    tensor<fp16, [64,64,1,1]> W = const()[name=string("W"), val=tensor<fp16, [64,64,1,1]>(BLOBFILE(path=string("@model_path/weights/w.bin"), offset=uint64(64)))];
                } -> (y);
            }
            """;
    static final int C = 64, S = 64;
    static final long BYTES = (long) C * S * 4;   // fp32 [1,64,1,64] = 16 KB, below the 48 KB minimum

    FakeObjc fake;
    @TempDir Path tmp;

    @BeforeEach
    void setUp() {
        fake = FakeRuntime.compilingInto(tmp);
    }

    @AfterEach
    void noViolations() {
        assertEquals(List.of(), fake.errors(), "contract violations seen by the fake");
        assertEquals(0, fake.poolDepth(), "every autorelease pool popped");
    }

    static byte[] blob(int seed) {
        byte[] b = new byte[128 + C * C * 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) (i * 31 + seed);
        return b;
    }

    static AneProgram compileOne(CompileBudget budget) { return compileOne(budget, 1); }

    /** A program whose weights (and so identifier) depend on the seed. */
    static AneProgram compileOne(CompileBudget budget, int seed) {
        return AneProgram.compile(MIL, Map.of("@model_path/weights/w.bin", blob(seed)),
                List.of(new SurfaceSpec("x", BYTES)), List.of(new SurfaceSpec("y", BYTES)), budget);
    }

    static CompileBudget roomy() { return new CompileBudget(1000, 1000); }

    @Test
    void compileEvaluateCloseSendsTheSelectorsOfAneFactsInOrderWithExactArguments() {
        try (AneProgram p = compileOne(roomy())) {
            p.evaluate();
        }
        List<FakeObjc.Entry> ane = fake.log().stream().filter(FakeObjc.Entry::isAneSend).toList();
        assertEquals(List.of(
                "modelWithMILText:weights:optionsPlist:",
                "inMemoryModelWithDescriptor:",
                "hexStringIdentifier",
                "compiledModelExists",
                "compileWithQoS:options:error:",
                "loadWithQoS:options:error:",
                "objectWithIOSurface:",
                "objectWithIOSurface:",
                "requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:",
                "evaluateWithQoS:options:request:error:",
                "unloadWithQoS:error:"), ane.stream().map(FakeObjc.Entry::selector).toList());

        int milLen = MIL.getBytes(StandardCharsets.UTF_8).length;
        assertEquals(List.of("NSData(len=" + milLen + ")",
                "NSDictionary{NSString(\"@model_path/weights/w.bin\")=NSDictionary{NSString(\"offset\")=NSNumber(0),NSString(\"data\")=NSData(len=" + blob(1).length + ")}}",
                "nil"), ane.get(0).args());
        assertEquals("class:_ANEInMemoryModelDescriptor", ane.get(0).receiver());
        assertTrue(ane.get(1).args().get(0).startsWith("_ANEInMemoryModelDescriptor#"));
        assertEquals("class:_ANEInMemoryModel", ane.get(1).receiver());
        String model = ane.get(1).result();
        for (int i : new int[] {2, 3, 4, 5, 9, 10}) assertEquals(model, ane.get(i).receiver(), ane.get(i).selector());
        assertEquals("NO", ane.get(3).result(), "aned has not compiled it yet");
        assertEquals(List.of("u32:21", "NSDictionary{}", "NSError**"), ane.get(4).args());
        assertEquals(List.of("u32:21", "NSDictionary{}", "NSError**"), ane.get(5).args());
        assertTrue(ane.get(6).args().get(0).startsWith("IOSurface#"));
        assertEquals("class:_ANEIOSurfaceObject", ane.get(6).receiver());
        List<String> req = ane.get(8).args();
        assertEquals(7, req.size());
        assertEquals("NSArray[" + ane.get(6).result() + "]", req.get(0));
        assertEquals("NSArray[NSNumber(0)]", req.get(1));
        assertEquals("NSArray[" + ane.get(7).result() + "]", req.get(2));
        assertEquals("NSArray[NSNumber(0)]", req.get(3));
        assertEquals(List.of("nil", "nil", "NSNumber(0)"), req.subList(4, 7));
        assertEquals(List.of("u32:21", "NSDictionary{}", ane.get(8).result(), "NSError**"), ane.get(9).args());
        assertEquals(List.of("u32:21", "NSError**"), ane.get(10).args());
        for (FakeObjc.Entry e : ane) if (e.selector().endsWith("error:")) assertEquals("YES", e.result(), e.selector());
    }

    @Test
    void compileAndEvaluateRunInsideAutoreleasePools() {
        try (AneProgram p = compileOne(roomy())) {
            p.evaluate();
        }
        int depth = 0;
        for (FakeObjc.Entry e : fake.log()) {
            if (e.kind().equals("poolPush")) depth++;
            if (e.kind().equals("poolPop")) depth--;
            if (e.isAneSend() || e.kind().equals("IOSurfaceCreate") || e.kind().equals("NSTemporaryDirectory"))
                assertTrue(depth > 0, e.selector() + e.kind() + " outside a pool");
        }
    }

    @Test
    void modelFilesAreWrittenIntoTheHexDirectoryBeforeCompileAndDeletedOnClose() throws Exception {
        Path dir;
        try (AneProgram p = compileOne(roomy())) {
            dir = p.directory();
            assertEquals(tmp.resolve(p.identifier()), dir);
            assertArrayEquals(MIL.getBytes(StandardCharsets.UTF_8), Files.readAllBytes(dir.resolve("model.mil")));
            assertArrayEquals(blob(1), Files.readAllBytes(dir.resolve("weights/w.bin")));
            assertTrue(Files.exists(dir.resolve("net.plist")), "the fake compiler's output is there too");
            assertArrayEquals(blob(1), Files.readAllBytes(dir.resolve("data")), "saveModelFiles wrote the entry's data value to <dir>/data");
        }
        assertFalse(Files.exists(dir), "temp dir deleted on close");
        FakeObjc.Entry removed = fake.log().stream().filter(e -> e.kind().equals("removeItemAtPath")).findFirst().orElseThrow();
        assertEquals(dir.toString(), removed.receiver(), "unloadWithQoS itself removed the directory (F13)");
        // the fake compared both files with the descriptor's bytes when compile ran, and found them present and equal
        FakeObjc.Entry files = fake.log().stream().filter(e -> e.kind().equals("compileFiles")).findFirst().orElseThrow();
        assertEquals("ok", files.result());
        assertEquals(2, files.args().size());
        assertTrue(files.args().get(0).startsWith("model.mil:" + MIL.getBytes(StandardCharsets.UTF_8).length + ":"));
        assertTrue(files.args().get(1).startsWith("weights/w.bin:" + blob(1).length + ":"));
        int compileAt = indexOf("compileWithQoS:options:error:"), filesAt = fake.log().indexOf(files);
        assertEquals(compileAt - 1, filesAt, "files checked as part of compile");
    }

    private int indexOf(String selector) {
        List<FakeObjc.Entry> log = fake.log();
        for (int i = 0; i < log.size(); i++) if (selector.equals(log.get(i).selector())) return i;
        return -1;
    }

    @Test
    void everyRetainIsBalancedAfterClose() {
        try (AneProgram p = compileOne(roomy())) {
            p.evaluate();
            assertTrue(fake.liveObjects() > 0, "model, request, surfaces are alive while the program is open");
        }
        assertEquals(0, fake.liveObjects(), "leaked: " + fake.liveDescription());
        long retains = fake.log().stream().filter(e -> e.kind().equals("retain")).count();
        long releases = fake.log().stream().filter(e -> e.kind().equals("release")).count();
        assertEquals(2, retains, "model and request are the +0 results we keep");
        assertEquals(retains, releases);
        assertEquals(2, fake.log().stream().filter(e -> e.kind().equals("CFRelease")).count(), "one per surface");
    }

    @Test
    void weightFreeProgramPassesAnEmptyDictionaryNotNil() {
        try (AneProgram p = AneProgram.compile(MIL, Map.of(), List.of(new SurfaceSpec("x", BYTES)),
                List.of(new SurfaceSpec("y", BYTES)), roomy())) {
            assertTrue(Files.isDirectory(p.directory().resolve("weights")));
        }
        FakeObjc.Entry first = fake.log().stream().filter(FakeObjc.Entry::isAneSend).findFirst().orElseThrow();
        assertEquals("NSDictionary{}", first.args().get(1));
    }

    @Test
    void failedCompileThrowsApplesMessageAndCleansUp() {
        fake.setFailCompile("ANECCompile() FAILED: unsupported op 'gather'");
        CompileBudget budget = roomy();
        RuntimeException e = assertThrows(AneException.class, () -> compileOne(budget));
        assertFalse(e instanceof CompileBudgetExceededException);
        assertEquals("[compileWithQoS:options:error:] ANECCompile() FAILED: unsupported op 'gather'", e.getMessage());
        assertEquals(1, budget.used(), "a failed compile still counts");
        assertEquals(0, fake.liveObjects(), "leaked: " + fake.liveDescription());
        try (var files = Files.list(tmp)) {
            assertEquals(List.of(), files.toList(), "temp dir removed");
        } catch (java.io.IOException io) {
            fail(io);
        }
        assertEquals(-1, indexOf("loadWithQoS:options:error:"));
        assertEquals(-1, indexOf("unloadWithQoS:error:"), "nothing to unload");
    }

    @Test
    void compileFailureLikeTheLeakBecomesBudgetExhaustion() {
        fake.setLeakAfter(3);
        CompileBudget budget = new CompileBudget(1000, 3);
        for (int i = 0; i < 3; i++) compileOne(budget, i).close();
        CompileBudgetExceededException e = assertThrows(CompileBudgetExceededException.class, () -> compileOne(budget, 3));
        assertTrue(e.getMessage().contains("after 3 earlier compiles"), e.getMessage());
        assertTrue(e.getMessage().contains("[compileWithQoS:options:error:] fake: ANECCompile() FAILED (emulated compiler leak"), e.getMessage());
        assertInstanceOf(AneException.class, e.getCause());
        assertEquals(0, fake.liveObjects(), "leaked: " + fake.liveDescription());
    }

    @Test
    void earlyCompileFailureIsNotMistakenForTheLeak() {
        fake.setLeakAfter(1);   // fails from the second compile on, but only 1 compile came before it
        CompileBudget budget = new CompileBudget(1000, 5);
        compileOne(budget, 1).close();
        RuntimeException e = assertThrows(AneException.class, () -> compileOne(budget, 2));
        assertFalse(e instanceof CompileBudgetExceededException, e.getMessage());
    }

    @Test
    void budgetStopsTheCompilePastItBeforeCompileWithQoSButNotALoadFromTheDaemon() {
        CompileBudget budget = new CompileBudget(2, 100);
        compileOne(budget, 1).close();
        compileOne(budget, 2).close();
        int logAt = fake.log().size();
        CompileBudgetExceededException e = assertThrows(CompileBudgetExceededException.class, () -> compileOne(budget, 3));
        assertTrue(e.getMessage().startsWith("[ane.compile] the compile budget of 2 per process is used up"), e.getMessage());
        assertEquals(List.of("modelWithMILText:weights:optionsPlist:", "inMemoryModelWithDescriptor:", "hexStringIdentifier", "compiledModelExists"),
                fake.log().subList(logAt, fake.log().size()).stream().filter(FakeObjc.Entry::isAneSend).map(FakeObjc.Entry::selector).toList(),
                "no compileWithQoS was sent");
        assertEquals(2, budget.used());
        assertFalse(Files.exists(tmp.resolve(AneProgramContractTest.identifier(3))), "its files are gone again");
        try (AneProgram again = compileOne(budget, 1)) {
            assertEquals(AneProgram.Origin.DAEMON_CACHE, again.origin(), "aned still has the first program");
            again.evaluate();
        }
        assertEquals(2, budget.used(), "a load from the daemon's cache is not a compile");
        assertEquals(1, fake.daemonLoads());
    }

    /** The identifier of compileOne(_, seed), as the decompiled descriptor computes it. */
    static String identifier(int seed) {
        return sha256(MIL.getBytes(StandardCharsets.UTF_8)) + "_" + sha256(new byte[4], blob(seed)) + "_" + sha256();
    }

    @Test
    void surfacesBindAlphabeticallyWithEqualPaddedSizes() {
        fake.setMinSurfaceBytes(SurfacePlan.MIN_SURFACE_BYTES);   // the fake then rejects smaller surfaces with 0x1d
        // 100 000 bytes allocate 100 096: whole multiples of 128 (maderix PR #35, ane-audit-2 R9)
        List<SurfaceSpec> ins = List.of(new SurfaceSpec("x_b", 4000), new SurfaceSpec("a", 100_000), new SurfaceSpec("Z", 8));
        try (AneProgram p = AneProgram.compile(MIL, Map.of(), ins, List.of(new SurfaceSpec("y", 64)), roomy())) {
            assertEquals(List.of("Z", "a", "x_b"), p.inputs().stream().map(AneSurface::name).toList());
            assertEquals(List.of(0, 1, 2), p.inputs().stream().map(AneSurface::index).toList());
            for (AneSurface s : p.inputs()) assertEquals(100_096, s.allocBytes(), s.toString());
            assertEquals(List.of(8L, 100_000L, 4000L), p.inputs().stream().map(AneSurface::bytes).toList());
            assertEquals(SurfacePlan.MIN_SURFACE_BYTES, p.output("y").allocBytes());
            p.evaluate();   // would fail with 0x1d on unequal or too small surfaces
        }
        List<String> created = fake.log().stream().filter(e -> e.kind().equals("IOSurfaceCreate"))
                .map(e -> e.args().get(0).replaceAll(".*AllocSize\"\\)=NSNumber\\((\\d+)\\).*", "$1")).toList();
        assertEquals(List.of("100096", "100096", "100096", "49152"), created);
    }

    @Test
    void evaluateRoundTripsDataThroughTheHookInBindingOrder() {
        // the "ANE": y = a - b over fp32, reading the inputs by request index
        fake.setEvaluateHook((in, out) -> {
            for (long i = 0; i < C * S; i++)
                out.get(0).setAtIndex(JAVA_FLOAT, i, in.get(0).getAtIndex(JAVA_FLOAT, i) - in.get(1).getAtIndex(JAVA_FLOAT, i));
        });
        try (AneProgram p = AneProgram.compile(MIL, Map.of(), List.of(new SurfaceSpec("b", BYTES), new SurfaceSpec("a", BYTES)),
                List.of(new SurfaceSpec("y", BYTES)), roomy());
             Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(BYTES), b = arena.allocate(BYTES), y = arena.allocate(BYTES);
            for (int i = 0; i < C * S; i++) {
                a.setAtIndex(JAVA_FLOAT, i, 3 * i);
                b.setAtIndex(JAVA_FLOAT, i, i);
            }
            p.input("a").write(a);
            p.input("b").write(b);
            p.evaluate();
            p.output("y").read(y);
            for (int i = 0; i < C * S; i++) assertEquals(2f * i, y.getAtIndex(JAVA_FLOAT, i), "y[" + i + "]");
            // zero-copy access sees the same bytes
            try (AneSurface.Access r = p.output("y").lockForRead()) {
                assertEquals(2f * 17, r.segment().getAtIndex(JAVA_FLOAT, 17));
                assertThrows(IllegalStateException.class, p::evaluate, "evaluate while a surface is locked");
            }
        }
    }

    /** Upper-case SHA-256 hex, computed here with the JDK's digest, independently of the fake's C code. */
    static String sha256(byte[]... parts) {
        try {
            java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
            for (byte[] p : parts) md.update(p);
            return java.util.HexFormat.of().withUpperCase().formatHex(md.digest());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void theIdentifierIsThreeSha256DigestsAsTheDecompiledDescriptorBuildsIt() {
        // _ANEInMemoryModelDescriptor and _ANEHashEncoding, decompiled (docs/ane-audit.md F1):
        // "%@_%@_%@" of SHA-256(MIL), SHA-256(4 zero bytes, then each entry's data in sorted key order), SHA-256(options, nil: empty)
        byte[] mil = MIL.getBytes(StandardCharsets.UTF_8), a = blob(1), b = blob(2);
        String expected = sha256(mil) + "_" + sha256(new byte[4], a, b) + "_" + sha256();
        try (AneProgram p = AneProgram.compile(MIL, Map.of("@model_path/weights/b.bin", a, "@model_path/weights/c.bin", b),
                List.of(new SurfaceSpec("x", BYTES)), List.of(new SurfaceSpec("y", BYTES)), roomy())) {
            assertEquals(expected, p.identifier());
            assertEquals(194, p.identifier().length());
            assertEquals(tmp.resolve(expected), p.directory(), "used as the directory name, as it comes");
            assertTrue(Files.isRegularFile(p.directory().resolve("model.mil")));
        }
        try (AneProgram p = AneProgram.compile(MIL, Map.of(), List.of(new SurfaceSpec("x", BYTES)), List.of(new SurfaceSpec("y", BYTES)), roomy())) {
            assertEquals(sha256(mil) + "_" + sha256(new byte[4]) + "_" + sha256(), p.identifier(), "@{}: the hash of the 4-byte prefix alone");
        }
        // the key order is the sorted one, whatever order the dictionary was built in: swapping the keys swaps the blobs
        try (AneProgram p = AneProgram.compile(MIL, Map.of("@model_path/weights/c.bin", a, "@model_path/weights/b.bin", b),
                List.of(new SurfaceSpec("x", BYTES)), List.of(new SurfaceSpec("y", BYTES)), roomy())) {
            assertEquals(sha256(mil) + "_" + sha256(new byte[4], b, a) + "_" + sha256(), p.identifier());
        }
    }

    @Test
    void anIdentifierThatCannotNameADirectoryIsOneAneLineAndNothingIsWritten() {
        var nul = assertThrows(AneException.class, () -> AneProgram.directoryName("a\0b"));
        assertTrue(nul.getMessage().contains("contains a NUL character"), nul.getMessage());
        assertEquals("x".repeat(255), AneProgram.directoryName("x".repeat(255)));
        for (String bad : List.of("a/b", "..", ".", "", "x".repeat(256))) {
            fake.setIdentifier(bad);
            CompileBudget budget = roomy();
            var e = assertThrows(AneException.class, () -> compileOne(budget), bad);
            assertTrue(e.getMessage().startsWith("[ane] hexStringIdentifier returned "), e.getMessage());
            assertTrue(e.getMessage().contains("cannot name the model directory"), e.getMessage());
            assertFalse(e.getMessage().contains("\n"), e.getMessage());
            assertEquals(-1, indexOf("compileWithQoS:options:error:"), "refused before compile");
        }
        fake.setIdentifier(null);
        try (var files = Files.list(tmp)) {
            assertEquals(List.of(), files.toList(), "nothing written outside the temp dir");
        } catch (java.io.IOException io) {
            fail(io);
        }
        assertEquals(0, fake.liveObjects(), "leaked: " + fake.liveDescription());
    }

    @Test
    void aNilWeightsDictionaryOrAnEmptyEntryMakesTheDescriptorNilAsTheFrameworkDoes() {
        ane4j.backend.ane.ffm.ObjC objc = ane4j.backend.ane.ffm.ObjC.get();
        try (var pool = objc.pool()) {
            MemorySegment mil = ane4j.backend.ane.ffm.Foundation.data(MIL.getBytes(StandardCharsets.UTF_8));
            var nil = assertThrows(AneException.class,
                    () -> ane4j.backend.ane.ffm.AneInMemoryModelDescriptor.modelWithMILText(mil, MemorySegment.NULL));
            assertTrue(nil.getMessage().startsWith("[modelWithMILText:weights:optionsPlist:] returned nil"), nil.getMessage());
            var f = new java.util.LinkedHashMap<MemorySegment, MemorySegment>();
            f.put(ane4j.backend.ane.ffm.Foundation.string("@model_path/weights/w.bin"), ane4j.backend.ane.ffm.Foundation.emptyDictionary());
            MemorySegment emptyEntry = ane4j.backend.ane.ffm.Foundation.dictionary(f);
            assertThrows(AneException.class, () -> ane4j.backend.ane.ffm.AneInMemoryModelDescriptor.modelWithMILText(mil, emptyEntry));
            assertNotEquals(MemorySegment.NULL, ane4j.backend.ane.ffm.AneInMemoryModelDescriptor.modelWithMILText(mil,
                    ane4j.backend.ane.ffm.Foundation.emptyDictionary()), "@{} is accepted (every weight-free maderix program)");
        }
        assertEquals(List.of("weights entry 0 is not {offset: NSNumber, data: NSData}"), fake.errors(), "the empty entry is also a contract error");
        fake.reset();
    }

    @Test
    void identicalProgramsShareOneLoadedModelAndItsDirectoryUntilTheLastCloses() {
        CompileBudget budget = roomy();
        AneProgram first = compileOne(budget);
        AneProgram second = compileOne(budget);
        assertEquals(first.identifier(), second.identifier(), "the identifier is content-derived");
        assertEquals(AneProgram.Origin.COMPILED, first.origin());
        assertEquals(AneProgram.Origin.SHARED, second.origin());
        assertEquals(1, budget.used(), "compiled once");
        assertEquals(List.of("compileWithQoS:options:error:", "loadWithQoS:options:error:"), fake.log().stream()
                .map(FakeObjc.Entry::selector).filter(x -> x.startsWith("compileWith") || x.startsWith("loadWith")).toList(), "and loaded once");
        assertNotEquals(first.input("x").ref(), second.input("x").ref(), "each program has surfaces of its own");
        first.evaluate();
        second.evaluate();
        first.close();
        assertEquals(-1, indexOf("unloadWithQoS:error:"), "no unload while the other program uses the model");
        assertTrue(Files.exists(second.directory().resolve("model.mil")));
        second.evaluate();
        second.close();
        assertFalse(Files.exists(second.directory()));
        assertEquals(1, fake.log().stream().filter(e -> "unloadWithQoS:error:".equals(e.selector())).count());
        try (AneProgram other = compileOne(budget, 2)) {
            assertNotEquals(first.identifier(), other.identifier(), "different weights, different id");
        }
        assertEquals(0, fake.liveObjects(), "leaked: " + fake.liveDescription());
    }

    @Test
    void aProgramTheDaemonHasLoadsWithoutCompileUntilItIsPurged() {
        CompileBudget budget = roomy();
        compileOne(budget).close();   // compiled, loaded, unloaded: aned keeps the compiled program (the public probe ane_cache_probe2.m, docs/ane-audit.md F2)
        assertTrue(Files.isDirectory(fake.daemonDir().resolve(identifier(1))));
        int logAt = fake.log().size();
        try (AneProgram p = compileOne(budget)) {
            assertEquals(AneProgram.Origin.DAEMON_CACHE, p.origin());
            assertEquals(0, p.compileNanos());
            p.evaluate();
        }
        List<FakeObjc.Entry> sends = fake.log().subList(logAt, fake.log().size()).stream().filter(FakeObjc.Entry::isAneSend).toList();
        assertEquals("YES", sends.stream().filter(e -> e.selector().equals("compiledModelExists")).findFirst().orElseThrow().result());
        assertTrue(sends.stream().noneMatch(e -> e.selector().startsWith("compileWithQoS")), "no compile");
        assertEquals(1, budget.used());
        assertEquals(1, fake.daemonLoads());

        ane4j.backend.ane.ffm.ObjC objc = ane4j.backend.ane.ffm.ObjC.get();
        try (var pool = objc.pool()) {   // purgeCompiledModel on a model of the same identifier drops aned's program
            MemorySegment d = ane4j.backend.ane.ffm.AneInMemoryModelDescriptor.modelWithMILText(
                    ane4j.backend.ane.ffm.Foundation.data(MIL.getBytes(StandardCharsets.UTF_8)), weightsOf(blob(1)));
            var m = ane4j.backend.ane.ffm.AneInMemoryModel.inMemoryModelWithDescriptor(d);
            assertTrue(m.compiledModelExists());
            m.purgeCompiledModel();
            assertFalse(m.compiledModelExists());
        }
        try (AneProgram p = compileOne(budget)) {
            assertEquals(AneProgram.Origin.COMPILED, p.origin(), "purged: compiled again");
        }
        assertEquals(2, budget.used());
    }

    private static MemorySegment weightsOf(byte[] blob) {
        var entry = new java.util.LinkedHashMap<MemorySegment, MemorySegment>();
        entry.put(ane4j.backend.ane.ffm.Foundation.string("offset"), ane4j.backend.ane.ffm.Foundation.number(0));
        entry.put(ane4j.backend.ane.ffm.Foundation.string("data"), ane4j.backend.ane.ffm.Foundation.data(blob));
        var w = new java.util.LinkedHashMap<MemorySegment, MemorySegment>();
        w.put(ane4j.backend.ane.ffm.Foundation.string("@model_path/weights/w.bin"), ane4j.backend.ane.ffm.Foundation.dictionary(entry));
        return ane4j.backend.ane.ffm.Foundation.dictionary(w);
    }

    @Test
    void badWeightKeysAndSurfacesAreRejectedBeforeAnyNativeCall() {
        CompileBudget budget = roomy();
        var noPrefix = assertThrows(IllegalArgumentException.class, () -> AneProgram.compile(MIL, Map.of("weights/w.bin", blob(1)),
                List.of(new SurfaceSpec("x", BYTES)), List.of(new SurfaceSpec("y", BYTES)), budget));
        assertTrue(noPrefix.getMessage().startsWith("[ane.weights] key \"weights/w.bin\" must start with \"@model_path/\""));
        assertThrows(IllegalArgumentException.class, () -> AneProgram.compile(MIL, Map.of("@model_path/../../etc/x", blob(1)),
                List.of(new SurfaceSpec("x", BYTES)), List.of(new SurfaceSpec("y", BYTES)), budget));
        var twice = assertThrows(IllegalArgumentException.class, () -> AneProgram.compile(MIL, Map.of(),
                List.of(new SurfaceSpec("x", BYTES), new SurfaceSpec("x", 8)), List.of(new SurfaceSpec("y", BYTES)), budget));
        assertEquals("[ane.surface] input \"x\" is listed twice", twice.getMessage());
        assertEquals(0, budget.used());
        assertEquals(List.of(), fake.log().stream().filter(FakeObjc.Entry::isAneSend).toList());
    }

    @Test
    void anObjectiveCExceptionInsideAFrameworkCallIsAnAneExceptionAndTheJvmGoesOn() {
        assertNotNull(ane4j.backend.ane.ffm.ObjC.get().exceptionGuard(), "the fake exports the trampoline's entry point");
        fake.setThrow("compileWithQoS:options:error:", "NSInternalInconsistencyException", "fake: the compiler service went away");
        CompileBudget budget = roomy();
        FrameworkException e = assertThrows(FrameworkException.class, () -> compileOne(budget));
        assertEquals("[compileWithQoS:options:error:] raised NSInternalInconsistencyException: fake: the compiler service went away"
                + " (an Objective-C exception inside the framework; the process goes on)", e.getMessage());
        assertEquals("compileWithQoS:options:error:", e.selector());
        assertEquals("NSInternalInconsistencyException", e.name());
        assertEquals("fake: the compiler service went away", e.reason());
        assertEquals(0, fake.liveObjects(), "leaked: " + fake.liveDescription());
        try (var files = Files.list(tmp)) {
            assertEquals(List.of(), files.toList(), "the model directory is cleaned up");
        } catch (java.io.IOException io) {
            fail(io);
        }

        fake.setThrow("evaluateWithQoS:options:request:error:", "NSGenericException", "fake: request rejected");
        try (AneProgram p = compileOne(budget)) {   // the JVM and the runtime go on: compile, then a failing evaluate
            var ev = assertThrows(FrameworkException.class, p::evaluate);
            assertEquals("evaluateWithQoS:options:request:error:", ev.selector());
            fake.setThrow(null, null, null);
            p.evaluate();
        }
        // an exception the framework raises by itself: a selector it does not know
        try (var pool = ane4j.backend.ane.ffm.ObjC.get().pool()) {
            var bogus = assertThrows(FrameworkException.class,
                    () -> ane4j.backend.ane.ffm.ObjC.get().sendId(ane4j.backend.ane.ffm.Foundation.string("x"), "noSuchSelector"));
            assertEquals("NSInvalidArgumentException", bogus.name());
            assertEquals("-[NSString noSuchSelector]: unrecognized selector sent to instance", bogus.reason());
        }
        assertEquals(1, fake.errors().size(), fake.errors().toString());   // the fake also flags the unknown selector
        fake.reset();
    }

    @Test
    void closeIsIdempotentAndEvaluateAfterCloseFails() {
        AneProgram p = compileOne(roomy());
        p.close();
        int n = fake.log().size();
        p.close();
        assertEquals(n, fake.log().size(), "second close sends nothing");
        assertThrows(IllegalStateException.class, p::evaluate);
    }

    @Test
    void surfaceListsAreReadOnlyAndLookupNamesTheChoices() {
        try (AneProgram p = compileOne(roomy())) {
            List<AneSurface> in = new ArrayList<>(p.inputs());
            assertThrows(UnsupportedOperationException.class, () -> p.inputs().clear());
            assertEquals(in, p.inputs());
            var e = assertThrows(IllegalArgumentException.class, () -> p.input("nope"));
            assertEquals("[ane.surface] no input named \"nope\"; have [x]", e.getMessage());
        }
    }
}
