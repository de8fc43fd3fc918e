package ane4j.backend.ref;

import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.golden.TensorCheck;
import ane4j.programs.AcceptancePrograms;
import ane4j.mil.Program;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static ane4j.programs.AcceptancePrograms.TINY;
import static org.junit.jupiter.api.Assertions.*;

/** The acceptance programs A1–A10 (docs/ane-facts.md §9) on the reference backend. */
class RefAcceptanceTest {
    static final RefBackend REF = new RefBackend(RefBackend.Options.ANE_LIKE);

    static final RefBackend EXACT = new RefBackend(RefBackend.Options.FP32_STORAGE);

    static Map<String, TensorBuffer> runRandom(Program p, long seed) { return runRandom(REF, p, seed); }

    static Map<String, TensorBuffer> runRandom(RefBackend backend, Program p, long seed) {
        try (RefKernel k = backend.compileRef(p)) {
            Random r = new Random(seed);
            Map<String, TensorBuffer> in = new LinkedHashMap<>();
            for (TensorSpec s : k.inputs()) {
                TensorBuffer b = TensorBuffer.allocate(s.type());
                for (long i = 0; i < b.count(); i++) b.set(i, (float) r.nextGaussian() * 0.5f);
                in.put(s.name(), b);
            }
            return k.evaluate(in);
        }
    }

    static final double MAX_REL_L2 = 5e-3;   // measured: at most 6.4e-4 (A10 dx) over the 16 programs

    @Test
    void everyProgramRunsAndItsFp16OutputsStayWithinFp16RoundingOfTheFp32Run() {
        List<Program> all = List.of(AcceptancePrograms.a1Conv(16, 8), AcceptancePrograms.a2PeakConvChain(16, 8, 4, AcceptancePrograms.Io.FP32_CAST, AcceptancePrograms.WeightFiles.PER_WEIGHT),
                AcceptancePrograms.a3Int8Chain(16, 4, 4, 3), AcceptancePrograms.a3Fp16Chain(16, 4, 4, 3),
                AcceptancePrograms.a4DynamicMatmul(16, 8, 24), AcceptancePrograms.a5TwoTermBackward(16, 8, 12),
                AcceptancePrograms.a6SdpaForward(TINY), AcceptancePrograms.a7FfnFused(TINY),
                AcceptancePrograms.a8SdpaBackward1(TINY), AcceptancePrograms.a8SdpaBackward2(TINY),
                AcceptancePrograms.a9StaticAttentionTaps(16, 4, 8), AcceptancePrograms.a10RmsNormBackward(16, 8),
                AcceptancePrograms.a10SoftmaxVocab(32, 8), AcceptancePrograms.a10ClassifierBackward(16, 32, 8),
                AcceptancePrograms.a10QkT(4, 8, 8), AcceptancePrograms.a10FusedQkv(16, 8));
        // the op semantics are pinned by RefOpGoldenTest (PyTorch); here each whole program, with fp16 storage as on the
        // ANE, must stay within a few fp16 roundings of the same program kept in fp32: relative L2 ≤ MAX_REL_L2 and no
        // NaN/inf that the fp32 run does not have (fp16's unit roundoff is 2^-11 ≈ 4.9e-4 per op)
        for (int i = 0; i < all.size(); i++) {
            Map<String, TensorBuffer> out = runRandom(all.get(i), i), exact = runRandom(EXACT, all.get(i), i);
            assertFalse(out.isEmpty());
            assertEquals(exact.keySet(), out.keySet());
            for (var e : out.entrySet()) {
                float[] want = exact.get(e.getKey()).toFloatArray();
                for (float v : want) assertTrue(Float.isFinite(v), "program " + i + " output " + e.getKey() + " (fp32) has " + v);
                TensorCheck.checkRelL2("program " + i + " output " + e.getKey() + " fp16 vs fp32",
                        want, e.getValue().toFloatArray(), MAX_REL_L2);
            }
        }
    }

    @Test
    void a4FromTheLibraryCopiesWithIdentityWeights() {
        int ic = 16, seq = 8;
        Program p = AcceptancePrograms.a4DynamicMatmul(ic, seq, ic);
        try (RefKernel k = REF.compileRef(p)) {
            TensorBuffer x = k.allocateInput(k.inputs().get(0).name());
            float[] act = new float[ic * seq];
            for (int i = 0; i < act.length; i++) act[i] = (i % 13) * 0.25f - 1.5f;
            x.writeColumns(0, seq, act);
            float[] w = new float[ic * ic];
            for (int d = 0; d < ic; d++) w[d * ic + d] = 2f;
            x.writeColumns(seq, ic, w);
            float[] y = k.evaluate(Map.of(k.inputs().get(0).name(), x)).values().iterator().next().toFloatArray();
            for (int i = 0; i < act.length; i++) assertEquals(2 * act[i], y[i]);
        }
    }
}
