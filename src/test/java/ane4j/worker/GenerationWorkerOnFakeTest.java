package ane4j.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ane.FakeWorkerAgent;
import ane4j.backend.ane.ffm.FakeObjc;
import ane4j.backend.ref.RefBackend;
import ane4j.infer.BackendGenerator;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterView;
import ane4j.model.Parameters;
import ane4j.session.WorkerSession;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * Generation on the ANE in a supervised worker (the fake runtime, its evaluate the reference interpreter): the generation
 * kernels count against the worker's compile budget like training's, and when it is spent the worker is replaced and
 * the live kernels recompiled from their MIL, one line said, the tokens unchanged. Not yet run on Apple hardware.
 */
@Tag("process")
class GenerationWorkerOnFakeTest {
    @TempDir Path dir;

    @Test
    void theCompileBudgetRestartsTheWorkerAndGenerationGoesOn() throws Exception {
        FakeObjc.get();   // builds the library (and skips without a C compiler); the worker inherits its override
        WorkerTestSupport.Log log = new WorkerTestSupport.Log();
        ModelConfig c = new ModelConfig("q3small", 64, 128, 2, 4, 2, 32, 256, 64, 1_000_000f, ane4j.model.RopeStyle.HALF, true, true, 1e-6f, 1f);
        Parameters p = Parameters.init(c, 5);
        for (ParameterView v : p.layout().views()) if (v.isMatrix()) for (int i = v.offset(); i < v.end(); i++) p.data()[i] *= 4f;
        int[][] prompts = {{3, 17, 99, 4, 250, 31, 8}, new int[40]};
        for (int i = 0; i < 40; i++) prompts[1][i] = (37 * i + 11) % 256;
        int[][] want = new int[2][];
        RefBackend ref = new RefBackend(RefBackend.Options.ANE_LIKE);
        try (BackendGenerator g = new BackendGenerator(p, null, ref::compile, "ref", BackendGenerator.Decode.BACKEND, null, DType.FP16)) {
            for (int r = 0; r < 2; r++) want[r] = g.generateTokens(prompts[r], 12, 0f, 1f, 1, -1, -1, t -> {});
        }
        Supervisor.Options o = Supervisor.Options.defaults().withBackend("ane").withHeap("256m").withCompileBudget(5).withLog(log)
                .withJvmOptions("-javaagent:" + agentJar())
                .withSystemProperty(FakeWorkerAgent.TMP_PROPERTY, Files.createDirectories(dir.resolve("tmp")).toString());
        try (WorkerSession session = new WorkerSession(o)) {
            assertEquals("ane", session.backendName());
            // a first generator compiles 4 kernels (bucket 32, the decode pair) and releases them; a second one, its prompt in
            // bucket 64, needs 2 more (the decode pair Apple's daemon still holds: loaded, not compiled, docs/ane-facts.md errata 3):
            // the 6th compile is past the budget of 5
            for (int round = 0; round < 2; round++)
                try (BackendGenerator g = new BackendGenerator(p, null, session::compile, session.backendName(), BackendGenerator.Decode.BACKEND, null, DType.FP16)) {
                    assertArrayEquals(want[round], g.generateTokens(prompts[round], 12, 0f, 1f, 1, -1, -1, t -> {}), "round " + round);
                    assertEquals(4, g.compiles());
                }
            List<String> restarts = log.matching("worker restarted");
            assertEquals(1, restarts.size(), log.lines.toString());
            assertTrue(restarts.getFirst().startsWith("worker restarted: compile budget 5 reached"), restarts.getFirst());
            assertEquals(1, session.supervisor().status().restarts());
        }
    }

    private Path agentJar() throws IOException {
        Path jar = dir.resolve("fake-worker-agent.jar");
        Manifest m = new Manifest();
        m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        m.getMainAttributes().put(new Attributes.Name("Premain-Class"), FakeWorkerAgent.class.getName());
        try (OutputStream out = Files.newOutputStream(jar)) {
            new JarOutputStream(out, m).close();
        }
        return jar;
    }
}
