package ane4j.worker;

import ane4j.run.RunState;
import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.train.Checkpoint;
import ane4j.train.CheckpointFormatException;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/** Training through the worker, restarted for the compile budget or killed at random, ends bit-identical to an in-process run. */
@Tag("process")
class SupervisedTrainingTest {
    static final int STEPS = 60;

    @TempDir Path dir;

    /** The uninterrupted run, in this JVM. */
    record Reference(float[] params, float[] m, float[] v, float[] losses) {}

    Reference inProcess(Map<String, String> opts) {
        try (Trainer t = new Trainer(TrainOptions.of(opts), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            List<StepMetrics> h = t.run(null, 0);
            return new Reference(t.parameters().data().clone(), t.firstMoments().clone(), t.secondMoments().clone(), losses(h));
        }
    }

    static float[] losses(List<StepMetrics> h) {
        float[] l = new float[h.size()];
        for (int i = 0; i < l.length; i++) {
            assertEquals(i, h.get(i).step());
            l[i] = h.get(i).loss();
        }
        return l;
    }

    static void assertSameRun(Reference ref, Path runDir, List<StepMetrics> history) {
        Checkpoint.Contents c = Checkpoint.loadNewest(runDir.resolve("checkpoints"), w -> { throw new AssertionError(w); });
        assertEquals(ref.losses().length, c.state().step());
        assertArrayEquals(ref.params(), c.params(), "weights");
        assertArrayEquals(ref.m(), c.m(), "AdamW first moments");
        assertArrayEquals(ref.v(), c.v(), "AdamW second moments");
        assertArrayEquals(ref.losses(), losses(history), "loss curve");
    }

    @Test
    void compileBudgetRestartsEndBitIdentical() throws Exception {
        // static weights: 10 compiles to start, 8 per update; a budget of 82 allows 10 steps per worker
        Map<String, String> refOpts = WorkerTestSupport.trainOptions(dir, dir.resolve("ref"), STEPS, "static", 0);
        Reference ref = inProcess(refOpts);
        var log = new WorkerTestSupport.Log();
        Path runDir = dir.resolve("supervised");
        Map<String, String> opts = new java.util.HashMap<>(refOpts);
        opts.put("runDir", runDir.toString());
        List<String> messages = java.util.Collections.synchronizedList(new ArrayList<>());
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(log).withCompileBudget(82))) {
            List<StepMetrics> h = s.train(TrainOptions.of(opts), new Trainer.Listener() {
                @Override public void onStep(StepMetrics m) {}

                @Override public void onMessage(String line) { messages.add(line); }
            });
            assertSameRun(ref, runDir, h);
            List<String> restarts = log.matching("worker restarted: ");
            // steps 10, 20, …, 50: the weights after the last update are never staged, so 60 steps need 5 restarts
            assertEquals(5, restarts.size(), log.lines.toString());
            for (int i = 0; i < restarts.size(); i++)
                assertTrue(restarts.get(i).startsWith("worker restarted: compile budget 82 reached — restored step " + 10 * (i + 1) + ", 0 kernels recompiled in "), restarts.get(i));
            assertEquals(5, s.status().restarts());
            // the restart lines say it all: no per-restart "resumed from" lines, no non-determinism warnings, and the
            // run's one setup note (static weights: no validation during training) said once, not after every restart
            assertEquals(1, messages.size(), messages.toString());
            assertTrue(messages.getFirst().startsWith("[eval] weights = static: no validation during training"), messages.toString());
        }
    }

    @Test
    void sigkillAtRandomMomentsEndsBitIdenticalAndLeavesLoadableCheckpoints() throws Exception {
        // long enough that 12 kills (each waiting for progress, then up to 120 ms) fit before the end even when the
        // machine is loaded and steps are fast
        Map<String, String> refOpts = WorkerTestSupport.trainOptions(dir, dir.resolve("ref"), 4 * STEPS, "dynamic", 3);
        Reference ref = inProcess(refOpts);
        var log = new WorkerTestSupport.Log();
        Path runDir = dir.resolve("supervised");
        Map<String, String> opts = new java.util.HashMap<>(refOpts);
        opts.put("runDir", runDir.toString());
        Path ckpts = runDir.resolve("checkpoints");
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(log))) {
            WorkerTestSupport.Started session = WorkerTestSupport.start(s, TrainOptions.of(opts), null);
            Random rnd = new Random(11);
            int kills = 0, duringWrite = 0;
            long lastKillStep = -1;
            List<String> unloadable = new ArrayList<>();
            while (kills < 12 && !session.isDone()) {
                // only kill a worker that got past the last kill point, so every restart makes progress
                while (!session.isDone() && session.nextStep() <= lastKillStep + 1) Thread.sleep(2);
                if (session.isDone()) break;
                boolean inWrite = kills % 2 == 1;
                Path fresh = inWrite ? awaitFreshTemp(ckpts, session) : null;
                if (!inWrite) Thread.sleep(rnd.nextInt(120));
                long pid = s.workerPid();
                if (pid < 0 || session.isDone()) continue;
                ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
                RemoteKernelTest.waitDead(pid);
                lastKillStep = session.nextStep() - 1;
                kills++;
                if (fresh != null && Files.exists(fresh)) duringWrite++;
                unloadable.addAll(unloadable(ckpts));
            }
            List<StepMetrics> h = session.await(java.time.Duration.ofMinutes(3));
            assertTrue(kills >= 10, "only " + kills + " kills before the run ended");
            assertTrue(duringWrite >= 1, "no kill landed inside a checkpoint write (" + kills + " kills)");
            assertEquals(List.of(), unloadable);
            assertEquals(List.of(), unloadable(ckpts));
            assertSameRun(ref, runDir, h);
            assertEquals(kills, s.status().restarts());
            assertEquals(kills, log.matching("worker restarted: killed by SIGKILL (exit 137) — restored step ").size(), log.lines.toString());
        }
    }

    @Test
    void stopThenResumeEndsBitIdentical() throws Exception {
        Map<String, String> refOpts = WorkerTestSupport.trainOptions(dir, dir.resolve("ref"), 16, "dynamic", 0);
        Reference ref = inProcess(refOpts);
        Path runDir = dir.resolve("supervised");
        Map<String, String> opts = new java.util.HashMap<>(refOpts);
        opts.put("runDir", runDir.toString());
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(new WorkerTestSupport.Log()))) {
            // a listener may call the supervisor (a live plot asking for status): it must not block the channel
            List<Boolean> running = java.util.Collections.synchronizedList(new ArrayList<>());
            WorkerTestSupport.Started first = WorkerTestSupport.start(s, TrainOptions.of(opts), m -> running.add(s.status().running()));
            while (first.nextStep() < 5 && !first.isDone()) Thread.sleep(2);
            first.stop();
            List<StepMetrics> h = new ArrayList<>(first.await(java.time.Duration.ofMinutes(1)));
            assertEquals(RunState.STOPPED, first.state);
            long stoppedAt = h.size();
            assertEquals(java.util.Collections.nCopies((int) stoppedAt, true), running);
            assertTrue(stoppedAt >= 5 && stoppedAt < 16, "stopped at " + stoppedAt);
            assertEquals(stoppedAt, Checkpoint.load(Checkpoint.list(runDir.resolve("checkpoints")).getFirst()).state().step());
            // a fresh run into the same directory is refused; a resume continues where it stopped
            var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> WorkerTestSupport.start(s, TrainOptions.of(opts), null));
            assertTrue(e.getMessage().contains("already has checkpoints"), e.getMessage());
            opts.put("resume", "true");
            List<StepMetrics> rest = s.train(TrainOptions.of(opts), null);
            assertEquals(stoppedAt, rest.getFirst().step());
            h.addAll(rest);
            assertSameRun(ref, runDir, h);
        }
    }

    /** Waits until a checkpoint temp file appears that was not there before (a write in progress); null on timeout. */
    static Path awaitFreshTemp(Path ckpts, WorkerTestSupport.Started session) throws IOException {
        Set<Path> stale = new HashSet<>(temps(ckpts));
        long end = System.nanoTime() + 5_000_000_000L;
        while (System.nanoTime() < end && !session.isDone()) {
            Set<Path> now = temps(ckpts);
            stale.retainAll(now);
            for (Path p : now) if (!stale.contains(p)) return p;
            Thread.onSpinWait();
        }
        return null;
    }

    static Set<Path> temps(Path ckpts) throws IOException {
        if (!Files.isDirectory(ckpts)) return Set.of();
        try (Stream<Path> s = Files.list(ckpts)) {
            return new HashSet<>(s.filter(p -> p.getFileName().toString().endsWith(".tmp")).toList());
        } catch (java.nio.file.NoSuchFileException e) {
            return Set.of();
        }
    }

    /** Checkpoints (not temp files) that exist and fail to load. */
    static List<String> unloadable(Path ckpts) {
        List<String> bad = new ArrayList<>();
        for (Path p : Checkpoint.list(ckpts)) {
            try {
                Checkpoint.load(p);
            } catch (CheckpointFormatException e) {
                if (Files.exists(p)) bad.add(e.getMessage());
            }
        }
        return bad;
    }
}
