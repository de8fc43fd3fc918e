package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.TensorBuffer;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.model.Json;
import ane4j.run.RunState;
import ane4j.session.LocalSession;
import ane4j.session.Run;
import ane4j.train.GraphRunFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static ane4j.mil.Mil.fp32;

/**
 * {@code Ane.fit} and {@code %%fit}: a graph built in Java trains as a run of the session (the run folder holds the
 * graph and its data as the files the run names), with the live display of a {@code %%train} cell, and the {@link Fit}
 * it returns evaluates a predict graph with the trained parameters.
 */
class FitTest {
    @TempDir Path dir;
    private String runsBefore;

    @BeforeEach
    void setUp() {
        runsBefore = System.getProperty(Run.RUNS_PROPERTY);
        System.setProperty(Run.RUNS_PROPERTY, dir.resolve("runs").toString());
        Ane.use(new LocalSession(new ane4j.backend.ref.RefBackend(ane4j.backend.ref.RefBackend.Options.ANE_LIKE)));
    }

    @AfterEach
    void tearDown() {
        if (runsBefore == null) System.clearProperty(Run.RUNS_PROPERTY);
        else System.setProperty(Run.RUNS_PROPERTY, runsBefore);
        Ane.shutdown();
    }

    /** The logits of the fixture's MLP for n samples. */
    static Program predict(int n) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp32(n, 4));
            var w1 = f.input("w1", fp32(16, 4));
            var b1 = f.input("b1", fp32(16));
            var w2 = f.input("w2", fp32(2, 16));
            var b2 = f.input("b2", fp32(2));
            f.output(f.named("logits", f.linear(f.tanh(f.linear(x, w1, b1)), w2, b2)));
        }).build();
    }

    static double accuracy(Fit fit, Map<String, TensorBuffer> test) {
        int n = test.get("x").shape()[0];
        float[] logits = fit.apply(predict(n), Map.of("x", test.get("x"))).get("logits").toFloatArray();
        int right = 0;
        for (int i = 0; i < n; i++) if ((logits[2 * i + 1] > logits[2 * i] ? 1 : 0) == (int) test.get("labels").get(i)) right++;
        return right / (double) n;
    }

    @Test
    void aGraphBuiltInJavaTrainsAsARunOfTheSession() throws Exception {
        Map<String, TensorBuffer> train = GraphRunFixture.samples(96, 3), test = GraphRunFixture.samples(64, 4);
        float[] w1 = new float[64];
        for (int i = 0; i < 64; i++) w1[i] = (i % 5 - 2) * 0.2f;
        Fit fit = Ane.fit(GraphRunFixture.mlp(), train, test, Map.of("w1", w1), "steps = 60; lr = 0.05; evalEvery = 20; seed = 5");
        assertEquals(RunState.FINISHED, fit.run().state());
        assertEquals(60, fit.history().size());
        Path run = fit.run().runDir();
        assertTrue(run.getFileName().toString().startsWith("graph-"), run.toString());
        for (String f : List.of("graph.mil", "data/x.npy", "data/labels.npy", "val/x.npy", "init/w1.npy", "metrics.jsonl", "run.json", "loss.png"))
            assertTrue(Files.exists(run.resolve(f)), f);
        Map<?, ?> options = (Map<?, ?>) ((Map<?, ?>) Json.parse(Files.readString(run.resolve("run.json")))).get("options");
        assertEquals(run.toAbsolutePath().resolve("graph.mil").toString(), options.get("graph"));
        assertEquals("true", options.get("inProcess"));
        assertEquals(4, fit.params().size());
        assertTrue(accuracy(fit, test) > 0.85, "held-out accuracy " + accuracy(fit, test));
        assertTrue(fit.lastValidationLoss() < 0.5f, fit.toString());
        assertTrue(fit.chart() != null);
        var gen = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class, () -> fit.run().generate("x", 4, 0f, 1f, 1));
        assertEquals("[generate] this run trains the graph graph.mil, not a language model; Fit.apply (or ane4j mil run) evaluates it", gen.getMessage());
        // the same folder: refused without resume (its graph and data stay as they were), continued with it
        float[] x0 = ane4j.train.Npy.read(run.resolve("data/x.npy"), ane4j.mil.TensorType.of(ane4j.mil.DType.FP32, 96, 4), "x").toFloatArray();
        var again = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> Ane.fit(GraphRunFixture.mlp(), GraphRunFixture.samples(96, 9), test, Map.of("w1", w1), "steps = 80; runDir = " + run));
        assertTrue(again.getMessage().startsWith("[fit] " + run.toAbsolutePath() + " already has checkpoints"), again.getMessage());
        org.junit.jupiter.api.Assertions.assertArrayEquals(x0, ane4j.train.Npy.read(run.resolve("data/x.npy"), ane4j.mil.TensorType.of(ane4j.mil.DType.FP32, 96, 4), "x").toFloatArray());
        Fit more = Ane.fit(GraphRunFixture.mlp(), train, test, Map.of("w1", w1), "steps = 80; lr = 0.05; evalEvery = 20; seed = 5; resume = true; runDir = " + run);
        assertEquals(80, more.history().size());
        assertEquals(fit.history().get(59).loss(), more.history().get(59).loss(), "the first 60 steps are the first run's");
        assertTrue(more.run().messages().stream().anyMatch(m -> m.startsWith("[train] resumed from step 60")), more.run().messages().toString());
        // settings that the arguments give are refused in one line
        var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> Ane.fit(GraphRunFixture.mlp(), train, Map.of(), "steps = 2; data = elsewhere"));
        assertTrue(e.getMessage().startsWith("[fit] data is given as an argument of Ane.fit"), e.getMessage());
    }

    /**
     * The CPU loss head from both notebook faces: a graph ending at its logits, the labels a data map entry of no graph
     * input, and the keys logits and labels in the settings text (Ane.fit) or the cell (%%fit).
     */
    @Test
    void aGraphEndingAtItsLogitsTrainsWithTheCpuLossHead() throws Exception {
        Map<String, TensorBuffer> train = GraphRunFixture.samples(96, 3), test = GraphRunFixture.samples(64, 4);
        Fit fit = Ane.fit(GraphRunFixture.mlpLogits(false), train, test, Map.of(), "logits = logits; labels = labels; steps = 60; lr = 0.05; evalEvery = 20; seed = 5");
        assertEquals(RunState.FINISHED, fit.run().state());
        assertTrue(Files.exists(fit.run().runDir().resolve("data/labels.npy")));
        Map<?, ?> options = (Map<?, ?>) ((Map<?, ?>) Json.parse(Files.readString(fit.run().runDir().resolve("run.json")))).get("options");
        assertEquals("logits", options.get("logits"));
        assertEquals("labels", options.get("labels"));
        assertTrue(accuracy(fit, test) > 0.85, "held-out accuracy " + accuracy(fit, test));
        assertTrue(fit.lastValidationLoss() < 0.5f, fit.toString());
        FakeKernel kernel = new FakeKernel();
        new MagicRegistry().add(new TrainMagics()).installInto(kernel, false);
        kernel.variables.put("net", GraphRunFixture.mlpLogits(false));
        kernel.variables.put("digits", train);
        kernel.getMagicsRegistry().evalCellMagic(kernel, "fit", List.of("fitted"), "graph = net\ndata = digits\nlogits = logits\nlabels = labels\nsteps = 30\nlr = 0.05\n");
        TrainingRun run = TrainingRun.current();
        assertEquals(30, run.history().size());
        assertTrue(run.history().getLast().loss() < run.history().getFirst().loss(), "learns: " + run.history().getFirst().loss() + " → " + run.history().getLast().loss());
        // the head's keys with a loss: one line
        var e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
                () -> kernel.getMagicsRegistry().evalCellMagic(kernel, "fit", List.of(), "graph = net\ndata = digits\nlogits = logits\nlabels = labels\nloss = loss\n"));
        assertTrue(e.getMessage().contains("[train] loss = loss and logits = logits both name the loss"), e.getMessage());
    }

    @Test
    void fitCellTrainsNotebookVariablesWithTheLiveDisplay() throws Exception {
        FakeKernel kernel = new FakeKernel();
        new MagicRegistry().add(new TrainMagics()).installInto(kernel, false);
        kernel.variables.put("mlp", GraphRunFixture.mlp());
        kernel.variables.put("digits", GraphRunFixture.samples(96, 3));
        Object out = kernel.getMagicsRegistry().evalCellMagic(kernel, "fit", List.of("fitted"), "graph = mlp\ndata = digits\nsteps = 30\nlr = 0.05\nevalEvery = 10\n");
        assertTrue(out instanceof TrainingSummary, String.valueOf(out));
        assertTrue(kernel.evaluated.stream().anyMatch(s -> s.startsWith("var fitted = (ane4j.notebook.Fit)")), kernel.evaluated.toString());
        assertFalse(kernel.displayed.isEmpty(), "the live progress line and loss plot");
        TrainingRun run = TrainingRun.current();
        assertEquals(30, run.history().size());
        assertTrue(Files.exists(run.runDir().resolve("data/x.npy")));
        // %train plot/status serve a %%fit run as any run
        assertTrue(kernel.getMagicsRegistry().evalLineMagic(kernel, "train", List.of("status")).toString().contains("30/30"));
        // a variable that is not there: one line
        var e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
                () -> kernel.getMagicsRegistry().evalCellMagic(kernel, "fit", List.of(), "graph = mlp\ndata = nothing\nsteps = 2\n"));
        assertTrue(e.getMessage().contains("[%%fit] data = nothing is null"), e.getMessage());
        Object helpOut = kernel.getMagicsRegistry().evalCellMagic(kernel, "fit", List.of("--help"), "");
        String help = String.valueOf(helpOut);
        assertTrue(help.startsWith("%%fit [NAME]") && help.contains("graph = ") && help.contains("valFraction"), help);
        // the first line is read as %%train's: a second name or a flag %%fit does not take is one line
        var two = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
                () -> kernel.getMagicsRegistry().evalCellMagic(kernel, "fit", List.of("a", "b"), "graph = mlp\n"));
        assertTrue(two.getMessage().contains("[%%fit] unexpected argument 'b'; the first line takes [NAME], the cell key = value lines"), two.getMessage());
        var flag = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
                () -> kernel.getMagicsRegistry().evalCellMagic(kernel, "fit", List.of("--background"), "graph = mlp\n"));
        assertTrue(flag.getMessage().contains("[%%fit] unexpected argument '--background'"), flag.getMessage());
    }
}
