package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kernel's displays in a real browser (tools/browser/browser-test.mjs): Debian's classic Notebook in headless
 * Chromium runs notebooks/02-train-tiny.ipynb with Restart &amp; Run All (live progress line and plot updated in place,
 * no error output), and JupyterLab's own output area and sanitizer render the saved outputs and a live %%train.
 * Skipped only when Chromium is not installed; in CI (CI set) a missing Jupyter or npm install is a failure, since
 * install.sh --test installs both.
 */
@Tag("process")
class BrowserTest {
    static final Path CHROMIUM = ane4j.HostTools.chromium();
    static final String NAME = "ane4j-browser";

    @TempDir
    static Path jupyterPath;

    @Test
    void classicNotebookAndJupyterLabRenderTheKernelsDisplays() throws Exception {
        Assumptions.assumeTrue(CHROMIUM != null && Files.isExecutable(CHROMIUM), "no Chromium or Chrome: " + ane4j.HostTools.howToGetChromium());
        boolean ci = System.getenv("CI") != null && !System.getenv("CI").isBlank();
        String missing = JupyterClientTest.missingTools();
        if (missing == null && JupyterClientTest.exec(List.of(JupyterClientTest.PYTHON, "-c", "import notebook"), Map.of(), 60).exit() != 0)
            missing = "python3 cannot import notebook (Debian's python3-notebook)";
        if (missing == null && !Files.isDirectory(Path.of("tools/browser/node_modules/playwright-core")))
            missing = "tools/browser/node_modules is not installed (cd tools/browser && npm ci)";
        if (missing != null) {
            if (ci) fail("CI needs the browser test's tools but " + missing + "; ./install.sh --test installs them");
            Assumptions.abort(missing + "; ./install.sh --test installs it");
        }
        JupyterClientTest.writeKernelspec(jupyterPath, NAME);
        JupyterClientTest.Result r = JupyterClientTest.exec(List.of("node", "tools/browser/browser-test.mjs", "--kernel", NAME,
                "--out", "target/browser"), Map.of("JUPYTER_PATH", jupyterPath.toString()), 420);
        System.out.println(r.out());
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.out().lines().anyMatch(l -> l.matches("\\d+ passed, 0 failed")) && !r.out().contains("\nFAIL"), r.out());
        assertTrue(Files.size(Path.of("target/browser/classic/02-train-tiny-train-cell.png")) > 10_000, "the training cell's screenshot");
    }
}
