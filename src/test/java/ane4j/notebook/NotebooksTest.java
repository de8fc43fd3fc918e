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
 * The notebooks and magics under a real Jupyter client, with a kernelspec for the classes of this build:
 * tools/run_notebooks.py executes notebooks/*.ipynb top to bottom (nbclient) and checks what each one shows (the
 * notebooks are write-ups without test code; the expectations on their executed outputs live in that script)
 * and tools/notebook_client_test.py drives %%mil, the fluent API and %%train with jupyter_client, checking the messages.
 * Skipped when Jupyter is missing on a developer machine; fails in CI (CI set), where install.sh installs it.
 */
@Tag("process")
class NotebooksTest {
    static final String NAME = "ane4j-nbtest";

    @TempDir
    static Path jupyterPath;
    static String skipReason;

    @BeforeAll
    static void kernelspec() throws Exception {
        boolean ci = System.getenv("CI") != null && !System.getenv("CI").isBlank();
        String missing = JupyterClientTest.missingTools();
        if (missing == null) {
            JupyterClientTest.Result r = JupyterClientTest.exec(List.of(JupyterClientTest.PYTHON, "-c", "import nbclient, nbformat"), Map.of(), 60);
            if (r.exit() != 0) missing = "python3 cannot import nbclient/nbformat";
        }
        if (missing != null) {
            if (ci) fail("CI needs Jupyter for the notebook tests but " + missing + "; " + ane4j.HostTools.howToGetJupyter());
            skipReason = "Jupyter not installed (" + missing + "): " + ane4j.HostTools.howToGetJupyter();
            return;
        }
        JupyterClientTest.writeKernelspec(jupyterPath, NAME);
    }

    static Map<String, String> env() {
        return Map.of("JUPYTER_PATH", jupyterPath.toString());
    }

    @Test
    void notebooksRunTopToBottomAndShowWhatTheySay() throws Exception {
        Assumptions.assumeTrue(skipReason == null, skipReason);
        JupyterClientTest.Result r = JupyterClientTest.exec(List.of(JupyterClientTest.PYTHON, "tools/run_notebooks.py", NAME), env(), 900);
        System.out.println(r.out());
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.out().contains("all notebooks passed"), r.out());
        for (String nb : List.of("01-mil-graphs", "02-train-tiny", "04-benchmarks", "05-fine-tune", "06-worker-restarts", "07-your-own-graph")) {
            assertTrue(r.out().lines().anyMatch(l -> l.startsWith("ok   " + nb + ".ipynb") && !l.contains(" 0 expectations")), nb + " ran and its expectations held:\n" + r.out());
        }
        assertTrue(r.out().contains("03-stories110m.ipynb"), "03 is run or skipped with a reason:\n" + r.out());
    }

    @Test
    void magicsSendTheRightMessages() throws Exception {
        Assumptions.assumeTrue(skipReason == null, skipReason);
        JupyterClientTest.Result r = JupyterClientTest.exec(List.of(JupyterClientTest.PYTHON, "tools/notebook_client_test.py", NAME), env(), 600);
        System.out.println(r.out());
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.out().contains("all checks passed"), r.out());
        assertFalse(r.out().contains("FAIL"), r.out());
    }
}
