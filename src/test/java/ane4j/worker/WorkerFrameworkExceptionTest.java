package ane4j.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.TensorBuffer;
import ane4j.backend.ane.FakeWorkerAgent;
import ane4j.backend.ane.ffm.FakeObjc;
import ane4j.mil.Program;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 12 point 4 end to end: an Objective-C exception inside a framework call, in a supervised worker on the ANE
 * backend (the fake runtime), reaches the caller as one error naming the selector, the exception's name and reason;
 * the worker is not restarted and serves the next compile and evaluate.
 */
@Tag("process")
class WorkerFrameworkExceptionTest {
    @TempDir Path dir;

    @Test
    void anExceptionInsideCompileIsOneErrorAndTheSameWorkerCompilesNext() throws Exception {
        try (Supervisor s = new Supervisor(options("compileWithQoS:options:error:", "NSInternalInconsistencyException", "fake: the compiler service went away"))) {
            Program p = RemoteKernelTest.program(1f);
            var e = assertThrows(WorkerException.class, () -> s.compile(p));
            assertEquals("[compileWithQoS:options:error:] raised NSInternalInconsistencyException: fake: the compiler service went away"
                    + " (an Objective-C exception inside the framework; the process goes on)", e.getMessage());
            long pid = assertStillServing(s, 0);
            assertEvaluatesLikeTheReference(s, s.compile(p), p);
            assertEquals(pid, s.workerPid());
        }
    }

    @Test
    void anExceptionInsideEvaluateIsOneErrorAndTheSameKernelEvaluatesNext() throws Exception {
        try (Supervisor s = new Supervisor(options("evaluateWithQoS:options:request:error:", "NSGenericException", "fake: request rejected"))) {
            Program p = RemoteKernelTest.program(1f);
            RemoteKernel k = s.compile(p);
            TensorBuffer in = k.allocateInput("x"), out = k.allocateOutput("y");
            in.copyFrom(RemoteKernelTest.random((int) RemoteKernelTest.X.count(), 5));
            var e = assertThrows(WorkerException.class, () -> k.evaluate(Map.of("x", in), Map.of("y", out)));
            assertEquals("[evaluateWithQoS:options:request:error:] raised NSGenericException: fake: request rejected"
                    + " (an Objective-C exception inside the framework; the process goes on)", e.getMessage());
            long pid = assertStillServing(s, 1);
            assertEvaluatesLikeTheReference(s, k, p);
            assertEvaluatesLikeTheReference(s, s.compile(RemoteKernelTest.program(2f)), RemoteKernelTest.program(2f));
            assertEquals(pid, s.workerPid());
        }
    }

    private final WorkerTestSupport.Log log = new WorkerTestSupport.Log();

    /** An ANE worker on the fake whose {@code selector} raises once. */
    private Supervisor.Options options(String selector, String name, String reason) throws IOException {
        FakeObjc.get();   // builds the library (and skips without a C compiler); the worker inherits its override
        return Supervisor.Options.defaults().withBackend("ane").withHeap("256m").withLog(log)
                .withJvmOptions("-javaagent:" + agentJar())
                .withSystemProperty(FakeWorkerAgent.TMP_PROPERTY, Files.createDirectories(dir.resolve("tmp")).toString())
                .withSystemProperty(FakeWorkerAgent.THROW_PROPERTY, selector + "|" + name + "|" + reason + "|1");
    }

    /** The worker that raised is alive and was never restarted; returns its pid. */
    private long assertStillServing(Supervisor s, int liveKernels) {
        Supervisor.Status st = s.status();
        assertTrue(st.running(), st.toString());
        assertEquals("ane", st.backend());
        assertEquals(0, st.restarts(), log.lines.toString());
        assertEquals(liveKernels, st.liveKernels());
        assertTrue(ProcessHandle.of(st.workerPid()).map(ProcessHandle::isAlive).orElse(false));
        assertEquals(java.util.List.of(), log.matching("worker restarted"));
        assertTrue(log.lines.stream().noneMatch(l -> l.contains("\tat ") || l.contains("Exception in thread")), log.lines.toString());
        return st.workerPid();
    }

    private static void assertEvaluatesLikeTheReference(Supervisor s, RemoteKernel k, Program p) {
        float[] x = RemoteKernelTest.random((int) RemoteKernelTest.X.count(), 6);
        TensorBuffer in = k.allocateInput("x"), out = k.allocateOutput("y");
        in.copyFrom(x);
        k.evaluate(Map.of("x", in), Map.of("y", out));
        assertArrayEquals(RemoteKernelTest.local(p, x), out.toFloatArray());
    }

    /** A jar holding only a manifest naming the agent (its class is on the worker's class path already). */
    private Path agentJar() throws IOException {
        Path jar = dir.resolve("fake-worker-agent.jar");
        Manifest m = new Manifest();
        m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        m.getMainAttributes().put(new Attributes.Name("Premain-Class"), FakeWorkerAgent.class.getName());
        try (OutputStream o = Files.newOutputStream(jar)) {
            new JarOutputStream(o, m).close();   // the manifest is all
        }
        return jar;
    }
}
