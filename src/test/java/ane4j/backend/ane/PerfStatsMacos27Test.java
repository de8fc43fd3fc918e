package ane4j.backend.ane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.AneException;
import ane4j.backend.ane.ffm.AneInMemoryModel;
import ane4j.backend.ane.ffm.AneInMemoryModelDescriptor;
import ane4j.backend.ane.ffm.AutoreleasePool;
import ane4j.backend.ane.ffm.FakeObjc;
import ane4j.backend.ane.ffm.Foundation;
import ane4j.backend.ane.ffm.IOSurfaces;
import ane4j.backend.ane.ffm.ObjC;
import ane4j.backend.ane.ffm.PerfStatsRequests;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * H2 of the fake's macOS 27 profile (src/test/c/fakeobjc.c): {@code -[_ANERequest validate]} sends {@code -count} to the
 * perfStats argument, so a single {@code _ANEPerformanceStats} (any object without {@code count}) raises
 * NSInvalidArgumentException at evaluate (Epistates/pmetal crates/pmetal-metal/src/ane/runtime.rs,
 * perf_stats_request_supported; docs/macos27-ane.md C6). ane4j passes nil, so no test of the backend ever meets the rule;
 * this one shows both halves: ane4j's request under the 27 profile carries nil and evaluates, and the same evaluate with a
 * perfStats object fails there (as one line through the exception guard) while the 26 profile takes it. Were ane4j to
 * pass a perfStats object, the first test would fail on the request's argument and on the evaluate. Not yet run on
 * Apple hardware.
 */
class PerfStatsMacos27Test {
    @TempDir Path tmp;
    FakeObjc fake;

    @BeforeEach
    void setUp() {
        fake = FakeRuntime.compilingInto(tmp);
        fake.setMacos(27);
    }

    @AfterEach
    void back() {
        fake.setMacos(26);
        assertEquals(0, fake.poolDepth(), "every autorelease pool popped");
    }

    @Test
    void aneForJsRequestCarriesNilPerfStatsAndEvaluatesUnderMacos27() {
        try (AneProgram p = AneProgramContractTest.compileOne(AneProgramContractTest.roomy())) {
            p.evaluate();
        }
        FakeObjc.Entry request = fake.log().stream().filter(e -> e.isAneSend()
                && e.selector().startsWith("requestWithInputs:")).findFirst().orElseThrow();
        assertEquals("nil", request.args().get(5), "perfStats: " + request.args());
        assertEquals("nil", request.args().get(4), "weightsBuffer: " + request.args());
        assertEquals(List.of(), fake.errors(), "contract violations seen by the fake");
    }

    @Test
    void aPerfStatsObjectWithoutCountFailsEvaluateUnderMacos27Only() throws Exception {
        AneException e = assertThrows(AneException.class, () -> evaluateWithPerfStats());
        assertTrue(e.getMessage().contains("NSInvalidArgumentException") && e.getMessage().contains("count"), e.getMessage());
        assertTrue(fake.errors().stream().anyMatch(x -> x.contains("gets -count on macOS 27")), fake.errors().toString());

        fake = FakeRuntime.compilingInto(tmp);                       // a fresh fake, the 26 profile
        fake.setMacos(26);
        evaluateWithPerfStats();                                     // 26: validate does not count perfStats
        assertTrue(fake.errors().stream().noneMatch(x -> x.contains("-count")), fake.errors().toString());
    }

    /** Compiles, loads and evaluates the contract test's program with a request whose perfStats is an NSNumber. */
    private void evaluateWithPerfStats() throws Exception {
        ObjC objc = ObjC.get();
        try (AutoreleasePool pool = objc.pool()) {
            byte[] mil = AneProgramContractTest.MIL.getBytes(StandardCharsets.UTF_8), blob = AneProgramContractTest.blob(3);
            MemorySegment weights = Foundation.dictionary(Map.of(Foundation.string("@model_path/weights/w.bin"),
                    Foundation.dictionary(Map.of(Foundation.string("offset"), Foundation.number(0), Foundation.string("data"), Foundation.data(blob)))));
            AneInMemoryModel model = AneInMemoryModel.inMemoryModelWithDescriptor(AneInMemoryModelDescriptor.modelWithMILText(Foundation.data(mil), weights));
            Path dir = tmp.resolve(model.hexStringIdentifier());
            Files.createDirectories(dir.resolve("weights"));
            Files.write(dir.resolve("model.mil"), mil);
            Files.write(dir.resolve("weights/w.bin"), blob);
            model.compileWithQoS(AneInMemoryModel.QOS_DEFAULT, Foundation.emptyDictionary());
            model.loadWithQoS(AneInMemoryModel.QOS_DEFAULT, Foundation.emptyDictionary());
            MemorySegment in = IOSurfaces.create(AneProgramContractTest.BYTES), out = IOSurfaces.create(AneProgramContractTest.BYTES);
            try {
                MemorySegment request = PerfStatsRequests.withPerfStats(in, out, Foundation.number(1));
                model.evaluateWithQoS(AneInMemoryModel.QOS_DEFAULT, Foundation.emptyDictionary(), request);
            } finally {
                try { model.unloadWithQoS(AneInMemoryModel.QOS_DEFAULT); } catch (AneException ignored) { }
                IOSurfaces.release(in);
                IOSurfaces.release(out);
            }
        }
    }
}
