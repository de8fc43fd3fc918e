package ane4j.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ane4j.run.StepMetrics;
import ane4j.run.TrainOptions;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/** A worker that warmed up (the notebook's, started ahead of its first run) trains the same numbers as one that did not. */
@Tag("process")
class WarmUpTest {
    @TempDir Path dir;

    @Test
    void aWarmedUpWorkerTrainsTheSameLosses() {
        WorkerTestSupport.Log log = new WorkerTestSupport.Log();
        List<Float> warm = new ArrayList<>(), cold = new ArrayList<>();
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(log))) {
            s.startAndWarmUp();
            for (StepMetrics m : s.train(options("warm"), null)) warm.add(m.loss());
        }
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(log))) {
            for (StepMetrics m : s.train(options("cold"), null)) cold.add(m.loss());
        }
        assertEquals(3, warm.size());
        assertEquals(cold, warm, "losses with and without the warm-up");
    }

    private TrainOptions options(String name) {
        return TrainOptions.of(Map.of("steps", "3", "backend", "ref", "runDir", dir.resolve(name).toString()));
    }
}
