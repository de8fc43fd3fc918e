package ane4j.backend;

import ane4j.backend.ref.RefBackend;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

class BackendsTest {
    @Test
    void propertyWinsOverEnvironment() {
        var s = Backends.choose("ref", "ane", "Linux", "amd64");
        assertEquals("ref", s.backend().name());
        assertTrue(s.reason().contains("-Dane4j.backend=ref"), s.reason());
    }

    @Test
    void environmentIsUsedWithoutProperty() {
        var s = Backends.choose(null, " REF ", "Linux", "amd64");
        assertInstanceOf(RefBackend.class, s.backend());
        assertTrue(s.reason().contains("ANE4J_BACKEND"), s.reason());
    }

    @Test
    void automaticFallsBackToRefOffAppleSilicon() {
        var s = Backends.choose("", null, "Linux", "amd64");
        assertEquals("ref", s.backend().name());
        assertTrue(s.reason().contains("not macOS on Apple silicon"), s.reason());
        var withFake = Backends.choose("", null, "Linux", "amd64", "/some/libfakeobjc.so");   // only an explicit ane loads a replacement runtime
        assertEquals("ref", withFake.backend().name());
        assertTrue(withFake.reason().contains("not macOS on Apple silicon"), withFake.reason());
    }

    @Test
    void automaticNeverPicksTheAneBelowMacos15() {
        System.setProperty(MacOs.PROPERTY, "14.6");
        try {
            var s = Backends.choose("", null, "Mac OS X", "aarch64");
            assertEquals("ref", s.backend().name());
            assertEquals("automatic: macOS 14.6 is older than 15, the oldest the ANE path is written for (use --backend ane to try it)", s.reason());
        } finally {
            System.clearProperty(MacOs.PROPERTY);
        }
    }

    @Test
    void macosVersionsParseAndOldSdkJdksDoNotMatter() {
        assertEquals(27, MacOs.parse("27.0 (26A428)").major());
        assertEquals("26A428", MacOs.parse("27.0 (26A428)").build());
        assertTrue(MacOs.parse("27.2").oneWeightFile() && MacOs.parse("27.2").rowsAt64Bytes());
        assertFalse(MacOs.parse("26.6.2").oneWeightFile());
        assertEquals("not macOS", MacOs.NONE.toString());
        var e = assertThrows(IllegalArgumentException.class, () -> MacOs.parse("Tahoe"));
        assertTrue(e.getMessage().startsWith("[ane4j.macos] 'Tahoe' is not a macOS version"), e.getMessage());
    }

    @Test
    void forcingAneWhereItIsMissingIsAnError() {
        var e = assertThrows(BackendException.class, () -> Backends.choose("ane", null, "Linux", "amd64"));
        assertTrue(e.getMessage().contains("not available"), e.getMessage());
        // on Apple silicon the answer is AneBackend.isAvailable(): false here, unless a test installed the fake runtime
        if (new ane4j.backend.ane.AneBackend().isAvailable()) {
            assertEquals("ane", Backends.choose("ane", null, "Mac OS X", "aarch64").backend().name());
        } else {
            var e2 = assertThrows(BackendException.class, () -> Backends.choose("ane", null, "Mac OS X", "aarch64"));
            assertTrue(e2.getMessage().contains("ane4j.backend.ane.AneBackend.isAvailable() is false"), e2.getMessage());
        }
    }

    @Test
    void unknownChoiceIsRejected() {
        var e = assertThrows(IllegalArgumentException.class, () -> Backends.choose("gpu", null, "Linux", "amd64"));
        assertTrue(e.getMessage().contains("gpu"));
    }

    @Test
    void compileBudgetIsEnforcedByRef() {
        Program p = Mil.program().function("main", f -> f.output(f.relu(f.input("x", Mil.fp16(1, 4, 1, 4))))).build();
        RefBackend b = new RefBackend(RefBackend.Options.ANE_LIKE.withCompileBudget(2L));
        b.compile(p).close();
        b.compile(p).close();
        assertEquals(2, b.compileCount());
        var e = assertThrows(CompileBudgetExceededException.class, () -> b.compile(p));
        assertEquals(2, e.count());
        assertEquals(2, e.budget());
        assertTrue(e.getMessage().contains("compile budget of 2") && e.getMessage().contains("restart"), e.getMessage());
        assertEquals(2, b.compileCount());
    }

    @Test
    void compileBudgetProperty() {
        System.setProperty(CountingBackend.BUDGET_PROPERTY, "1");
        try {
            RefBackend b = new RefBackend(RefBackend.Options.ANE_LIKE);
            assertEquals(1, b.compileBudget());
        } finally {
            System.clearProperty(CountingBackend.BUDGET_PROPERTY);
        }
        assertEquals(CountingBackend.UNLIMITED, new RefBackend(RefBackend.Options.ANE_LIKE).compileBudget());
    }
}
