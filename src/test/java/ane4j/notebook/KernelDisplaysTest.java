package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a researcher sees, under a real Jupyter client: tools/kernel_displays_test.py (displays of tensors, status,
 * metrics, charts, tables; stop_on_error; log streams; %lsmagic; %train help) against a kernelspec for this build.
 * Skipped when Jupyter is missing on a developer machine; fails in CI (CI set), where install.sh installs it.
 */
@Tag("process")
class KernelDisplaysTest {
    static final String NAME = "ane4j-displays";

    @TempDir
    static Path jupyterPath;
    static String skipReason;

    @BeforeAll
    static void kernelspec() throws Exception {
        String missing = JupyterClientTest.missingTools();
        if (missing != null) {
            if (System.getenv("CI") != null && !System.getenv("CI").isBlank())
                fail("CI needs Jupyter for the kernel tests but " + missing + "; " + ane4j.HostTools.howToGetJupyter());
            skipReason = "Jupyter not installed (" + missing + "): " + ane4j.HostTools.howToGetJupyter();
            return;
        }
        JupyterClientTest.writeKernelspec(jupyterPath, NAME);
    }

    @Test
    void displaysStopOnErrorLogsAndMagicHelp() throws Exception {
        Assumptions.assumeTrue(skipReason == null, skipReason);
        JupyterClientTest.Result r = JupyterClientTest.exec(List.of(JupyterClientTest.PYTHON, "tools/kernel_displays_test.py", NAME),
                Map.of("JUPYTER_PATH", jupyterPath.toString()), 300);
        System.out.println(r.out());
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.out().contains("all checks passed") && !r.out().contains("FAIL"), r.out());
    }
}
