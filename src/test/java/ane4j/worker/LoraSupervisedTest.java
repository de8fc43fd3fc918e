package ane4j.worker;

import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ane4j.backend.ref.RefBackend;
import ane4j.train.Checkpoint;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/** A LoRA run in the worker, restarted for the compile budget or killed, ends bit-identical to the same run in this JVM. */
@Tag("process")
class LoraSupervisedTest {
    @TempDir Path dir;

    @Test
    void compileBudgetRestartsOfALoraRunEndBitIdentical() throws Exception {
        // static weights: 10 compiles to start, 8 per update; a budget of 82 allows 10 steps per worker
        Map<String, String> refOpts = loraOptions(20, "static", 0, "0");
        Reference ref = reference(refOpts);
        var log = new WorkerTestSupport.Log();
        Path runDir = dir.resolve("supervised");
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(log).withCompileBudget(82))) {
            List<StepMetrics> h = s.train(inWorker(refOpts, runDir), null);
            assertEquals(1, s.status().restarts(), log.lines.toString());
            ref.assertMatches(runDir, 20, h);
        }
    }

    /** Dropout's masks are a function of (seed, step, layer, target, element): workers killed mid-run redraw the same ones. */
    @Test
    void killedWorkersOfALoraRunWithDropoutEndBitIdentical() throws Exception {
        Map<String, String> refOpts = loraOptions(30, "dynamic", 3, "0.1");
        Reference ref = reference(refOpts);
        var log = new WorkerTestSupport.Log();
        Path runDir = dir.resolve("supervised");
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(log))) {
            WorkerTestSupport.Started session = WorkerTestSupport.start(s, inWorker(refOpts, runDir), null);
            int kills = 0;
            for (long killAt : new long[] {5, 13, 22}) {
                while (!session.isDone() && session.nextStep() < killAt) Thread.sleep(2);
                long pid = s.workerPid();
                if (session.isDone() || pid < 0) break;
                ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
                RemoteKernelTest.waitDead(pid);
                kills++;
            }
            List<StepMetrics> h = session.await(java.time.Duration.ofMinutes(3));
            assertEquals(3, kills, "the run ended before three kills");
            assertEquals(kills, s.status().restarts(), log.lines.toString());
            ref.assertMatches(runDir, 30, h);
        }
    }

    /** A rank-2 LoRA run on q, v, o, w2 of the workers' test model, its reference run's folder under dir/ref. */
    private Map<String, String> loraOptions(int steps, String weights, int checkpointEvery, String dropout) throws java.io.IOException {
        Map<String, String> o = new java.util.HashMap<>(WorkerTestSupport.trainOptions(dir, dir.resolve("ref"), steps, weights, checkpointEvery));
        o.put("lora", "2");
        o.put("loraTargets", "q,v,o,w2");
        o.put("loraDropout", dropout);
        return o;
    }

    /** The reference run's options in runDir, for the worker. */
    private static TrainOptions inWorker(Map<String, String> refOpts, Path runDir) {
        Map<String, String> opts = new java.util.HashMap<>(refOpts);
        opts.put("runDir", runDir.toString());
        return TrainOptions.of(opts);
    }

    /** The uninterrupted in-process run's adapters, their AdamW first moments and its loss curve. */
    private record Reference(float[] adapters, float[] m, float[] losses) {
        /** The supervised run in runDir ended at step {@code steps} with exactly these. */
        void assertMatches(Path runDir, int steps, List<StepMetrics> h) {
            Checkpoint.Contents c = Checkpoint.loadNewest(runDir.resolve("checkpoints"), w -> { throw new AssertionError(w); });
            assertEquals(steps, c.state().step());
            assertArrayEquals(adapters, c.lora(), "adapters");
            assertArrayEquals(m, c.m(), "the adapters' AdamW first moments");
            assertArrayEquals(losses, SupervisedTrainingTest.losses(h), "loss curve");
        }
    }

    private static Reference reference(Map<String, String> opts) {
        try (Trainer t = new Trainer(TrainOptions.of(opts), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            float[] losses = SupervisedTrainingTest.losses(t.run(null, 0));
            return new Reference(t.adapters().data().clone(), t.firstMoments().clone(), losses);
        }
    }
}
