package ane4j.backend.ane;

import ane4j.backend.ane.ffm.FakeObjc;
import ane4j.cli.DoctorCommand;
import ane4j.golden.Json;
import org.junit.jupiter.api.AfterEach;
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

/** The ANE half of {@code ane4j doctor}, on the fake runtime whose evaluate runs the reference interpreter. */
class DoctorOnFakeTest {
    @TempDir Path tmp;
    FakeObjc fake;
    RefOnFake ane;

    @AfterEach
    void clean() {
        if (ane != null) ane.close();
        assertNull(fake.hookFailure(), () -> "evaluate hook failed: " + fake.hookFailure());
        assertEquals(List.of(), fake.errors());
    }

    @Test
    @SuppressWarnings("unchecked")
    void everyProbeCompilesLoadsAndMatchesTheReferenceThroughTheAnePath() throws Exception {
        fake = FakeObjc.get();
        fake.setTmpdir(tmp);
        fake.setAneSubType("h15g");
        ane = new RefOnFake(fake, tmp);
        Path json = tmp.resolve("doctor.json");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        AneBackend backend = new AneBackend(new AneBackend.Options(null, null, null, CompileBudget.LEAK_SUSPECT_AFTER));
        int code = DoctorCommand.run(new String[] {"--json", json.toString()}, new PrintStream(out, true, StandardCharsets.UTF_8),
                System.err, backend, null);
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, text);
        assertTrue(text.contains("chip:    M3 (h15g)\n"), text);
        assertTrue(text.contains("dialect: 1.3/ios18\n"), text);
        assertTrue(text.contains("ane:     available\n"), text);
        assertEquals(13, ane.evaluated().size() / 2, "each probe evaluated twice on the (fake) ANE");
        assertEquals(13, backend.compileCount() + backend.daemonCacheLoads() + backend.sharedLoads(), "identical programs compile once");
        Map<String, Object> report = (Map<String, Object>) Json.parse(Files.readString(json));
        assertEquals(true, report.get("aneAvailable"));
        for (Map<String, Object> p : (List<Map<String, Object>>) report.get("probes")) {
            assertEquals("ane", p.get("backend"), p.toString());
            assertEquals(0.0, ((Number) p.get("maxAbsErr")).doubleValue(), p + ": the same interpreter ran on both sides");
            assertTrue(((Number) p.get("loadMs")).doubleValue() >= 0, p.toString());
        }
        assertEquals(0, fake.liveObjects(), "leaked: " + fake.liveDescription());
    }

    @Test
    void aFailingCompileIsAFailedProbeNotACrash() {
        fake = FakeObjc.get();
        fake.setTmpdir(tmp);
        fake.setFailCompile("ANECCompile() FAILED");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = DoctorCommand.run(new String[0], new PrintStream(out, true, StandardCharsets.UTF_8), System.err,
                new AneBackend(new AneBackend.Options(null, null, null, 100)), null);
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(1, code);
        assertTrue(text.contains("FAIL: [compileWithQoS:options:error:] ANECCompile() FAILED"), text);
        assertTrue(text.contains("13 of 13 probes FAILED"), text);
    }
}
