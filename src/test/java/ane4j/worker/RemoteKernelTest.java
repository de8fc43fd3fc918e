package ane4j.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.mil.Mil;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;

/** Kernels compiled and evaluated through the worker compute what a local kernel does, and survive restarts. */
@Tag("process")
class RemoteKernelTest {
    static final TensorType X = Mil.fp16(1, 8, 1, 16);

    /** y = sigmoid(x·w + b·scale): a BLOBFILE weight (travels as a file) and an inline constant. */
    static Program program(float scale) {
        float[] w = random(8 * 16, 1), b = random(8 * 16, 2);
        return Mil.program().function("main", f -> {
            var x = f.input("x", X);
            var y = f.sigmoid(f.add(f.mul(x, f.weight("w", X, w)), f.mul(f.tensor(X, b), scale)));
            f.output(f.named("y", y));
        }).build();
    }

    static float[] random(int n, long seed) {
        Random r = new Random(seed);
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = (float) r.nextGaussian();
        return a;
    }

    static float[] local(Program p, float[] x) {
        try (Kernel k = new RefBackend(RefBackend.Options.ANE_LIKE).compile(p)) {
            TensorBuffer out = k.allocateOutput("y");
            k.evaluate(Map.of("x", TensorBuffer.of(X, x)), Map.of("y", out));
            return out.toFloatArray();
        }
    }

    @Test
    void remoteEvaluationEqualsLocalWithSharedAndPlainBuffers() {
        var log = new WorkerTestSupport.Log();
        Program p = program(0.5f);
        float[] x = random(X.count() > 0 ? (int) X.count() : 0, 3);
        float[] expected = local(p, x);
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(log))) {
            RemoteKernel k = s.compile(p);
            assertEquals(X, k.input("x").type());
            // shared buffers: no copy
            TensorBuffer in = k.allocateInput("x"), out = k.allocateOutput("y");
            in.copyFrom(x);
            k.evaluate(Map.of("x", in), Map.of("y", out));
            assertArrayEquals(expected, out.toFloatArray());
            // plain buffers: through the scratch copy
            TensorBuffer plainOut = TensorBuffer.allocate(X);
            k.evaluate(Map.of("x", TensorBuffer.of(X, x)), Map.of("y", plainOut));
            assertArrayEquals(expected, plainOut.toFloatArray());
            // the default evaluate(inputs) works too
            assertArrayEquals(expected, k.evaluate(Map.of("x", in)).get("y").toFloatArray());
            // the same program from its MIL text, with a weights directory
            RemoteKernel fromText = s.compile(k.milText(), "main", k.modelDir());
            TensorBuffer out2 = s.allocate(X);
            fromText.evaluate(Map.of("x", in), Map.of("y", out2));
            assertArrayEquals(expected, out2.toFloatArray());
            s.free(out2);
            assertEquals(MilWriter.write(p, ane4j.mil.Dialect.IOS18), k.milText());
            var wrong = assertThrows(IllegalArgumentException.class, () -> k.evaluate(Map.of("x", TensorBuffer.allocate(Mil.fp32(1, 8, 1, 16))), Map.of("y", out)));
            assertTrue(wrong.getMessage().contains("[kernel] input 'x' is fp32"), wrong.getMessage());
            var bad = assertThrows(WorkerException.class, () -> s.compile("program(1.3) { nonsense"));
            assertTrue(bad.getMessage().startsWith("["), bad.getMessage());
            assertEquals(2, s.status().liveKernels());
            assertEquals(0, s.status().restarts());
        }
    }

    @Test
    void kernelsAreRecompiledAfterBudgetRestartAndAfterSigkill() throws Exception {
        var log = new WorkerTestSupport.Log();
        Program p1 = program(0.5f), p2 = program(-1f), p3 = program(2f);
        float[] x = random((int) X.count(), 4);
        try (Supervisor s = new Supervisor(WorkerTestSupport.options(log).withCompileBudget(3))) {
            RemoteKernel k1 = s.compile(p1), k2 = s.compile(p2), k3 = s.compile(p3);
            TensorBuffer in = k2.allocateInput("x"), out = k2.allocateOutput("y");
            in.copyFrom(x);
            k1.close();
            long pid = s.workerPid();
            // the fourth compile exceeds the budget of 3: a new worker recompiles k2 and k3, then compiles k4
            RemoteKernel k4 = s.compile(program(3f));
            assertNotEquals(pid, s.workerPid());
            assertEquals(1, s.status().restarts());
            assertEquals(3, s.status().compileCount());
            assertEquals(java.util.List.of("worker restarted: compile budget 3 reached — 2 kernels recompiled in"),
                    log.matching("worker restarted").stream().map(l -> l.substring(0, l.lastIndexOf(" in ") + 3)).toList());
            k2.evaluate(Map.of("x", in), Map.of("y", out));
            assertArrayEquals(local(p2, x), out.toFloatArray());
            k4.evaluate(Map.of("x", in), Map.of("y", out));
            assertArrayEquals(local(program(3f), x), out.toFloatArray());
            // SIGKILL: the next evaluate restarts the worker, recompiles, and succeeds
            ProcessHandle.of(s.workerPid()).orElseThrow().destroyForcibly();
            waitDead(pid = s.workerPid() < 0 ? pid : s.workerPid());
            k3.evaluate(Map.of("x", in), Map.of("y", out));
            assertArrayEquals(local(p3, x), out.toFloatArray());
            assertEquals(2, s.status().restarts());
            assertTrue(log.matching("worker restarted: killed by SIGKILL (exit 137) — 3 kernels recompiled").size() == 1, log.lines.toString());
            // a fourth live kernel cannot fit a budget of 3: a clear error, no restart loop
            var full = assertThrows(IllegalStateException.class, () -> s.compile(p1));
            assertTrue(full.getMessage().contains("compile budget of 3 cannot hold 4 live kernels"), full.getMessage());
        }
    }

    static void waitDead(long pid) throws InterruptedException {
        var h = ProcessHandle.of(pid);
        if (h.isEmpty()) return;
        for (int i = 0; i < 500 && h.get().isAlive(); i++) Thread.sleep(10);
    }
}
