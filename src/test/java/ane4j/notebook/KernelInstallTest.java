package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kernel install is self-contained: install.sh's kernelspec step (tools/post-install-jupyter.sh) on a checkout of
 * this build, then the checkout's target/ removed (what {@code mvn clean} does) and the checkout moved; the kernel still
 * starts through jupyter_client and runs a worker (tools/kernel_install_test.py). And {@code bin/ane4j jshell}
 * (tools/jshell.sh) starts JShell with the kernel's imports and the kernel's jars.
 */
@Tag("process")
class KernelInstallTest {

    /** A checkout with a built target/: ane4j.jar from the compiled classes, lib/ the runtime jars of this build. */
    static Path checkout(Path dir) throws IOException {
        Path lib = Files.createDirectories(dir.resolve("target/lib")), target = lib.getParent();
        ToolProvider jar = ToolProvider.findFirst("jar").orElseThrow();
        int rc = jar.run(System.out, System.err, "--create", "--file", target.resolve("ane4j.jar").toString(), "-C", "target/classes", ".");
        assertEquals(0, rc, "jar of target/classes");
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        for (String e : cp.split(File.pathSeparator)) {
            Path p = Path.of(e);
            if (e.endsWith(".jar") && Files.isRegularFile(p) && !Files.exists(lib.resolve(p.getFileName()))) Files.copy(p, lib.resolve(p.getFileName()));
        }
        Files.createDirectories(dir.resolve("kernel"));
        Files.copy(Path.of("kernel/kernel.json"), dir.resolve("kernel/kernel.json"));
        Files.createDirectories(dir.resolve("tools"));
        for (String f : List.of("post-install-jupyter.sh", "jshell.sh", "kernel_install_test.py", "kernel_client.py"))
            Files.copy(Path.of("tools", f), dir.resolve("tools").resolve(f));
        return dir;
    }

    static String javaHome() {
        return System.getProperty("java.home");
    }

    @Test
    void installedKernelSurvivesMvnCleanAndAMovedCheckout(@TempDir Path tmp) throws Exception {
        String missing = JupyterClientTest.missingTools();
        if (missing != null && System.getenv("CI") != null && !System.getenv("CI").isBlank()) fail("CI needs Jupyter for the kernel tests but " + missing);
        Assumptions.assumeTrue(missing == null, "Jupyter not installed (" + missing + ")");
        Path co = checkout(tmp.resolve("checkout"));
        Path data = tmp.resolve("jupyter-data");
        Map<String, String> env = Map.of("JUPYTER_DATA_DIR", data.toString(), "JUPYTER_PATH", "", "HOME", tmp.toString());
        JupyterClientTest.Result r = JupyterClientTest.exec(List.of("bash", "-c", "ROOT=\"$1\" JAVA_HOME=\"$2\"; . \"$1/tools/post-install-jupyter.sh\"",
                "install", co.toString(), javaHome()), env, 120);
        assertTrue(r.out().contains("Jupyter kernel 'Java (ane4j)' installed"), r.out());

        Path spec = data.resolve("kernels/ane4j");
        String json = Files.readString(spec.resolve("kernel.json"));
        assertTrue(json.contains("\"{resource_dir}/lib/*\""), "the class path is the kernelspec's own lib/ through {resource_dir}:\n" + json);
        assertFalse(json.contains(co.resolve("target").toString()), "nothing points into the checkout's target/:\n" + json);
        assertTrue(Files.isRegularFile(spec.resolve("lib/ane4j.jar")), "the jars are copied into the kernelspec");

        // bin/ane4j jshell, while the checkout is built: the kernel's imports and the kernel's jars
        Path in = tmp.resolve("jshell-in.txt");
        Files.writeString(in, "/imports\nSystem.out.println(\"CP \" + System.getProperty(\"java.class.path\"));\n/exit\n");
        ProcessBuilder pb = new ProcessBuilder("bash", co.resolve("tools/jshell.sh").toString(), co.toString(), javaHome(), "-q")
                .redirectErrorStream(true).redirectInput(in.toFile());
        pb.environment().put("TMPDIR", tmp.toString());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), out);
        List<String> imports = java.util.regex.Pattern.compile("\\|\\s+(import [^\\n]+)").matcher(out).results().map(m -> m.group(1).strip() + ";").toList();
        List<String> kernelImports = Ane4jExtension.importSnippet(true).lines().map(String::strip).toList();
        assertEquals(kernelImports, imports, "jshell starts with exactly the kernel's imports:\n" + out);
        String cp = out.lines().filter(l -> l.contains("CP ")).findFirst().orElseThrow(() -> new AssertionError(out));
        assertEquals(jarNames(spec.resolve("lib")), jarNames(cp.substring(cp.indexOf("CP ") + 3)), "jshell has the kernel's jars");

        // mvn clean, then the checkout moves: the installed kernel does not care
        deleteTree(co.resolve("target"));
        Path moved = Files.move(co, tmp.resolve("moved-checkout"));
        r = JupyterClientTest.exec(List.of(JupyterClientTest.PYTHON, moved.resolve("tools/kernel_install_test.py").toString(), spec.toString(), "ane4j"), env, 300);
        System.out.println(r.out());
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.out().contains("all checks passed"), r.out());
    }

    static Set<String> jarNames(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return new TreeSet<>(s.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".jar")).toList());
        }
    }

    static Set<String> jarNames(String classPath) {
        List<String> names = new ArrayList<>();
        for (String e : classPath.strip().split(File.pathSeparator)) names.add(Path.of(e).getFileName().toString());
        return new TreeSet<>(names);
    }

    static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path f : s.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(f);
        }
    }
}
