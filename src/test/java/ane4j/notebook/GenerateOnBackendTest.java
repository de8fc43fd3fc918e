package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.session.LocalSession;
import ane4j.session.Session;
import ane4j.session.WorkerSession;
import ane4j.worker.Supervisor;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code %generate --backend} / {@code Ane.generate(…, backend)} / {@code TrainingRun.generate(…, backend, decode)}: the
 * run's model prefilled on the session's backend gives the CPU's text, in process and in the supervised worker (whose
 * restart recompiles the generation kernels like any other), with a LoRA run's adapters unmerged; the kernels compile
 * once for the run.
 */
@Tag("process")
class GenerateOnBackendTest {
    @TempDir Path dir;

    static int compiled(TrainingRun r) {
        Matcher m = Pattern.compile("(\\d+) kernels compiled for the run").matcher(r.lastGenerate());
        assertTrue(m.find(), r.lastGenerate());
        return Integer.parseInt(m.group(1));
    }

    static void sameAsCpu(TrainingRun run, String backend) {
        String cpu = run.generate("Once upon a time", 24, 0f, 1f, 1, "cpu", null);
        for (String decode : new String[] {"cpu", "backend"}) {
            assertEquals(cpu, run.generate("Once upon a time", 24, 0f, 1f, 1, backend, decode), "decode " + decode);
            assertTrue(run.lastGenerate().startsWith("ref: prefill "), run.lastGenerate());
        }
    }

    @Test
    void inProcessPlainAndLora() {
        for (String extra : new String[] {"", "lora = 4\nloraTargets = q,k,v,o,w1,w2,w3\nlr = 3e-2\n"}) {
            TrainingRun run = TrainingRun.start(new LocalSession(new RefBackend(RefBackend.Options.ANE_LIKE)),
                    "backend = ref\nsteps = 20\nseed = 2\nrunDir = " + dir.resolve("local" + extra.length()) + "\n" + extra).await();
            sameAsCpu(run, "ref");
            int after = compiled(run);
            assertEquals(4, after, "one bucket: prefill attention and FFN, decode attention and FFN");
            run.generate("Lily", 8, 0.8f, 0.9f, 3, "backend", null);
            assertEquals(after, compiled(run), "compiled once for the run: another call compiles nothing");
            assertEquals(run.generate("Lily", 8, 0.8f, 0.9f, 3, "ref", null), run.generate("Lily", 8, 0.8f, 0.9f, 3, "ref", null), "seeded sampling is reproducible");
        }
    }

    @Test
    void inTheWorkerTheKernelsSurviveARestart() throws Exception {
        List<String> log = Collections.synchronizedList(new ArrayList<>());
        try (WorkerSession session = new WorkerSession(Supervisor.Options.defaults().withBackend("ref").withHeap("512m").withLog(log::add))) {
            TrainingRun run = TrainingRun.start(session, "backend = ref\nsteps = 20\nseed = 2\nrunDir = " + dir.resolve("worker") + "\n").await();
            sameAsCpu(run, "ref");
            Session.Status s = session.status();
            Matcher m = Pattern.compile("pid (\\d+)").matcher(s.worker());
            assertTrue(m.find(), s.worker());
            ProcessHandle h = ProcessHandle.of(Long.parseLong(m.group(1))).orElseThrow();
            h.destroyForcibly();
            h.onExit().get(30, TimeUnit.SECONDS);
            String cpu = run.generate("Once upon a time", 24, 0f, 1f, 1, "cpu", null);
            assertEquals(cpu, run.generate("Once upon a time", 24, 0f, 1f, 1, "ref", "backend"), "after the restart");
            List<String> restarts = log.stream().filter(WorkerSession::isRestart).toList();
            assertEquals(1, restarts.size(), log.toString());
            assertTrue(restarts.getFirst().contains("4 kernels recompiled"), restarts.getFirst());
        }
    }

    @Test
    void anotherBackendThanTheSessionsIsOneLine() {
        TrainingRun run = TrainingRun.start(new LocalSession(new RefBackend()), "backend = ref\nsteps = 2\nrunDir = " + dir.resolve("x") + "\n").await();
        var e = assertThrows(IllegalArgumentException.class, () -> run.generate("Lily", 4, 0f, 1f, 1, "ane", null));
        assertEquals("[generate] the session runs on ref, not ane; use --backend ref or cpu (Ane.use(...) for another session)", e.getMessage());
        var d = assertThrows(IllegalArgumentException.class, () -> run.generate("Lily", 4, 0f, 1f, 1, "cpu", "backend"));
        assertFalse(d.getMessage().contains("\n"));
        var g = TrainMagics.parseGenerate(List.of("Lily", "--backend", "ref", "--decode", "backend"));
        assertEquals("ref", g.backend);
        assertEquals("backend", g.decode);
        assertEquals("cpu", TrainMagics.parseGenerate(List.of("Lily")).backend, "the CPU unless asked");
    }
}
