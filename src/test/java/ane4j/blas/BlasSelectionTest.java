package ane4j.blas;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The selection property, its log line, and Accelerate's symbol resolution. */
class BlasSelectionTest {
    private static final Logger JUL = Logger.getLogger("ane4j.blas");
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        @Override public void publish(LogRecord r) { records.add(r); }
        @Override public void flush() {}
        @Override public void close() {}
    };
    private String saved;

    @BeforeEach
    void capture() {
        saved = System.getProperty(Blas.PROPERTY);
        JUL.addHandler(handler);
    }

    @AfterEach
    void restore() {
        JUL.removeHandler(handler);
        if (saved == null) System.clearProperty(Blas.PROPERTY);
        else System.setProperty(Blas.PROPERTY, saved);
        Blas.reset();
    }

    @Test
    void javaPropertySelectsTheFallbackWithOneLogLine() {
        System.setProperty(Blas.PROPERTY, "java");
        Blas.reset();
        Sgemm s = Blas.get();
        assertEquals("java-vector", s.name());
        assertSame(s, Blas.get());
        assertEquals(1, records.size(), "exactly one log line: " + records);
        LogRecord r = records.getFirst();
        assertEquals(Level.INFO, r.getLevel());
        assertTrue(r.getMessage().contains("pure Java (java-vector") && r.getMessage().contains("-Dane4j.blas=java"),
                r.getMessage());
        // and it computes
        float[] c = new float[1];
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, 1, 1, 2, 1f, new float[]{2, 3}, 0, 2,
                new float[]{4, 5}, 0, 1, 0f, c, 0, 1);
        assertEquals(23f, c[0]);
    }

    @Test
    void automaticPrefersTheNativeLibrary() {
        System.clearProperty(Blas.PROPERTY);
        Sgemm s = Blas.select(null, "-Dane4j.blas");
        Sgemm expected = Accelerate.isMacOs() ? Blas.accelerate().orElse(null) : Blas.openBlas().orElse(null);
        if (expected == null) expected = Blas.java();
        // the calibration may give some shape classes (or all) to the Java GEMM; the native library stays the default
        if (s instanceof RoutedSgemm r) assertSame(expected, r.forShape(256, 768, 768) == Blas.java() ? expected : r.forShape(256, 768, 768));
        else assertTrue(s == expected || s == Blas.java(), s.description());
        assertEquals(1, records.size());
        assertTrue(records.getFirst().getMessage().contains("automatic"), records.getFirst().getMessage());
    }

    @Test
    void unavailableLibraryFallsBackWithAWarning() {
        // Accelerate never loads on Linux; on a Mac the same holds for this test's inverse, so only run it off macOS
        if (Accelerate.isMacOs()) return;
        Sgemm s = Blas.select("accelerate", "-Dane4j.blas");
        assertEquals("java-vector", s.name());
        assertEquals(Level.WARNING, records.getFirst().getLevel());
        assertTrue(records.getFirst().getMessage().contains("did not load"), records.getFirst().getMessage());
    }

    @Test
    void unknownChoiceIsAnError() {
        var e = assertThrows(IllegalArgumentException.class, () -> Blas.select("mkl", "-Dane4j.blas"));
        assertEquals("[blas] unknown -Dane4j.blas=mkl; use openblas, accelerate or java (or leave it unset for automatic)",
                e.getMessage());
    }

    @Test
    void accelerateResolvesTheNewLapackSymbolFirst() {
        MemorySegment newSym = MemorySegment.ofAddress(0x1000), oldSym = MemorySegment.ofAddress(0x2000),
                ilp = MemorySegment.ofAddress(0x3000);
        Map<String, MemorySegment> modern = Map.of("cblas_sgemm$NEWLAPACK", newSym, "cblas_sgemm", oldSym,
                "cblas_sgemm$NEWLAPACK$ILP64", ilp);
        Accelerate.Symbol s = Accelerate.resolve(name -> Optional.ofNullable(modern.get(name))).orElseThrow();
        assertEquals("cblas_sgemm$NEWLAPACK", s.name());
        assertEquals(0x1000, s.address().address());
        assertFalse(s.deprecated());

        // before macOS 13.3 only the plain name exists
        Map<String, MemorySegment> old = Map.of("cblas_sgemm", oldSym);
        Accelerate.Symbol o = Accelerate.resolve(name -> Optional.ofNullable(old.get(name))).orElseThrow();
        assertEquals("cblas_sgemm", o.name());
        assertTrue(o.deprecated());

        // the ILP64 variant alone is not usable with the int descriptor
        Map<String, MemorySegment> ilpOnly = Map.of("cblas_sgemm$NEWLAPACK$ILP64", ilp);
        assertTrue(Accelerate.resolve(name -> Optional.ofNullable(ilpOnly.get(name))).isEmpty());
    }

    @Test
    void accelerateProbeOffMacOsSaysWhy() {
        if (Accelerate.isMacOs()) return;
        assertTrue(Blas.accelerate().isEmpty());
        assertTrue(Accelerate.PROBE.detail().contains("only on macOS"), Accelerate.PROBE.detail());
    }
}
