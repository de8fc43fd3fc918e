package ane4j.backend.ane;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ane.ffm.FakeObjc;
import ane4j.backend.ref.RefBackend;
import ane4j.programs.AcceptancePrograms;
import ane4j.mil.Program;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * {@link AneKernel#bind()} on the fake runtime (its evaluate runs the reference interpreter, {@link RefOnFake}): each
 * binding has input surfaces and a request of its own, keeps what was written into it across evaluations of other
 * bindings, and evaluates with no input copy (maderix {@code training_dynamic/train.m}: {@code pls[L].*_in},
 * {@code plr[L].*}, {@code ane_eval_req}).
 */
class AneKernelBindingContractTest extends FakeRuntimeFixture {
    @AfterEach
    void noViolations() {
        ane.close();
        FakeRuntime.assertNoViolationsAndPoolsPopped(fake);
    }

    /** Two inputs, q and k, whose rows are packed under this OS profile. */
    Program boundProgram() { return AcceptancePrograms.a10QkT(2, 4, 8); }

    @Test
    void bindingsKeepTheirInputsAndEvaluateWithoutCopies() {
        Program p = boundProgram();   // two inputs, q and k
        try (AneKernel k = (AneKernel) AneBackendContractTest.backend().compile(p); Kernel r = new RefBackend().compile(p)) {
            assertTrue(k.prefersBoundInputs());
            assertFalse(r.prefersBoundInputs(), "the reference backend stages on demand");
            Map<String, TensorBuffer> a = AneBackendContractTest.randomInputs(r, 1), b = AneBackendContractTest.randomInputs(r, 2);
            Kernel.Binding ba = k.bind(), bb = k.bind();
            for (String name : List.of("k", "q")) {
                ba.input(name).copyFrom(a.get(name));
                bb.input(name).copyFrom(b.get(name));
            }
            assertNotSame(ba.input("q"), bb.input("q"));
            TensorBuffer out = TensorBuffer.allocate(k.output("scores").type());
            // a, b, a again: each binding still holds its own inputs after the other one ran
            for (var run : List.of(Map.entry(ba, a), Map.entry(bb, b), Map.entry(ba, a))) {
                int logBefore = fake.log().size();
                run.getKey().evaluate(Map.of("scores", out));
                List<String> surfaceCalls = fake.log().subList(logBefore, fake.log().size()).stream().map(FakeObjc.Entry::kind)
                        .filter(s -> s.startsWith("IOSurface")).toList();
                assertEquals(List.of("IOSurfaceUnlock", "IOSurfaceUnlock", "IOSurfaceLock", "IOSurfaceLock", "IOSurfaceLock", "IOSurfaceUnlock"), surfaceCalls,
                        "the binding's two held input locks dropped for the ANE and taken again, then the output read; no input write");
                assertArrayEquals(r.evaluate(run.getValue()).get("scores").toFloatArray(), out.toFloatArray());
            }
            assertEquals(0, k.copiedInputBytes(), "bindings copy no input");
            k.evaluate(a, Map.of("scores", out));
            assertEquals(a.get("q").byteSize() + a.get("k").byteSize(), k.copiedInputBytes(), "a plain evaluate copies every input");
            bb.close();
            assertThrows(IllegalStateException.class, () -> bb.evaluate(Map.of("scores", out)));
            ba.evaluate(Map.of("scores", out));
            assertArrayEquals(r.evaluate(a).get("scores").toFloatArray(), out.toFloatArray(), "closing one binding leaves the other");
            k.close();
            assertThrows(IllegalStateException.class, () -> ba.input("q"), "a binding dies with its kernel");
        }
        assertEquals(0, fake.liveObjects(), "leaked: " + fake.liveDescription());
    }
}
