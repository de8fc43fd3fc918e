package ane4j.backend.ref;

import ane4j.backend.TensorBuffer;
import ane4j.programs.AcceptancePrograms;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Benchmark (not a test; {@code mvn -Pbench test -Dtest=RefBench}): the interpreter's time for A4 (dynamic matmul,
 * fp16 I/O) at Stories110M sizes against a bare GEMM of the same dims on fp32 buffers. Target: ratio ≤ 1.3.
 */
@Tag("slow")
class RefBench {
    static final int REPS = 15;

    @Test
    void a4OverheadAtStories110mSizes() {
        int[][] dims = {{768, 256, 768}, {768, 256, 2048}, {2048, 256, 768}}; // {IC, SEQ, OC}: woFwd/qBwd, ffnBwdW2t, ffnBwdW13t-like
        RefBackend ref = new RefBackend(RefBackend.Options.ANE_LIKE);
        for (int[] d : dims) {
            int ic = d[0], seq = d[1], oc = d[2];
            try (RefKernel k = ref.compileRef(AcceptancePrograms.a4DynamicMatmul(ic, seq, oc)); Arena arena = Arena.ofShared()) {
                assertEquals(1, k.stepCount());
                String in = k.inputs().get(0).name();
                TensorBuffer x = k.allocateInput(in);
                for (long i = 0; i < x.count(); i++) x.set(i, (float) Math.sin(i * 0.001));
                Map<String, TensorBuffer> ins = Map.of(in, x), outs = Map.of(k.outputs().get(0).name(), k.allocateOutput(k.outputs().get(0).name()));
                double tKernel = median(() -> k.evaluate(ins, outs));
                MemorySegment a = arena.allocate((long) ic * oc * 4, 64), b = arena.allocate((long) ic * seq * 4, 64), c = arena.allocate((long) oc * seq * 4, 64);
                double tGemm = median(() -> Gemm.gemm(true, false, oc, seq, ic, a, 0, oc, b, 0, seq, 0f, c, 0, seq));
                double gflops = 2.0 * ic * seq * oc / tGemm / 1e9;
                System.out.printf("A4 IC=%d SEQ=%d OC=%d: kernel %.2f ms, bare gemm %.2f ms (%.1f GFLOPS), ratio %.2f%n",
                        ic, seq, oc, tKernel * 1e3, tGemm * 1e3, gflops, tKernel / tGemm);
                assertTrue(tKernel > 0 && tGemm > 0);
            }
        }
    }

    static double median(Runnable r) {
        for (int i = 0; i < 3; i++) r.run();
        double[] t = new double[REPS];
        for (int i = 0; i < REPS; i++) {
            long t0 = System.nanoTime();
            r.run();
            t[i] = (System.nanoTime() - t0) / 1e9;
        }
        Arrays.sort(t);
        return t[REPS / 2];
    }
}
