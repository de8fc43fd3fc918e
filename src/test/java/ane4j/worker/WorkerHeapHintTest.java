package ane4j.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ane4j.run.TrainOptions;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/** Issue 18 row 19: a worker out of heap is given up on with the fix named the way the caller sets it (CLI: --heap). */
@Tag("process")
class WorkerHeapHintTest {
    @TempDir Path dir;

    @Test
    void outOfHeapNamesTheCallersHeapFlag() {
        var options = WorkerTestSupport.options(new WorkerTestSupport.Log()).withHeap("40m").withMaxRetries(1).withHints(Supervisor.Hints.CLI);
        var train = TrainOptions.of(Map.of("model", "stories15m", "steps", "2", "runDir", dir.resolve("run").toString(), "backend", "ref"));
        try (Supervisor s = new Supervisor(options)) {
            var e = assertThrows(WorkerException.class, () -> s.train(train, null));
            assertEquals("[worker] gave up after 1 restarts without progress at step 0 (the worker ran out of heap (exit 3) each time); "
                    + "give the worker more heap with --heap (e.g. --heap 8g)", e.getMessage());
        }
    }
}
