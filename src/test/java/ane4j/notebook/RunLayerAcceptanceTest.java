package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.cli.Main;
import ane4j.session.LocalSession;
import ane4j.session.Run;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.dflib.jjava.jupyter.kernel.magic.MagicsRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13's drift table, row by row: the same run description through {@code ane4j train} and through {@code %%train}
 * gives the same run folder rule, budget message, backend, in-process restart behaviour and loss-chart x axis.
 */
class RunLayerAcceptanceTest {
    @TempDir Path dir;
    private String runsBefore;
    private FakeKernel kernel;

    @BeforeEach
    void setUp() {
        runsBefore = System.getProperty(Run.RUNS_PROPERTY);
        System.setProperty(Run.RUNS_PROPERTY, dir.resolve("runs").toString());
        Ane.use(new LocalSession(new ane4j.backend.ref.RefBackend()));
        kernel = new FakeKernel();
        new MagicRegistry().add(new TrainMagics()).installInto(kernel, false);
    }

    @AfterEach
    void tearDown() {
        if (runsBefore == null) System.clearProperty(Run.RUNS_PROPERTY);
        else System.setProperty(Run.RUNS_PROPERTY, runsBefore);
        Ane.shutdown();
    }

    private record Cli(int code, String out, String err) {}

    private static Cli cli(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Cli(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** %%train --background with this cell, waited for. */
    private TrainingRun cell(String body) throws Exception {
        MagicsRegistry reg = kernel.getMagicsRegistry();
        reg.evalCellMagic(kernel, "train", List.of("--background"), body);
        return TrainingRun.current().await();
    }

    private String cellError(String body) {
        try {
            kernel.getMagicsRegistry().evalCellMagic(kernel, "train", List.of("--background"), body);
        } catch (Exception e) {
            return e.getMessage();
        }
        throw new AssertionError("no error for " + body);
    }

    private Path latest() throws Exception {
        return dir.resolve("runs").resolve(Files.readSymbolicLink(dir.resolve("runs/latest")));
    }

    private static String environmentBackend(Path runDir) throws Exception {
        String record = Files.readString(runDir.resolve("run.txt"));
        int env = record.indexOf("[environment]");
        return record.substring(env).lines().filter(l -> l.startsWith("backend = ")).findFirst().orElseThrow();
    }

    private static double[] losses(Path runDir) {
        return ane4j.run.MetricsLog.read(runDir.resolve("metrics.jsonl"), Long.MAX_VALUE, w -> {}).stream().mapToDouble(m -> m.loss()).toArray();
    }

    @Test
    void theSameRunFolderRuleAndBackendForBothFaces() throws Exception {
        Cli c = cli("train", "--steps", "2", "--in-process", "--eval-every", "0");
        assertEquals(0, c.code(), c.err());
        Path cliDir = latest();
        assertTrue(cliDir.getFileName().toString().matches("tiny-\\d{8}-\\d{6}(-\\d+)?"), cliDir.toString());
        TrainingRun run = cell("steps = 2\ninProcess = true\nevalEvery = 0");
        Path cellDir = run.runDir();
        assertEquals(dir.resolve("runs"), cellDir.getParent(), "the notebook's runs go to runs/ too, not the temp folder");
        assertEquals(cellDir.getFileName(), latest().getFileName(), "runs/latest follows the notebook's run as the CLI's");
        assertTrue(!cellDir.equals(cliDir), "each run its own folder");
        assertEquals(environmentBackend(cliDir), environmentBackend(cellDir), "automatic backend: the same choice");
        assertTrue(Files.exists(cellDir.resolve("loss.png")) && Files.exists(cliDir.resolve("loss.png")), "both write loss.png");
        assertArrayEquals(losses(cliDir), losses(cellDir), "the same description trains the same numbers");
    }

    @Test
    void theSameBudgetMessage() {
        Cli c = cli("train", "--compile-budget", "abc");
        String cellMessage = cellError("compileBudget = abc");
        assertEquals("ane4j train: " + cellMessage, c.err().lines().findFirst().orElseThrow());
        assertEquals("[train] compileBudget = 'abc' is not a whole number ≥ 1", cellMessage);
        assertEquals("ane4j train: " + cellError("compile-budget = 0"), cli("train", "--compile-budget", "0").err().lines().findFirst().orElseThrow());
    }

    @Test
    void inProcessBothRestartAtTheBudgetWithTheSameNumbers() throws Exception {
        Cli c = cli("train", "--steps", "4", "--seed", "3", "--weights", "static", "--compile-budget", "40", "--in-process", "--backend", "ref",
                "--eval-every", "0", "--run-dir", dir.resolve("cli").toString());
        assertEquals(0, c.code(), c.err());
        long cliRestarts = c.out().lines().filter(l -> l.startsWith("backend restarted: compile budget 40 reached")).count();
        assertTrue(cliRestarts >= 1, "the CLI in process restarts at the budget as the notebook does: " + c.out());
        TrainingRun run = cell("steps = 4\nseed = 3\nweights = static\ncompileBudget = 40\ninProcess = true\nbackend = ref\nevalEvery = 0\nrunDir = " + dir.resolve("cell"));
        assertEquals(cliRestarts, run.restarts());
        assertArrayEquals(losses(dir.resolve("cli")), run.losses(), 0.0, "restarts do not change the numbers, in either face");
    }

    @Test
    void theLossChartCountsGlobalOneBasedSteps() throws Exception {
        TrainingRun run = cell("steps = 3\nevalEvery = 0\nrunDir = " + dir.resolve("chart"));
        double[] x = run.chart().getSeriesMap().get("train (raw)").getXData();
        assertArrayEquals(new double[] {1, 2, 3}, x, 0.0);
        assertEquals(x[0], ane4j.session.LossChart.x(run.history().getFirst()), "the CLI's loss.png uses the same x");
    }
}
