package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kernel under a real Jupyter client: runs tools/kernel_client_test.py (jupyter_client) and
 * tools/kernel_conformance_test.py (jupyter_kernel_test) against a kernelspec for the classes of this build.
 * Skipped when Jupyter is missing on a developer machine; fails in CI (CI set), where install.sh installs it.
 */
@Tag("process")
class JupyterClientTest {
    static final String PYTHON = ane4j.HostTools.python();
    static final String NAME = "ane4j-test";

    @TempDir
    static Path jupyterPath;
    static String skipReason;

    @BeforeAll
    static void kernelspec() throws Exception {
        boolean ci = System.getenv("CI") != null && !System.getenv("CI").isBlank();
        String missing = missingTools();
        if (missing != null) {
            if (ci) fail("CI needs Jupyter for the kernel tests but " + missing + "; " + ane4j.HostTools.howToGetJupyter());
            skipReason = "Jupyter not installed (" + missing + "): " + ane4j.HostTools.howToGetJupyter();
            return;
        }
        if (ci) {
            Result r = exec(List.of(PYTHON, "-c", "from jupyter_client.kernelspec import KernelSpecManager as K; "
                    + "s = K().get_kernel_spec('ane4j'); import os; assert os.path.exists(s.argv[0]), s.argv[0]; print(s.display_name)"), Map.of(), 60);
            assertEquals(0, r.exit, "install.sh should have installed the 'ane4j' kernelspec with a real java path:\n" + r.out);
            assertTrue(r.out.contains("Java (ane4j)"), r.out);
        }
        writeKernelspec(jupyterPath, NAME);
    }

    /** A kernelspec {@code name} under {@code jupyterPath} for exactly the classes under test, from the repository's template. */
    static void writeKernelspec(Path jupyterPath, String name) throws IOException {
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String json = Files.readString(Path.of("kernel/kernel.json"))
                .replace("@JAVA@", java).replace("@ROOT@", Path.of("").toAbsolutePath().toString()).replace("@CLASSPATH@", cp);
        Path dir = Files.createDirectories(jupyterPath.resolve("kernels").resolve(name));
        Files.writeString(dir.resolve("kernel.json"), json.replace("\"Java (ane4j)\"", "\"Java (ane4j, test)\""));
    }

    /** Null when python3 with jupyter_client and jupyter_kernel_test is there, else what is missing. */
    static String missingTools() {
        if (PYTHON.contains(File.separator) ? !new File(PYTHON).canExecute() : ane4j.HostTools.onPath(PYTHON).isEmpty()) return PYTHON + " is missing";
        try {
            Result r = exec(List.of(PYTHON, "-c", "import jupyter_client, jupyter_kernel_test"), Map.of(), 60);
            return r.exit == 0 ? null : "python3 cannot import jupyter_client/jupyter_kernel_test";
        } catch (Exception e) {
            return e.getMessage();
        }
    }

    record Result(int exit, String out) {}

    static Result exec(List<String> cmd, Map<String, String> env, int timeoutSeconds) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        pb.environment().putAll(env);
        pb.environment().put("PYDEVD_DISABLE_FILE_VALIDATION", "1");
        Process p = pb.start();
        Path log = Files.createTempFile("ane4j-jupyter", ".log");
        Thread pump = Thread.ofVirtual().start(() -> {
            try {
                Files.copy(p.getInputStream(), log, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            } catch (IOException ignored) {
            }
        });
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            pump.join(5000);
            fail("timed out after " + timeoutSeconds + " s: " + cmd + "\n" + Files.readString(log, StandardCharsets.UTF_8));
        }
        pump.join(5000);
        String out = Files.readString(log, StandardCharsets.UTF_8);
        Files.deleteIfExists(log);
        return new Result(p.exitValue(), out);
    }

    static Map<String, String> env() {
        return Map.of("JUPYTER_PATH", jupyterPath.toString(), "ANE4J_KERNEL_NAME", NAME);
    }

    @Test
    void jupyterClientDrivesTheKernel() throws Exception {
        Assumptions.assumeTrue(skipReason == null, skipReason);
        Result r = exec(List.of(PYTHON, "tools/kernel_client_test.py", NAME), env(), 600);
        System.out.println(r.out);
        assertEquals(0, r.exit, r.out);
        assertTrue(r.out.contains("all checks passed"), r.out);
        double firstResult = Double.parseDouble(r.out.replaceAll("(?s).*first cell result ([0-9.]+) s.*", "$1"));
        assertTrue(firstResult < 30, "kernel start to first result took " + firstResult + " s");
    }

    /** Issue 15: %train stop sent while a %%train (or Ane.train) cell runs stops it at once; cells behind it keep their order. */
    @Test
    void trainStopFromAnotherCellStopsTheRunningCell() throws Exception {
        Assumptions.assumeTrue(skipReason == null, skipReason);
        Result r = exec(List.of(PYTHON, "tools/kernel_stop_test.py", NAME), env(), 600);
        System.out.println(r.out);
        assertEquals(0, r.exit, r.out);
        assertTrue(r.out.contains("all checks passed"), r.out);
    }

    /**
     * Issue 30 (K6/K7 of the 2026-12-05 reliability report): forged, truncated, malformed, replayed and oversized messages
     * on every port are dropped, and the kernel goes on answering the real client.
     */
    @Test
    void forgedMessagesOnEveryPortAreDropped() throws Exception {
        Assumptions.assumeTrue(skipReason == null, skipReason);
        Result r = exec(List.of(PYTHON, "tools/kernel_forged_test.py", NAME), env(), 600);
        System.out.println(r.out);
        assertEquals(0, r.exit, r.out);
        assertTrue(r.out.contains("all checks passed"), r.out);
        assertTrue(r.out.contains("[notebook] dropped message 1 on the shell port: wrong HMAC signature"), r.out);
    }

    /**
     * Issue 30 (K8/K10): %maven against a local repository server on 127.0.0.1 serving a jar whose .sha1/.md5 do not
     * match fails and loads nothing; a genuine jar loads; the working folder is private (0700, random) and removed at
     * shutdown; the cell names its repositories. Needs mvn and the dependency plugin in ~/.m2 (the build's).
     */
    @Test
    void mavenRefusesATamperedArtifact() throws Exception {
        Assumptions.assumeTrue(skipReason == null, skipReason);
        Result r = exec(List.of(PYTHON, "tools/kernel_maven_test.py", NAME), env(), 600);
        System.out.println(r.out);
        assertEquals(0, r.exit, r.out);
        assertTrue(r.out.contains("all checks passed"), r.out);
    }

    @Test
    void conformanceSuitePasses() throws Exception {
        Assumptions.assumeTrue(skipReason == null, skipReason);
        Result r = exec(List.of(PYTHON, "tools/kernel_conformance_test.py"), env(), 600);
        System.out.println(r.out);
        assertEquals(0, r.exit, r.out);
        List<String> passed = r.out.lines().filter(l -> l.endsWith("... ok")).map(l -> l.split(" ")[0]).toList();
        assertTrue(passed.containsAll(List.of("test_kernel_info", "test_execute_result", "test_error", "test_completion",
                "test_display_data", "test_is_complete", "test_inspect")), "passed: " + passed + "\n" + r.out);
    }
}
