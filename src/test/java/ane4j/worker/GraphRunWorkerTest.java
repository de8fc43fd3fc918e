package ane4j.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.run.StepMetrics;
import ane4j.run.TrainOptions;
import ane4j.train.Checkpoint;
import ane4j.train.GraphRunFixture;
import ane4j.train.Trainer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * A graph run is just another run (issue 31): the worker hosts it as it hosts a preset run (the graph and data are files
 * named by the options that cross the pipe), and it ends bit-identical to the same run in this JVM, also when the worker
 * is SIGKILLed mid-run and the supervisor restarts it from the last checkpoint.
 */
@Tag("process")
class GraphRunWorkerTest {
    @TempDir Path dir;

    record Reference(float[] weights, float[] m, float[] v, float[] losses) {}

    private Reference inProcess(Map<String, String> opts) {
        try (Trainer t = new Trainer(TrainOptions.of(opts), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            List<StepMetrics> h = t.run(null, 0);
            return new Reference(t.weights().clone(), t.firstMoments().clone(), t.secondMoments().clone(), SupervisedTrainingTest.losses(h));
        }
    }

    private static void assertSameRun(Reference ref, Path runDir, List<StepMetrics> history) {
        Checkpoint.Contents c = Checkpoint.loadNewest(runDir.resolve("checkpoints"), w -> { throw new AssertionError(w); });
        assertEquals(ref.losses().length, c.state().step());
        assertTrue(c.state().graph() != null, "a graph run's checkpoint");
        assertArrayEquals(ref.weights(), c.params(), "weights");
        assertArrayEquals(ref.m(), c.m(), "AdamW first moments");
        assertArrayEquals(ref.v(), c.v(), "AdamW second moments");
        assertArrayEquals(ref.losses(), SupervisedTrainingTest.losses(history), "loss curve");
    }

    @Test
    void aGraphRunInAWorkerEqualsTheSameRunInProcess() throws Exception {
        GraphRunFixture.write(dir);
        Reference ref = inProcess(GraphRunFixture.options(dir, dir.resolve("ref"), 40));
        Path runDir = dir.resolve("worker");
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(new WorkerTestSupport.Log()))) {
            List<StepMetrics> h = s.train(TrainOptions.of(GraphRunFixture.options(dir, runDir, 40)), null);
            assertSameRun(ref, runDir, h);
        }
        assertTrue(Files.readString(runDir.resolve("run.json")).contains("\"param.w1\": \"16 4\""));
    }

    /** The CPU loss head's run (keys logits and labels) in a worker: the same bits as in this JVM. */
    @Test
    void aHeadRunInAWorkerEqualsTheSameRunInProcess() throws Exception {
        GraphRunFixture.writeWithLogits(dir);
        Map<String, String> ref = head(GraphRunFixture.options(dir, dir.resolve("ref"), 40));
        Reference expected = inProcess(ref);
        Path runDir = dir.resolve("worker");
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(new WorkerTestSupport.Log()))) {
            List<StepMetrics> h = s.train(TrainOptions.of(head(GraphRunFixture.options(dir, runDir, 40))), null);
            assertSameRun(expected, runDir, h);
        }
    }

    /**
     * A graph run compiles its forward and backward once per worker (the parameters are inputs), so it reaches a compile
     * budget only when other compiles in the same worker spend it (a notebook's kernels, {@code Fit.apply}). With a
     * budget of 3 the run's two kernels leave room for one more: the second kernel compiled while it trains stops it at
     * an update boundary with a checkpoint, the worker exits for the budget, and the next one resumes the run and
     * compiles the kernel. Four kernels compiled during the run: three restarts, and the run ends bit-identical to the
     * same run uninterrupted in this JVM (with the CPU loss head: both kinds of graph run).
     */
    @Test
    void kernelsCompiledDuringAGraphRunSpendTheBudgetAndItRestartsBitIdentical() throws Exception {
        GraphRunFixture.writeWithLogits(dir);
        for (boolean withHead : new boolean[] {false, true}) {
            int steps = 600;
            Map<String, String> ref = GraphRunFixture.options(dir, dir.resolve("ref" + withHead), steps, "checkpointEvery", "50");
            Reference expected = inProcess(withHead ? head(ref) : ref);
            var log = new WorkerTestSupport.Log();
            Path runDir = dir.resolve("budget" + withHead);
            Map<String, String> opts = GraphRunFixture.options(dir, runDir, steps, "checkpointEvery", "50");
            try (Supervisor s = new Supervisor(WorkerTestSupport.options(log).withCompileBudget(3))) {
                WorkerTestSupport.Started session = WorkerTestSupport.start(s, TrainOptions.of(withHead ? head(opts) : opts), null);
                int compiled = 0;
                for (int at = 10; at <= 40 && !session.isDone(); at += 10) {
                    while (!session.isDone() && session.nextStep() < at) Thread.sleep(1);
                    if (session.isDone()) break;
                    try (RemoteKernel k = s.compile(RemoteKernelTest.program(at))) {
                        compiled++;
                    }
                }
                List<StepMetrics> h = session.await(java.time.Duration.ofMinutes(3));
                assertSameRun(expected, runDir, h);
                assertEquals(4, compiled, "the run ended before four kernels were compiled during it");
                List<String> restarts = log.matching("worker restarted: ");
                assertEquals(3, restarts.size(), log.lines.toString());
                assertEquals(3, s.status().restarts());
                for (String r : restarts) assertTrue(r.startsWith("worker restarted: compile budget 3 reached — restored step "), r);
            }
        }
        // a budget of 1 cannot hold the run's two kernels: no restart loop, one line naming the fix
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(new WorkerTestSupport.Log()).withCompileBudget(1))) {
            var e = org.junit.jupiter.api.Assertions.assertThrows(WorkerException.class, () -> s.train(TrainOptions.of(GraphRunFixture.options(dir, dir.resolve("tiny"), 20)), null));
            assertTrue(e.getMessage().startsWith("[worker] gave up after 3 restarts without progress at step 0 (the worker compile budget 1 reached each time)")
                    && e.getMessage().contains("raise it with") && !e.getMessage().contains("\n"), e.getMessage());
        }
    }

    /**
     * A budget the training run's own kernels fill: a kernel compiled beside the run could never fit, not even in a new
     * worker (which compiles the run's kernels first), so it is refused at once in one line, and the run goes on
     * without a restart.
     */
    @Test
    void aKernelThatCannotFitBesideTheRunIsRefusedWithoutRestarts() throws Exception {
        GraphRunFixture.writeWithLogits(dir);
        var log = new WorkerTestSupport.Log();
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(log).withCompileBudget(2))) {
            // far more steps than run before it is stopped: the run is still training when the kernel is compiled, on any machine
            WorkerTestSupport.Started session = WorkerTestSupport.start(s, TrainOptions.of(GraphRunFixture.options(dir, dir.resolve("full"), 1_000_000)), null);
            while (!session.isDone() && session.nextStep() < 5) Thread.sleep(1);
            var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class, () -> s.compile(RemoteKernelTest.program(1)));
            assertEquals("[worker] the compile budget of 2 cannot hold 1 live kernels beside the 2 kernels of the training run; close kernels you "
                    + "no longer need or raise it with Supervisor.Options.withCompileBudget (or -Dane4j.compileBudget)", e.getMessage());
            long at = session.nextStep();
            while (!session.isDone() && session.nextStep() < at + 5) Thread.sleep(1);   // the run goes on after the refusal
            session.stop();
            List<StepMetrics> h = session.await(java.time.Duration.ofMinutes(3));
            assertTrue(h.size() >= at + 5 && h.size() < 1_000_000, h.size() + " steps");
            assertEquals(0, s.status().restarts(), log.lines.toString());
        }
    }

    /** The options of {@link GraphRunFixture#writeWithLogits}'s logits-only graph trained with the CPU loss head. */
    private Map<String, String> head(Map<String, String> o) {
        o.put("graph", dir.resolve("logits.mil").toString());
        o.put("logits", "logits");
        o.put("labels", "labels");
        return o;
    }

    @Test
    void aSigkilledWorkerRestartsAndTheGraphRunEndsBitIdentical() throws Exception {
        GraphRunFixture.write(dir);
        int steps = 400;
        Reference ref = inProcess(GraphRunFixture.options(dir, dir.resolve("ref"), steps, "checkpointEvery", "5"));
        var log = new WorkerTestSupport.Log();
        Path runDir = dir.resolve("worker");
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(log))) {
            WorkerTestSupport.Started session = WorkerTestSupport.start(s, TrainOptions.of(GraphRunFixture.options(dir, runDir, steps, "checkpointEvery", "5")), null);
            // kill the worker once it has written a checkpoint and gone past it (whenever that is, the end must be the same)
            while (!session.isDone() && (Checkpoint.list(runDir.resolve("checkpoints")).isEmpty() || session.nextStep() < 12)) Thread.sleep(2);
            long pid = s.workerPid();
            boolean killed = !session.isDone() && pid > 0;
            if (killed) {
                ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
                RemoteKernelTest.waitDead(pid);
            }
            List<StepMetrics> h = session.await(java.time.Duration.ofMinutes(3));
            assertSameRun(ref, runDir, h);
            if (killed) assertEquals(1, log.matching("worker restarted: ").size(), log.lines.toString());
            assertTrue(killed || log.matching("worker restarted: ").isEmpty(), "the run ended before the kill (a very fast machine): the comparison still holds");
        }
    }
}
