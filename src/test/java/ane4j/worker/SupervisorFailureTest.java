package ane4j.worker;

import ane4j.run.RunState;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.TensorBuffer;
import ane4j.mil.Program;
import ane4j.run.TrainOptions;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/** A worker that cannot start, or keeps dying, gives one clear error, and the supervisor stays usable. */
@Tag("process")
class SupervisorFailureTest {
    @TempDir Path dir;

    @Test
    void workerThatCannotStartGivesOneClearError() throws Exception {
        var log = new WorkerTestSupport.Log();
        Program p = RemoteKernelTest.program(1f);
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(log).withJvmOptions("-XX:+NoSuchWorkerOption"))) {
            var e = assertThrows(WorkerException.class, () -> s.compile(p));
            assertTrue(e.getMessage().startsWith("[worker] the worker JVM did not start: it failed (exit 1): Unrecognized VM option 'NoSuchWorkerOption'"), e.getMessage());
            assertTrue(e.getMessage().endsWith("check the JVM options, heap and class path of Supervisor.Options"), e.getMessage());
            // still usable: status answers, the next request fails the same way (no hang, no stale state), training too
            Supervisor.Status st = s.status();
            assertFalse(st.running());
            assertEquals(0, st.liveKernels());
            assertEquals(e.getMessage(), assertThrows(WorkerException.class, () -> s.compile(p)).getMessage());
            var opts = TrainOptions.of(WorkerTestSupport.trainOptions(dir, dir.resolve("run"), 5, "dynamic", 0));
            assertEquals(e.getMessage(), assertThrows(WorkerException.class, () -> s.train(opts, null)).getMessage());
            assertEquals(e.getMessage(), assertThrows(WorkerException.class, () -> s.train(opts, null)).getMessage());
            assertEquals(-1, s.workerPid());
        }
    }

    @Test
    void workerThatKeepsDyingAtTheSameStepGivesUpWithTheCause() throws Exception {
        var log = new WorkerTestSupport.Log();
        var options = WorkerTestSupport.options(log).withSystemProperty(WorkerMain.HALT_AT_STEP_PROPERTY, "8");
        var opts = TrainOptions.of(WorkerTestSupport.trainOptions(dir, dir.resolve("run"), 20, "dynamic", 3));
        try (Supervisor s = new Supervisor(options)) {
            var e = assertThrows(WorkerException.class, () -> s.train(opts, null));
            assertEquals("[worker] gave up after 3 restarts without progress at step 8 (the worker failed (exit 1) each time)", e.getMessage());
            assertEquals(4, log.matching("worker restarted: failed (exit 1) — restored step 6, 0 kernels recompiled").size() + 1, log.lines.toString());
            assertEquals(RunState.FAILED, s.status().training());
            // usable afterwards: a kernel compiles and evaluates in a fresh worker
            Program p = RemoteKernelTest.program(1f);
            RemoteKernel k = s.compile(p);
            float[] x = RemoteKernelTest.random((int) RemoteKernelTest.X.count(), 5);
            TensorBuffer in = k.allocateInput("x"), out = k.allocateOutput("y");
            in.copyFrom(x);
            k.evaluate(Map.of("x", in), Map.of("y", out));
            assertArrayEquals(RemoteKernelTest.local(p, x), out.toFloatArray());
            // and a new run can start (resuming from the checkpoint the failed one left)
            Map<String, String> resume = Protocol.toMap(opts);
            resume.put("steps", "7");
            resume.put("resume", "true");
            var again = TrainOptions.of(resume);
            assertEquals(7, s.train(again, null).getLast().step() + 1);
        }
    }
}
