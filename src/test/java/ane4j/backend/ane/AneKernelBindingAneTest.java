package ane4j.backend.ane;

import ane4j.backend.Kernel;
import ane4j.backend.OutputDiff;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.programs.AcceptancePrograms;
import ane4j.mil.Program;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * On Apple silicon only (run alone, as {@link AneBackendAneTest}): the per-layer bound inputs training uses. One
 * loaded model, two {@code _ANERequest}s with input surfaces of their own on the model's output surfaces, as maderix's
 * {@code training_dynamic/train.m} makes one per layer ({@code plr[L].* = make_request(dk.*, pls[L].*_in)}); each keeps
 * what was written into it while the other runs. Not yet run on Apple hardware.
 */
@EnabledOnOs(OS.MAC)
class AneKernelBindingAneTest {
    @Test
    void twoBindingsOfOneKernelEachGiveTheReferenceResultForTheirOwnInputs() {
        AneBackend ane = new AneBackend();
        assumeTrue(ane.isAvailable(), () -> "ANE not available: " + ane.unavailableReason());
        Program p = AcceptancePrograms.a4DynamicMatmul(64, 32, 64);
        try (Kernel k = ane.compile(p); Kernel r = new RefBackend().compile(p)) {
            Map<String, TensorBuffer> a = AneBackendAneTest.inputs(r, 1, 1f), b = AneBackendAneTest.inputs(r, 2, 1f);
            Kernel.Binding ba = k.bind(), bb = k.bind();
            for (String name : a.keySet()) {
                ba.input(name).copyFrom(a.get(name));
                bb.input(name).copyFrom(b.get(name));
            }
            String out = k.outputs().getFirst().name();
            TensorBuffer got = TensorBuffer.allocate(k.outputs().getFirst().type());
            for (var run : List.of(Map.entry(ba, a), Map.entry(bb, b), Map.entry(ba, a))) {
                run.getKey().evaluate(Map.of(out, got));
                OutputDiff d = OutputDiff.of(r.evaluate(run.getValue()).get(out), got);
                System.out.println("[ane-test] binding: " + d);
                assertTrue(d.maxRef() > 0 && d.within(OutputDiff.FP16_ATOL, OutputDiff.FP16_RTOL), d.toString());
            }
            assertEquals(0, ((AneKernel) k).copiedInputBytes());
        }
    }
}
