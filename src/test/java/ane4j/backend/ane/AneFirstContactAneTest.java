package ane4j.backend.ane;

import ane4j.backend.FrameworkException;
import ane4j.backend.AneException;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ane.ffm.AneInMemoryModel;
import ane4j.backend.ane.ffm.AneInMemoryModelDescriptor;
import ane4j.backend.ane.ffm.Foundation;
import ane4j.backend.ane.ffm.ObjC;
import ane4j.backend.ref.RefBackend;
import ane4j.programs.AcceptancePrograms;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * On Apple silicon only: the framework behaviour the fake runtime models (rules D1–D5, C1, A1–A3, L1, U1, X1 at the
 * top of {@code src/test/c/fakeobjc.c}), checked against the real AppleNeuralEngine framework on the first Mac run.
 * Each test prints one {@code [ane-first-contact]} line for the bug report. Run alone
 * ({@code mvn test -Dtest='*AneTest'}): the fake and the real framework cannot both be loaded in one JVM. Not yet run on
 * Apple hardware.
 */
@EnabledOnOs(OS.MAC)
class AneFirstContactAneTest {
    static AneBackend ane;

    @BeforeAll
    static void ane() {
        AneBackend b = new AneBackend();
        assumeTrue(b.isAvailable(), () -> "ANE not available: " + b.unavailableReason());
        ane = b;
        System.out.println("[ane-first-contact] chip " + b.chip() + ", exception guard " + b.exceptionGuard());
    }

    /** An fp16 1x1 conv with weights no earlier run compiled (a fresh identifier, so aned cannot have it yet). */
    static Program freshConv() {
        int seed = (int) (System.nanoTime() ^ ProcessHandle.current().pid());
        return Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(1, 64, 1, 64));
            f.output(f.named("y", f.conv(x, f.weight("W", Mil.fp16(64, 64, 1, 1), AcceptancePrograms.uniform(seed, 64 * 64, 0.125f)))));
        }).build();
    }

    static String sha256(byte[]... parts) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        for (byte[] p : parts) md.update(p);
        return HexFormat.of().withUpperCase().formatHex(md.digest());
    }

    @Test
    void theIdentifierIsThreeUpperCaseSha256DigestsOfMilWeightsAndOptions() throws Exception {   // D3, D4, F1
        Program p = freshConv();
        try (AneKernel k = (AneKernel) ane.compile(p)) {
            String id = k.program().identifier();
            System.out.println("[ane-first-contact] identifier " + id);
            assertTrue(id.matches("[0-9A-F]{64}_[0-9A-F]{64}_[0-9A-F]{64}"), id);
            Map<String, byte[]> weights = new TreeMap<>(p.weights().encoded());
            byte[][] parts = new byte[weights.size() + 1][];
            parts[0] = new byte[4];
            int i = 1;
            for (byte[] w : weights.values()) parts[i++] = w;
            String expected = sha256(k.milText().getBytes(StandardCharsets.UTF_8)) + "_" + sha256(parts) + "_" + sha256();
            assertEquals(expected, id, "the decompiled _ANEInMemoryModelDescriptor's rule (docs/ane-audit.md F1)");
        }
    }

    @Test
    void aNilWeightsDictionaryOrAnEmptyEntryGivesANilDescriptorAndAtSignBracesDoesNot() {   // D1, D2
        ObjC objc = ObjC.get();
        try (var pool = objc.pool()) {
            MemorySegment mil = Foundation.data(ane.milText(freshConv(), "main").getBytes(StandardCharsets.UTF_8));
            assertThrows(AneException.class, () -> AneInMemoryModelDescriptor.modelWithMILText(mil, MemorySegment.NULL));
            Map<MemorySegment, MemorySegment> w = new LinkedHashMap<>();
            w.put(Foundation.string("@model_path/weights/w.bin"), Foundation.emptyDictionary());
            assertThrows(AneException.class, () -> AneInMemoryModelDescriptor.modelWithMILText(mil, Foundation.dictionary(w)));
            assertNotEquals(MemorySegment.NULL, AneInMemoryModelDescriptor.modelWithMILText(mil, Foundation.emptyDictionary()));
        }
        System.out.println("[ane-first-contact] nil weights and an empty entry: nil descriptor (as decompiled)");
    }

    @Test
    void compileLeavesTheDataFileAndUnloadDeletesTheDirectory() {   // C1, U1, F13
        Path dir;
        AneProgram program;
        try (AneKernel k = (AneKernel) ane.compile(freshConv())) {
            program = k.program();
            dir = program.directory();
            try (var files = Files.list(dir)) {
                System.out.println("[ane-first-contact] after compile " + dir.getFileName() + ": " + files.map(f -> f.getFileName().toString()).sorted().toList());
            } catch (java.io.IOException e) {
                fail(e);
            }
            assertTrue(Files.isRegularFile(dir.resolve("data")), "saveModelFiles wrote entry[allKeys.firstObject] to <dir>/data");
        }
        System.out.println("[ane-first-contact] directory left after unloadWithQoS: " + program.unloadLeftDirectory());
        assertEquals(Boolean.FALSE, program.unloadLeftDirectory(), "unloadWithQoS removed NSTemporaryDirectory()/<identifier> itself");
        assertFalse(Files.exists(dir));
    }

    @Test
    void aProgramAnedCompiledLoadsWithoutCompileInThisAndInAnotherProcessUntilPurged() throws Exception {   // A1–A3, L1, F2
        Program p = freshConv();
        String id;
        try (AneKernel k = (AneKernel) ane.compile(p)) {
            assertEquals(AneProgram.Origin.COMPILED, k.origin(), "a fresh identifier");
            id = k.program().identifier();
        }
        AneBackend restarted = new AneBackend();
        try (AneKernel k = (AneKernel) restarted.compile(p); Kernel r = new RefBackend().compile(p)) {
            assertEquals(AneProgram.Origin.DAEMON_CACHE, k.origin(), "loadWithQoS alone");
            Map<String, TensorBuffer> in = Map.of("x", TensorBuffer.random(r.inputs().get(0).type(), 3, 1f));
            ane4j.backend.OutputDiff d = ane4j.backend.OutputDiff.of(r.evaluate(in).get("y"), k.evaluate(in).get("y"));
            assertTrue(d.within(ane4j.backend.OutputDiff.FP16_ATOL, ane4j.backend.OutputDiff.FP16_RTOL), "a daemon-cached kernel computes: " + d);
            System.out.printf("[ane-first-contact] load from aned's cache: %.2f ms (compile of the same: not paid)%n", k.program().loadNanos() / 1e6);
        }
        assertEquals(0, restarted.compileCount());

        // another process: the same program (its MIL and weight files in a folder), loaded from aned without a compile
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path folder = Files.createTempDirectory("ane4j-first-contact");
        Files.writeString(folder.resolve("model.mil"), ane.milText(p, "main"));
        for (var e : p.weights().encoded().entrySet()) {
            Path f = folder.resolve(e.getKey().substring(AneProgram.MODEL_PATH_PREFIX.length()));
            Files.createDirectories(f.getParent());
            Files.write(f, e.getValue());
        }
        Process child = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                Child.class.getName(), folder.toString()).redirectErrorStream(true).start();
        String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(child.waitFor(120, TimeUnit.SECONDS));
        System.out.println("[ane-first-contact] another process: " + out);
        assertTrue(out.endsWith("identifier=" + id + " origin=DAEMON_CACHE compiles=0"), out);

        ObjC objc = ObjC.get();
        try (var pool = objc.pool()) {
            AneInMemoryModel m = AneInMemoryModel.inMemoryModelWithDescriptor(AneInMemoryModelDescriptor.modelWithMILText(
                    Foundation.data(ane.milText(p, "main").getBytes(StandardCharsets.UTF_8)), weightsOf(p)));
            assertTrue(m.compiledModelExists());
            m.purgeCompiledModel();
            System.out.println("[ane-first-contact] compiledModelExists after purgeCompiledModel: " + m.compiledModelExists());
            assertFalse(m.compiledModelExists());
        }
        try (AneKernel k = (AneKernel) new AneBackend().compile(p)) {
            assertEquals(AneProgram.Origin.COMPILED, k.origin(), "purged: compiled again");
        }
    }

    static MemorySegment weightsOf(Program p) {
        Map<MemorySegment, MemorySegment> w = new LinkedHashMap<>();
        for (var e : new TreeMap<>(p.weights().encoded()).entrySet()) {
            Map<MemorySegment, MemorySegment> entry = new LinkedHashMap<>();
            entry.put(Foundation.string("offset"), Foundation.number(0));
            entry.put(Foundation.string("data"), Foundation.data(e.getValue()));
            w.put(Foundation.string(e.getKey()), Foundation.dictionary(entry));
        }
        return Foundation.dictionary(w);
    }

    /** The second process: compiles the program in the folder (argv[0]) and prints how it got it. */
    public static final class Child {
        public static void main(String[] args) throws Exception {
            Path folder = Path.of(args[0]);
            Program p = ane4j.mil.MilParser.parse(Files.readString(folder.resolve("model.mil")), folder);
            AneBackend b = new AneBackend();
            try (AneKernel k = (AneKernel) b.compile(p)) {
                System.out.println("pid " + ProcessHandle.current().pid() + " identifier=" + k.program().identifier()
                        + " origin=" + k.origin() + " compiles=" + b.compileCount());
            }
        }
    }

    @Test
    void anObjectiveCExceptionFromTheFrameworkBecomesAFrameworkException() {   // X1, F9
        assumeTrue(ane.exceptionGuard() != null, "no exception guard built (install.sh needs clang); an exception would abort the JVM");
        ObjC objc = ObjC.get();
        try (var pool = objc.pool()) {
            FrameworkException e = assertThrows(FrameworkException.class, () -> objc.sendId(Foundation.string("x"), "ane4jNoSuchSelector"));
            System.out.println("[ane-first-contact] " + e.getMessage());
            assertEquals("NSInvalidArgumentException", e.name());
            assertTrue(e.reason().contains("unrecognized selector"), e.reason());
        }
        try (AneKernel k = (AneKernel) ane.compile(freshConv())) {   // and the process goes on
            assertEquals(AneProgram.Origin.COMPILED, k.origin());
        }
    }

    @Test
    void theDialectThisChipCompiles() {   // F7
        try (AneKernel k = (AneKernel) ane.compile(freshConv())) {
            System.out.println("[ane-first-contact] MIL dialect " + ane.dialectChoice());
            assertEquals(k.dialect(), ane.dialect(), "the answer is the printed line; either dialect may be right on M1/M2");
        }
    }
}
