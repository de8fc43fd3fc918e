package ane4j.notebook;

import ane4j.run.RunSpec;
import ane4j.run.RunState;
import ane4j.session.*;
import static org.junit.jupiter.api.Assertions.*;

import ane4j.backend.ref.RefBackend;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.model.Generator;
import ane4j.worker.Supervisor;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * The notebook API on the supervised worker: kernels and training run in a child JVM, a killed worker and a spent
 * compile budget cost one line each, and the numbers are those of the in-process session.
 */
@Tag("process")
class WorkerSessionTest {
    @TempDir
    Path dir;

    final List<String> log = Collections.synchronizedList(new ArrayList<>());
    WorkerSession session;

    @BeforeEach
    void start() {
        session = new WorkerSession(Supervisor.Options.defaults().withBackend("ref").withHeap("512m").withLog(log::add));
    }

    @AfterEach
    void stop() {
        session.close();
    }

    static Program twice() {
        return Mil.program().function("main", f -> f.output(f.named("y", f.mul(f.input("x", Mil.fp16(1, 2, 1, 2)), 2f)))).build();
    }

    long pid(Session.Status s) {
        var m = java.util.regex.Pattern.compile("pid (\\d+)").matcher(s.worker());
        assertTrue(m.find(), "the worker row names the pid: " + s.worker());
        return Long.parseLong(m.group(1));
    }

    @Test
    void kernelsRunInTheWorkerAndSurviveAKilledWorker() throws Exception {
        CompiledProgram k = new CompiledProgram("twice", twice(), session.compile(twice()), "ref");
        assertArrayEquals(new float[] {2f, -5f, 6f, 0.5f}, k.run(1f, -2.5f, 3f, 0.25f));
        Session.Status s = session.status();
        long pid = pid(s);
        assertNotEquals(ProcessHandle.current().pid(), pid, "a child JVM");
        assertEquals("ref", s.backend());
        assertTrue(s.compiles() >= 1, "the worker counted the compile: " + s);
        assertTrue(s.worker().contains("restarts 0") && s.worker().contains("1 kernel"), s.worker());

        ProcessHandle h = ProcessHandle.of(pid).orElseThrow();
        h.destroyForcibly();
        h.onExit().get(30, TimeUnit.SECONDS);
        assertArrayEquals(new float[] {2f, 2f, 2f, 2f}, k.run(1f, 1f, 1f, 1f), "the kernel is recompiled in a new worker");
        List<String> restarts = log.stream().filter(WorkerSession::isRestart).toList();
        assertEquals(1, restarts.size(), "one line per restart: " + log);
        assertTrue(restarts.getFirst().contains("1 kernel recompiled"), restarts.getFirst());
        Session.Status after = session.status();
        assertNotEquals(pid, pid(after));
        assertTrue(after.worker().contains("restarts 1"), after.worker());
    }

    @Test
    void aDroppedKernelIsReleasedInTheWorker() throws Exception {
        CompiledProgram kept = new CompiledProgram("kept", twice(), session.compile(twice()), "ref");
        assertArrayEquals(new float[] {2f, 2f, 2f, 2f}, new CompiledProgram("dropped", twice(), session.compile(twice()), "ref").run(1f, 1f, 1f, 1f));
        assertEquals(2, session.supervisor().status().liveKernels());
        for (int i = 0; i < 100 && session.supervisor().status().liveKernels() > 1; i++) {
            System.gc();
            Thread.sleep(50);
        }
        assertEquals(1, session.supervisor().status().liveKernels(), "the unreachable kernel is released after GC; the kept one stays");
        assertArrayEquals(new float[] {2f, 2f, 2f, 2f}, kept.run(1f, 1f, 1f, 1f));
        kept.close();
        assertEquals(0, session.supervisor().status().liveKernels());
    }

    TrainingRun train(Session s, String name, String config) {
        return TrainingRun.start(s, "backend = ref\nrunDir = " + dir.resolve(name) + "\n" + config).await();
    }

    @Test
    void trainingRestartsOnTheBudgetAndMatchesTheInProcessRun() {
        String config = "steps = 6\nseed = 3\nweights = static\n";
        TrainingRun local = train(new LocalSession(new RefBackend()), "local", config);
        TrainingRun worker = train(session, "worker", config + "compileBudget = 40");
        assertEquals(RunState.FINISHED, worker.state());
        assertTrue(worker.restarts() >= 1, "a budget of 40 cannot hold a 6-step static-weights run: restarts " + worker.restarts());
        List<String> lines = worker.messages().stream().filter(WorkerSession::isRestart).toList();
        assertEquals(worker.restarts(), lines.size(), "one line per restart, in the run's messages: " + worker.messages());
        assertTrue(lines.getFirst().startsWith("worker restarted: compile budget 40 reached — restored step "), lines.getFirst());
        assertTrue(log.stream().noneMatch(WorkerSession::isRestart), "the run's restarts are not in the session log: " + log);
        assertArrayEquals(local.losses(), worker.losses(), "restarts in a worker do not change the numbers");
        String where = TrainingRunTest.value(worker.runTable(), "environment.worker");
        assertTrue(where.startsWith("supervised worker JVM (the run's own: exited, ref, compile budget 40, restarts " + worker.restarts()), where);

        // %generate: the worker's newest checkpoint holds the same weights as the in-process trainer's
        float[] mine = local.training().parameters().data(), theirs = worker.training().parameters().data();
        assertArrayEquals(mine, theirs, "final weights, bit for bit");
        assertEquals(local.generate("Once upon a time", 12, 0.8f, 0.9f, 5), worker.generate("Once upon a time", 12, 0.8f, 0.9f, 5));
        assertEquals(new Generator(local.training().parameters(), local.training().tokenizer()).generate("Once", 6, 0.8f, 0.9f, 1),
                new Generator(worker.training().parameters(), worker.training().tokenizer()).generate("Once", 6, 0.8f, 0.9f, 1));
    }

    @Test
    void stopAndResumeInTheSessionWorker() {
        String config = "steps = 12\nseed = 8\n";
        TrainingRun plain = train(new LocalSession(new RefBackend()), "plain", config);
        TrainingRun run = TrainingRun.start(session, "backend = ref\nrunDir = " + dir.resolve("stopped") + "\n" + config);
        while (run.history().size() < 3 && run.running()) Thread.onSpinWait();
        run.stop().await();
        assertEquals(RunState.STOPPED, run.state(), run.progressLine());
        int at = run.history().size();
        assertTrue(at >= 3 && at < 12, "stopped mid-run at " + at);
        assertEquals(at, run.training().stepsDone());
        assertTrue(run.runTable().toString().contains("the session's"), "no budget, ref: the session's worker trains");
        run.resume().await();
        assertEquals(RunState.FINISHED, run.state());
        assertArrayEquals(plain.losses(), run.losses(), "stop + resume in the worker = one uninterrupted run");
        assertTrue(run.messages().stream().noneMatch(l -> l.startsWith("[train] resumed from")), "a resume after a stop is not news: " + run.messages());
        assertEquals(0, run.restarts());
    }

    @Test
    void runAFewStepsAtATime() {
        TrainingRun whole = train(new LocalSession(new RefBackend()), "whole", "steps = 8\nseed = 4\n");
        double[] plain = whole.losses();
        java.util.concurrent.atomic.AtomicReference<Training> held = new java.util.concurrent.atomic.AtomicReference<>();
        Training t = session.train(RunSpec.of(java.util.Map.of("steps", "8", "seed", "4", "backend", "ref",
                "runDir", dir.resolve("parts").toString())), m -> { if (m.step() == 2) held.get().requestStop(); });
        held.set(t);
        var first = t.run();
        assertTrue(first.size() == 3 || first.size() == 4, "3 steps, or one more when the stop reaches the worker late: " + first.size());
        assertEquals(first.size(), t.stepsDone());
        assertFalse(t.finished());
        var rest = t.run();
        assertTrue(t.finished());
        double[] all = java.util.stream.Stream.concat(first.stream(), rest.stream()).mapToDouble(m -> m.loss()).toArray();
        assertArrayEquals(plain, all, "two calls = one uninterrupted run");
        assertArrayEquals(whole.training().parameters().data(), t.parameters().data(), "the newest checkpoint holds the final weights");
        t.close();
    }

    @Test
    void budgetTooSmallForOneStepIsOneLine() {
        TrainingRun r = TrainingRun.start(session, "backend = ref\nsteps = 3\nweights = static\ncompileBudget = 2\nrunDir = " + dir.resolve("small"));
        var e = assertThrows(MagicException.class, r::await);
        assertEquals("[train] compileBudget 2 is too small for the static-weights kernels of one step: the worker gave up after 3 restarts "
                + "without progress at step 0; raise compileBudget", e.getMessage());
        assertEquals(RunState.FAILED, r.state());
        assertArrayEquals(new float[] {2f, 2f, 2f, 2f}, new CompiledProgram("twice", twice(), session.compile(twice()), "ref").run(1f, 1f, 1f, 1f),
                "the session stays usable");
    }

    @Test
    void aRunDirWithCheckpointsIsRefusedUnlessResumed() {
        train(session, "again", "steps = 2\nseed = 1\n");
        TrainingRun r = TrainingRun.start(session, "backend = ref\nrunDir = " + dir.resolve("again") + "\nsteps = 2\nseed = 1");
        var e = assertThrows(MagicException.class, r::await);
        assertTrue(e.getMessage().contains("already has checkpoints") && e.getMessage().contains("resume = true"), e.getMessage());
    }
}
