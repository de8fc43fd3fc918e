package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Runs a script of tools/hf-js (Hugging Face's own JavaScript packages, the independent references of the import tests)
 * under node. Without node or the installed packages the test is skipped, except on CI, where it fails:
 * {@code ./install.sh --test} installs them.
 */
final class HfJs {
    static final Path DIR = Path.of("tools/hf-js");

    private HfJs() {}

    static void assumeInstalled(String module) {
        String missing = null;
        if (!onPath("node")) missing = "no node on the PATH (Debian's nodejs)";
        else if (!Files.isDirectory(DIR.resolve("node_modules").resolve(module))) missing = DIR + "/node_modules/" + module + " is not installed (cd tools/hf-js && npm ci)";
        if (missing == null) return;
        if (System.getenv("CI") != null && !System.getenv("CI").isBlank()) fail("CI needs the import tests' npm tools but " + missing + "; ./install.sh --test installs them");
        Assumptions.abort(missing + "; ./install.sh --test installs it");
    }

    private static boolean onPath(String exe) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator))
            if (!d.isEmpty() && Files.isExecutable(Path.of(d, exe))) return true;
        return false;
    }

    /** Runs {@code node tools/hf-js/SCRIPT args…} with {@code stdin} and returns its stdout; a non-zero exit fails the test. */
    static String run(String script, String stdin, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("node", DIR.resolve(script).toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.PIPE).start();
        try (var in = p.getOutputStream()) {
            if (stdin != null) in.write(stdin.getBytes(StandardCharsets.UTF_8));
        }
        var out = new java.io.ByteArrayOutputStream();
        var err = new java.io.ByteArrayOutputStream();
        Thread t = Thread.ofVirtual().start(() -> { try { p.getErrorStream().transferTo(err); } catch (IOException ignored) { } });
        p.getInputStream().transferTo(out);
        if (!p.waitFor(120, TimeUnit.SECONDS)) { p.destroyForcibly(); fail("node " + script + " did not finish in 120 s"); }
        t.join();
        assertEquals(0, p.exitValue(), "node " + script + " failed: " + err.toString(StandardCharsets.UTF_8));
        return out.toString(StandardCharsets.UTF_8);
    }
}
