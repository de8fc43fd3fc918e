package ane4j.session;

import ane4j.run.RunSpec;
import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.*;

import ane4j.backend.ref.RefBackend;
import ane4j.run.SetupProgress;
import ane4j.train.Trainer;
import ane4j.train.TrainingKernels;
import ane4j.worker.Supervisor;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * Before its first step a run says what it is doing: "starting worker…" (supervised), "compiling kernel k/10 (name)…"
 * for each of the ten kernels in the order they compile, "first step…", then the step lines; in process and in the
 * supervised worker (over the worker protocol), and in the progress line a notebook or the CLI shows.
 */
@Tag("process")
class SetupProgressTest {
    @TempDir
    Path dir;

    /** Setup events as their lines and steps as "step N", in the order the run's observer saw them. */
    static final class Recorder implements Trainer.Listener {
        final List<String> events = Collections.synchronizedList(new ArrayList<>());
        final List<String> progressLines = Collections.synchronizedList(new ArrayList<>());
        volatile Run run;

        @Override public void onStep(StepMetrics m) { events.add("step " + (m.step() + 1)); }

        @Override public void onSetup(SetupProgress p) {
            events.add(p.line());
            Run r = run;
            if (r != null) progressLines.add(r.progressLine());
        }
    }

    static List<String> tenCompiles() {
        List<TrainingKernels.Name> ten = TrainingKernels.Name.ten();
        return IntStream.range(0, ten.size()).mapToObj(i -> "compiling kernel " + (i + 1) + "/10 (" + ten.get(i).id() + ")…").toList();
    }

    RunSpec spec(String name, String more) {
        return RunSpec.fromText("backend = ref\nsteps = 2\nrunDir = " + dir.resolve(name) + "\n" + more);
    }

    @Test
    void inProcessTheTenCompilesThenTheFirstStep() {
        Recorder r = new Recorder();
        Run run = Run.start(new LocalSession(new RefBackend()), spec("local", ""), r);
        r.run = run;
        run.await();
        List<String> expected = new ArrayList<>(tenCompiles());
        expected.addAll(List.of("first step…", "step 1", "step 2"));
        assertEquals(expected, r.events);
        assertEquals(SetupProgress.Stage.FIRST_STEP, run.setupProgress().stage());
    }

    @Test
    void staticWeightsCountTheLayerKernelsToo() {
        Recorder r = new Recorder();
        Run.start(new LocalSession(new RefBackend()), spec("static", "steps = 1\nweights = static"), r).await();
        List<String> setup = r.events.subList(0, r.events.indexOf("first step…"));
        // tiny has 2 layers: the two weightless kernels at construction, then 8 weight-bearing ones per layer
        assertEquals(List.of("compiling kernel 1/2 (sdpaBwd1)…", "compiling kernel 2/2 (sdpaBwd2)…"), setup.subList(0, 2));
        assertEquals(2 + 16, setup.size(), setup.toString());
        assertEquals("compiling kernel 1/16 (sdpaFwd · layer 1)…", setup.get(2));
        assertEquals("compiling kernel 16/16 (kvBwd · layer 2)…", setup.getLast());
    }

    @Test
    void supervisedStartingWorkerThenTheCompilesOverTheProtocol() {
        Recorder r = new Recorder();
        List<String> log = Collections.synchronizedList(new ArrayList<>());
        try (WorkerSession session = new WorkerSession(Supervisor.Options.defaults().withBackend("ref").withHeap("512m").withLog(log::add))) {
            Run run = Run.start(session, spec("worker", ""), r);
            r.run = run;
            assertTrue(run.progressLine().startsWith("step 0/2 · "), run.progressLine());
            run.await();
            List<String> expected = new ArrayList<>(List.of("starting worker…"));
            expected.addAll(tenCompiles());
            expected.addAll(List.of("first step…", "step 1", "step 2"));
            assertEquals(expected, r.events, "log: " + log);
            // what the notebook's live line and the CLI show meanwhile
            assertTrue(r.progressLines.contains("step 0/2 · compiling kernel 7/10 (sdpaBwd1)…"), r.progressLines.toString());
        }
    }
}
