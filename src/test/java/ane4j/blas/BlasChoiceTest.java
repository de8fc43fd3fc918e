package ane4j.blas;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static ane4j.blas.Calibration.ShapeClass.LARGE;
import static ane4j.blas.Calibration.ShapeClass.NARROW;
import static ane4j.blas.Calibration.ShapeClass.SMALL_K;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The core advice from CPU features, the choice from a calibration result, the cache, and their fallbacks. */
class BlasChoiceTest {
    // flags as /proc/cpuinfo lists them (subsets): an AVX-512 Xeon, an AVX2 desktop, an SSE-only VM
    static final CpuFeatures XEON = new CpuFeatures("amd64", "Intel(R) Xeon(R) Platinum 8581C",
            Set.of("sse", "sse2", "ssse3", "sse4_1", "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512cd",
                    "avx512bw", "avx512vl", "avx512_bf16", "amx_tile"));
    static final CpuFeatures DESKTOP = new CpuFeatures("amd64", "Intel(R) Core(TM) i7-8700", Set.of("sse4_2", "avx", "avx2", "fma"));
    static final CpuFeatures OLD = new CpuFeatures("amd64", "QEMU Virtual CPU", Set.of("sse", "sse2", "sse3"));
    static final CpuFeatures GRAVITON = new CpuFeatures("aarch64", "", Set.of("fp", "asimd", "sve", "asimddp"));
    static final String DEBIAN_0321 = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64";

    @Test
    void aFallbackCoreOnAKnownBetterCpuIsForced() {
        OpenBlasCore.Advice a = OpenBlasCore.advise(XEON, "Prescott", DEBIAN_0321);
        assertEquals(Optional.of("SkylakeX"), a.core());
        assertEquals("the library reported Prescott on an AVX-512 CPU it does not know", a.why());
        assertEquals(Optional.of("SkylakeX"), OpenBlasCore.advise(XEON, "Sandybridge", DEBIAN_0321).core());
        assertEquals(Optional.of("Haswell"), OpenBlasCore.advise(DESKTOP, "Prescott", DEBIAN_0321).core());
        assertEquals(CpuFeatures.X86Level.AVX512, XEON.x86Level());
        assertEquals(CpuFeatures.X86Level.AVX2, DESKTOP.x86Level());
    }

    @Test
    void theLibrarysOwnGoodChoiceIsKept() {
        // this machine: an AMD EPYC with AVX-512 on which 0.3.21 reports Cooperlake
        OpenBlasCore.Advice a = OpenBlasCore.advise(XEON, "Cooperlake", DEBIAN_0321);
        assertEquals(Optional.empty(), a.core());
        assertEquals("the library's own choice", a.why());
        assertEquals(Optional.empty(), OpenBlasCore.advise(DESKTOP, "Zen", DEBIAN_0321).core());
        assertEquals(Optional.empty(), OpenBlasCore.advise(OLD, "Prescott", DEBIAN_0321).core(), "nothing better to run there");
        // a core above the CPU's listed flags (a VM hiding flags) is not lowered either
        assertEquals(Optional.empty(), OpenBlasCore.advise(DESKTOP, "SkylakeX", DEBIAN_0321).core());
    }

    @Test
    void unknownNamesOtherBuildsAndArm64AreLeftAlone() {
        OpenBlasCore.Advice unknown = OpenBlasCore.advise(XEON, "GraniteRapids", DEBIAN_0321);
        assertEquals(Optional.empty(), unknown.core());
        assertTrue(unknown.why().contains("'GraniteRapids' unknown"), unknown.why());
        assertEquals(Optional.empty(), OpenBlasCore.advise(XEON, "", DEBIAN_0321).core());
        assertEquals(Optional.empty(), OpenBlasCore.advise(XEON, "Prescott", "OpenBLAS 0.3.21 NO_AFFINITY PRESCOTT MAX_THREADS=8").core(),
                "a build for one core ignores OPENBLAS_CORETYPE");
        assertEquals(Optional.empty(), OpenBlasCore.advise(GRAVITON, "armv8", "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY armv8").core());
        assertEquals("0.3.21", OpenBlasCore.version(DEBIAN_0321));
    }

    @Test
    void theChoiceFollowsTheCalibrationResult() {
        Sgemm nat = Blas.openBlas().orElse(Blas.javaScalar()), java = Blas.java();
        assumeTrue(nat != java, "needs a second GEMM besides the Java one");
        Sgemm routed = Blas.route(nat, java, calibration(1.3, 0.9, 0.5));
        RoutedSgemm r = assertInstanceOf(RoutedSgemm.class, routed);
        assertEquals(Set.of(SMALL_K), r.javaClasses());
        assertSame(java, r.forShape(256, 256, 48), "attention scores, head dim 48");
        assertSame(nat, r.forShape(256, 32, 256), "P·V");
        assertSame(nat, r.forShape(256, 768, 768));
        assertTrue(routed.description().endsWith(" for K < 128"), routed.description());
        // deterministic: the same result gives the same choice; the margin decides the edge
        assertEquals(Set.of(SMALL_K), ((RoutedSgemm) Blas.route(nat, java, calibration(1.3, 0.9, 0.5))).javaClasses());
        assertSame(nat, Blas.route(nat, java, calibration(1.09, 0.2, 1.0)));
        assertSame(java, Blas.route(nat, java, calibration(1.1, 1.5, 2.0)));
        assertEquals(Set.of(NARROW, LARGE), ((RoutedSgemm) Blas.route(nat, java, calibration(0.5, 1.2, 1.2))).javaClasses());
        assertSame(SMALL_K, Calibration.ShapeClass.of(4096, 4096, 32));
        assertSame(NARROW, Calibration.ShapeClass.of(64, 4096, 288));
        assertSame(LARGE, Calibration.ShapeClass.of(256, 288, 288));
    }

    @Test
    void aRoutedProductIsExactlyTheChosenImplementationsProduct() {
        Sgemm nat = Blas.openBlas().orElse(Blas.javaScalar()), java = Blas.java();
        RoutedSgemm r = new RoutedSgemm(nat, java, Set.of(SMALL_K));
        for (int[] d : new int[][] {{37, 45, 20}, {130, 70, 140}, {150, 140, 130}}) {
            int m = d[0], n = d[1], k = d[2];
            float[] a = random(m * k, 1), b = random(k * n, 2), got = new float[m * n], want = new float[m * n];
            r.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, m, n, k, 0.5f, a, 0, k, b, 0, k, 0f, got, 0, n);
            r.forShape(m, n, k).sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, m, n, k, 0.5f, a, 0, k, b, 0, k, 0f, want, 0, n);
            assertArrayEquals(want, got, m + "×" + n + "×" + k);
        }
    }

    @Test
    void calibrationRoundTripsAndRejectsGarbage() {
        Calibration c = calibration(1.25, 0.75, 0.5);
        Calibration back = Calibration.decode(c.encode());
        assertEquals(c.javaSpeedup(), back.javaSpeedup());
        for (String bad : List.of("", "SMALL_K=1.2;0.3;1", "SMALL_K=x,NARROW=1,LARGE=1;0.1;0", "SMALL_K=-1,NARROW=1,LARGE=1;0.1;0",
                "HUGE=1,NARROW=1,LARGE=1;0.1;0"))
            assertThrows(IllegalArgumentException.class, () -> Calibration.decode(bad), bad);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // the automatic path end to end, with the calibration injected through the cache

    private static final Logger JUL = Logger.getLogger("ane4j.blas");
    private final List<String> log = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        @Override public void publish(LogRecord r) { log.add(r.getMessage()); }
        @Override public void flush() {}
        @Override public void close() {}
    };

    @BeforeEach void capture() { JUL.addHandler(handler); }

    @AfterEach void release() { JUL.removeHandler(handler); }

    @Test
    void aCachedCalibrationDecidesWithoutMeasuring(@TempDir Path dir) throws Exception {
        assumeTrue(Blas.openBlas().isPresent() && Blas.javaVector().isPresent(), "needs OpenBLAS (libopenblas0-pthread) and --add-modules jdk.incubator.vector");
        Probe nat = new Probe(Blas.openBlas().get(), "test");
        Path file = dir.resolve("blas.properties");
        BlasCache cache = new BlasCache(file);
        cache.put(calibrationKey(nat), calibration(1.3, 0.9, 0.5).encode());
        Sgemm s = Blas.automatic(nat, new BlasCache(file));
        assertEquals(Set.of(SMALL_K), assertInstanceOf(RoutedSgemm.class, s).javaClasses());
        String line = log.getLast();
        assertTrue(line.contains("automatic: the native GEMM, the Java GEMM for K < 128 (Java GEMM 1.30× at K < 128")
                && line.contains("cached in " + file), line);
    }

    @Test
    void anUnreadableCacheIsMeasuredAgain(@TempDir Path dir) throws Exception {
        assumeTrue(Blas.openBlas().isPresent() && Blas.javaVector().isPresent(), "needs OpenBLAS (libopenblas0-pthread) and --add-modules jdk.incubator.vector");
        Probe nat = new Probe(Blas.openBlas().get(), "test");
        // a directory where the file should be: cannot be read, cannot be written
        Path file = Files.createDirectory(dir.resolve("blas.properties"));
        BlasCache cache = new BlasCache(file);
        assertTrue(cache.problem().contains("unreadable"), cache.problem());
        Sgemm s = Blas.automatic(nat, cache);
        // whichever candidate the fresh calibration picked, it computes: [1 2; 3 4]·[5 6; 7 8] = [19 22; 43 50]
        float[] c = new float[4];
        s.matmul(new float[] {1, 2, 3, 4}, new float[] {5, 6, 7, 8}, c, 2, 2, 2);
        assertArrayEquals(new float[] {19, 22, 43, 50}, c, s.description());
        assertTrue(log.getLast().contains("unreadable") && log.getLast().contains("calibrated in"), log.getLast());

        // a file with a garbled value: measured again and rewritten
        Path f2 = dir.resolve("garbled.properties");
        new BlasCache(f2).put(calibrationKey(nat), "SMALL_K=oops");
        Blas.automatic(nat, new BlasCache(f2));
        assertTrue(log.getLast().contains("cached value unreadable") && log.getLast().contains("calibrated in"), log.getLast());
        Calibration.decode(new BlasCache(f2).get(calibrationKey(nat)).orElseThrow());
    }

    @Test
    void aMissingLibraryFallsBackToJava() {
        Sgemm s = Blas.automatic(Probe.missing("libopenblas.so.0: not found"), new BlasCache(null));
        assertSame(Blas.java(), s);
        assertTrue(log.getLast().contains("no native BLAS loaded (libopenblas.so.0: not found)"), log.getLast());
    }

    @Test
    void aForcedChoiceIsNotCalibrated() {
        assertSame(Blas.java(), Blas.select("java", "-Dane4j.blas"));
        assertFalse(log.getLast().contains("calibrat"), log.getLast());
        Blas.openBlas().ifPresent(o -> {
            assertSame(o, Blas.select("openblas", "ANE4J_BLAS"));
            assertTrue(log.getLast().endsWith("— ANE4J_BLAS=openblas"), log.getLast());
        });
    }

    static String calibrationKey(Probe nat) {
        return BlasCache.key("calibration", CpuFeatures.current().key(), nat.identity());
    }

    static Calibration calibration(double smallK, double narrow, double large) {
        Map<Calibration.ShapeClass, Double> m = new EnumMap<>(Calibration.ShapeClass.class);
        m.put(SMALL_K, smallK);
        m.put(NARROW, narrow);
        m.put(LARGE, large);
        return new Calibration(m, 0.1, 0.5);
    }

    static float[] random(int n, long seed) {
        java.util.Random r = new java.util.Random(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = r.nextFloat() - 0.5f;
        return x;
    }
}
