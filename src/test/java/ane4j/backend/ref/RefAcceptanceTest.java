package ane4j.backend.ref;

import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.mil.AcceptancePrograms;
import ane4j.mil.Program;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static ane4j.mil.AcceptancePrograms.TINY;
import static org.junit.jupiter.api.Assertions.*;

/** The acceptance programs A1–A10 (ane-facts.md §9) on the reference backend. */
class RefAcceptanceTest {
    static final RefBackend REF = new RefBackend(new RefBackend.Options(false, false, null));

    static Map<String, TensorBuffer> runRandom(Program p, long seed) {
        try (RefKernel k = REF.compileRef(p)) {
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

    @Test
    void everyProgramRunsAndGivesFiniteOutputs() {
        List<Program> all = List.of(AcceptancePrograms.a1Conv(16, 8), AcceptancePrograms.a2PeakConvChain(16, 8, 4),
                AcceptancePrograms.a3Int8Chain(16, 4, 4, 3), AcceptancePrograms.a3Fp16Chain(16, 4, 4, 3),
                AcceptancePrograms.a4DynamicMatmul(16, 8, 24), AcceptancePrograms.a5TwoTermBackward(16, 8, 12),
                AcceptancePrograms.a6SdpaForward(TINY), AcceptancePrograms.a7FfnFused(TINY),
                AcceptancePrograms.a8SdpaBackward1(TINY), AcceptancePrograms.a8SdpaBackward2(TINY),
                AcceptancePrograms.a9StaticAttentionTaps(16, 4, 8), AcceptancePrograms.a10RmsNormBackward(16, 8),
                AcceptancePrograms.a10SoftmaxVocab(32, 8), AcceptancePrograms.a10ClassifierBackward(16, 32, 8),
                AcceptancePrograms.a10QkT(4, 8, 8), AcceptancePrograms.a10FusedQkv(16, 8));
        for (int i = 0; i < all.size(); i++) {
            Map<String, TensorBuffer> out = runRandom(all.get(i), i);
            assertFalse(out.isEmpty());
            for (var e : out.entrySet())
                for (float v : e.getValue().toFloatArray()) assertTrue(Float.isFinite(v), "program " + i + " output " + e.getKey() + " has " + v);
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
