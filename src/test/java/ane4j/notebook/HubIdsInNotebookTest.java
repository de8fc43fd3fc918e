package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.hub.HfHub;
import ane4j.hub.LocalHub;
import ane4j.model.HfExport;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.Safetensors;
import ane4j.session.LocalSession;
import ane4j.session.Run;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hugging Face ids in the notebook's faces: {@code init = org/name} in a %%train cell and {@code model = org/name} in
 * Ane.train resolve through the hub (a local server here) as the CLI's {@code --init org/name} does, and train the same
 * numbers as the snapshot's folder given as a path.
 */
class HubIdsInNotebookTest {
    @TempDir Path dir;
    private String runsBefore;
    private FakeKernel kernel;
    private java.util.function.Supplier<HfHub> hubBefore;

    @BeforeEach
    void setUp() {
        runsBefore = System.getProperty(Run.RUNS_PROPERTY);
        System.setProperty(Run.RUNS_PROPERTY, dir.resolve("runs").toString());
        Ane.use(new LocalSession(new ane4j.backend.ref.RefBackend()));
        kernel = new FakeKernel();
        new MagicRegistry().add(new TrainMagics()).installInto(kernel, false);
        hubBefore = Ane.hub;
    }

    @AfterEach
    void tearDown() {
        Ane.hub = hubBefore;
        if (runsBefore == null) System.clearProperty(Run.RUNS_PROPERTY);
        else System.setProperty(Run.RUNS_PROPERTY, runsBefore);
        Ane.shutdown();
    }

    private TrainingRun cell(String body) throws Exception {
        kernel.getMagicsRegistry().evalCellMagic(kernel, "train", List.of("--background"), body);
        return TrainingRun.current().await();
    }

    private static double[] losses(Path runDir) {
        return ane4j.run.MetricsLog.read(runDir.resolve("metrics.jsonl"), Long.MAX_VALUE, w -> {}).stream().mapToDouble(m -> m.loss()).toArray();
    }

    @Test
    void anIdInACellOrInAneTrainIsTheSnapshotOfTheCli() throws Exception {
        Path served = dir.resolve("served");
        HfExport.write(served, Parameters.init(ModelConfig.parse("tiny"), 4), Safetensors.DType.F32);
        try (LocalHub server = new LocalHub("org/tiny", served)) {
            Ane.hub = () -> new HfHub(Map.of("HF_ENDPOINT", server.endpoint(), "HF_HOME", dir.resolve("hf").toString()), null);
            Path snap = dir.resolve("hf/hub/models--org--tiny/snapshots/" + LocalHub.COMMIT);
            String common = "steps = 2\ninProcess = true\nevalEvery = 0\nbackend = ref\n";
            TrainingRun byId = cell("init = org/tiny\n" + common);
            assertEquals(snap, byId.options().init(), "the id became its snapshot folder in the huggingface_hub cache");
            assertTrue(Files.isSymbolicLink(snap.resolve("model.safetensors")));
            TrainingRun byPath = cell("init = " + served + "\n" + common);
            assertArrayEquals(losses(byPath.runDir()), losses(byId.runDir()), "the same model through the hub as from its folder");
            TrainingRun api = Ane.train(Map.of("model", "org/tiny", "steps", 2, "inProcess", true, "evalEvery", 0, "backend", "ref"));
            assertEquals(snap, api.options().init(), "model = org/name is the model to fine-tune, as mlx-lm's --model");
            assertArrayEquals(losses(byId.runDir()), losses(api.runDir()));
        }
    }
}
