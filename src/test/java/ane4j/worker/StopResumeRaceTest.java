package ane4j.worker;

import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.*;

import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * A resume sent the moment the stopped run's TRAIN_END arrives (a notebook's {@code %train stop} then {@code resume})
 * is accepted: the worker's training thread may still be returning then. Before the fix about one cycle in six was
 * refused with "a training run is already in progress" on a loaded machine.
 */
@Tag("process")
class StopResumeRaceTest {
    @TempDir Path dir;

    @Test
    void resumeRightAfterStopIsAccepted() throws Exception {
        Map<String, String> opts = new HashMap<>(WorkerTestSupport.trainOptions(dir, dir.resolve("run"), 200, "dynamic", 0));
        var log = new WorkerTestSupport.Log();
        List<StepMetrics> all = new ArrayList<>();
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(log))) {
            WorkerTestSupport.Started t = WorkerTestSupport.start(s, TrainOptions.of(opts), null);
            opts.put("resume", "true");
            for (int cycle = 0; cycle < 15 && !t.isDone(); cycle++) {
                long at = t.nextStep();
                while (t.nextStep() < at + 2 && !t.isDone()) Thread.sleep(1);
                t.stop();
                all.addAll(t.await(java.time.Duration.ofMinutes(1)));
                t = WorkerTestSupport.start(s, TrainOptions.of(opts), null);   // at once: no pause after TRAIN_END
            }
            t.stop();
            all.addAll(t.await(java.time.Duration.ofMinutes(1)));
        }
        for (int i = 0; i < all.size(); i++) assertEquals(i, all.get(i).step(), "every step once, in order, across the resumes");
        assertEquals(List.of(), log.matching("worker restarted"), "no worker died");
    }
}
