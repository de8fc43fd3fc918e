package ane4j.blas;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The core really is set before OpenBLAS loads: child JVMs report the core they got (OpenBLAS reads
 * OPENBLAS_CORETYPE only in its constructor, so nothing in the test JVM itself could show it).
 */
@Tag("process")
class CoreTypeChildTest {

    /** Run in the child JVM: the description of the loaded OpenBLAS (its core and why). */
    public static void main(String[] args) {
        System.out.println(Blas.openBlas().map(Sgemm::description).orElse("none"));
    }

    @Test
    void aForcedNameIsTheCoreTheLibraryRuns(@TempDir Path dir) throws Exception {
        assumeTrue(dynamicOpenBlas(), "needs a DYNAMIC_ARCH OpenBLAS (libopenblas0-pthread) and no OPENBLAS_CORETYPE or -Dane4j.blas.coretype set");
        String out = child(dir.resolve("c.properties"), Map.of(), "-D" + OpenBlas.CORE_PROPERTY + "=Prescott");
        assertTrue(out.contains("core Prescott (set by -Dane4j.blas.coretype=Prescott)"), out);
    }

    @Test
    void aFallbackSeenByTheProbeIsCorrectedBeforeLoading(@TempDir Path dir) throws Exception {
        assumeTrue(dynamicOpenBlas(), "needs a DYNAMIC_ARCH OpenBLAS (libopenblas0-pthread) and no OPENBLAS_CORETYPE or -Dane4j.blas.coretype set");
        CpuFeatures cpu = CpuFeatures.current();
        assumeTrue(cpu.x86Level() != CpuFeatures.X86Level.SSE, "needs an x86 CPU with AVX or better");
        // the detection forced: the cache says the library, loaded as it is, picks Prescott on this CPU (as Debian's
        // 0.3.21 does on Xeons newer than it)
        Path file = dir.resolve("c.properties");
        new BlasCache(file).put(BlasCache.key("core", cpu.key(), OpenBlas.LIBRARIES.getFirst()),
                "Prescott\tOpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64");
        String probeKey = BlasCache.key("core", cpu.key(), OpenBlas.LIBRARIES.getFirst());
        String core = OpenBlasCore.FORCE.get(cpu.x86Level());
        String out = child(file, Map.of());
        assertTrue(out.contains("core " + core + " (set: the library reported Prescott on an"), out);
        // and the next start does the same: the entry survives (the config string names the forced core, not the probed one)
        assertTrue(new BlasCache(file).get(probeKey).orElseThrow().startsWith("Prescott\t"));
        // the environment's own setting is never overridden
        String env = child(file, Map.of(OpenBlasCore.ENV, "Haswell"));
        assertTrue(env.contains("core Haswell (set by OPENBLAS_CORETYPE=Haswell in the environment)"), env);
    }

    /**
     * Holds on every x86 CPU: where the library knows the CPU (AMD EPYC with Debian's 0.3.21) its own core is kept;
     * where it falls back (Intel Xeons newer than 0.3.21: Prescott on an AVX-512 CPU) the probe still records the
     * library's own choice, and the core the child runs is the corrected one. The library's own choice is read here
     * independently, by {@link CoreProbe} in a JVM without {@code OPENBLAS_CORETYPE}.
     */
    @Test
    void withoutACacheTheChildProbeLearnsTheLibrarysOwnCore(@TempDir Path dir) throws Exception {
        assumeTrue(dynamicOpenBlas(), "needs a DYNAMIC_ARCH OpenBLAS (libopenblas0-pthread) and no OPENBLAS_CORETYPE or -Dane4j.blas.coretype set");
        String[] own = OpenBlas.probeInChild().orElseThrow(() -> new AssertionError("the core probe failed in a child JVM"));
        String ownCore = own[0], config = own[1];
        Path file = dir.resolve("c.properties");
        String out = child(file, Map.of());
        String probed = new BlasCache(file).get(BlasCache.key("core", CpuFeatures.current().key(), OpenBlas.LIBRARIES.getFirst()))
                .orElseThrow();
        assertEquals(ownCore + "\t" + config, probed, "the cache records the library's own choice, not the corrected one");
        OpenBlasCore.Advice advice = OpenBlasCore.advise(CpuFeatures.current(), ownCore, config);
        if (advice.core().isPresent())
            assertTrue(out.contains("core " + advice.core().get() + " (set: the library reported " + ownCore + " on"), out);
        else
            assertTrue(out.contains("core " + ownCore + " (" + advice.why()), out);
    }

    private static boolean dynamicOpenBlas() {
        return System.getenv(OpenBlasCore.ENV) == null && System.getProperty(OpenBlas.CORE_PROPERTY) == null
                && Blas.openBlas().map(s -> s.description().contains("DYNAMIC_ARCH")).orElse(false);
    }

    private static String child(Path cache, Map<String, String> env, String... props) throws Exception {
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-Dane4j.blas=openblas",
                "-D" + BlasCache.PROPERTY + "=" + cache));
        cmd.addAll(List.of(props));
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), CoreTypeChildTest.class.getName()));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().remove(OpenBlasCore.ENV);
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), err);
        return out;
    }
}
