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
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The processes of one run route every product the same way. A worker inherits the {@code OPENBLAS_CORETYPE} its
 * parent set, so it describes its core differently ("set by … in the environment"); when that description was the
 * calibration's key, the worker measured its own calibration, and on a CPU where the Java and native GEMMs are close
 * the two could route differently: a restarted worker's losses then left the uninterrupted run's in the last bits.
 */
@Tag("process")
class SharedCalibrationTest {

    /** In a child JVM: {@code identity} prints the loaded OpenBLAS's description and identity; {@code decide KEY} decides a slow random value. */
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "identity" -> {
                System.out.println(OpenBlas.PROBE.sgemm().description());
                System.out.println(OpenBlas.PROBE.identity());
            }
            case "decide" -> System.out.println(BlasCache.standard().decide(args[1], v -> true, () -> {
                try {
                    Thread.sleep(400);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return UUID.randomUUID().toString();
            }).value());
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    @Test
    void aWorkerThatInheritedTheCoreHasItsParentsIdentity(@TempDir Path dir) throws Exception {
        assumeTrue(System.getenv(OpenBlasCore.ENV) == null && System.getProperty(OpenBlas.CORE_PROPERTY) == null
                        && Blas.openBlas().map(s -> s.description().contains("DYNAMIC_ARCH")).orElse(false),
                "needs a DYNAMIC_ARCH OpenBLAS (libopenblas0-pthread) and no OPENBLAS_CORETYPE or -Dane4j.blas.coretype set");
        CpuFeatures cpu = CpuFeatures.current();
        assumeTrue(cpu.x86Level() != CpuFeatures.X86Level.SSE, "needs an x86 CPU with AVX or better");
        // the parent: the cache says the library falls back to Prescott here, so the parent sets the better core itself
        Path cache = dir.resolve("c.properties");
        new BlasCache(cache).put(BlasCache.key("core", cpu.key(), OpenBlas.LIBRARIES.getFirst()),
                "Prescott\tOpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64");
        String core = OpenBlasCore.FORCE.get(cpu.x86Level());
        List<String> parent = child(cache, Map.of(), "identity");
        // the worker: started with the parent's C environment, which now holds the core
        List<String> worker = child(cache, Map.of(OpenBlasCore.ENV, core), "identity");
        assertNotEquals(parent.get(0), worker.get(0), "the descriptions say how the core was chosen");
        assertTrue(parent.get(1).contains("core " + core), parent.get(1));
        assertEquals(parent.get(1), worker.get(1), "one identity, so one cached calibration");
    }

    @Test
    void processesThatMeasureTogetherAgree(@TempDir Path dir) throws Exception {
        Path cache = dir.resolve("c.properties");
        List<Process> started = new ArrayList<>();
        for (int i = 0; i < 3; i++) started.add(start(cache, Map.of(), "decide", "calibration.test"));
        List<String> values = new ArrayList<>();
        for (Process p : started) values.add(finish(p).getFirst());
        assertEquals(1, values.stream().distinct().count(), values.toString());
        assertEquals(values.getFirst(), new BlasCache(cache).get("calibration.test").orElseThrow());
    }

    @Test
    void anUnusableValueIsMeasuredAgainAndAnotherProcesssKeyIsKept(@TempDir Path dir) {
        Path file = dir.resolve("c.properties");
        BlasCache early = new BlasCache(file);     // read before the other process wrote
        new BlasCache(file).put("core.x", "Zen");
        new BlasCache(file).put("calibration.x", "garbled");
        BlasCache.Decision d = early.decide("calibration.x", v -> !v.equals("garbled"), () -> "SMALL_K=1.0,NARROW=1.0,LARGE=1.0;1;1");
        assertTrue(d.measured());
        assertEquals("garbled", d.discarded());
        BlasCache after = new BlasCache(file);
        assertEquals("Zen", after.get("core.x").orElseThrow(), "the other process's key survives this one's save");
        assertEquals(d.value(), after.get("calibration.x").orElseThrow());
        assertTrue(!early.decide("calibration.x", v -> true, () -> { throw new AssertionError("measured twice"); }).measured());
    }

    private static List<String> child(Path cache, Map<String, String> env, String... args) throws Exception {
        return finish(start(cache, env, args));
    }

    private static Process start(Path cache, Map<String, String> env, String... args) throws Exception {
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-D" + BlasCache.PROPERTY + "=" + cache,
                "-cp", System.getProperty("java.class.path"), SharedCalibrationTest.class.getName()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().remove(OpenBlasCore.ENV);
        pb.environment().putAll(env);
        return pb.start();
    }

    private static List<String> finish(Process p) throws Exception {
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), err);
        return out.lines().toList();
    }
}
