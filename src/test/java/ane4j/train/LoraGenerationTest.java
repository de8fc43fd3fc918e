package ane4j.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.infer.BackendGenerator;
import ane4j.mil.DType;
import ane4j.model.CpuModel;
import ane4j.model.Parameters;
import ane4j.model.Sampler;
import java.util.Arrays;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * LoRA adapters applied without merging in the generation kernels (A and s·Bᵀ inputs beside the base weights) give the
 * logits of the fused model W + s·B·A on the CPU, which PeftAdapterTest checks against PyTorch/PEFT: PyTorch-trained
 * adapters of the LoRA goldens (llama q,v,o,w1 at rank 1; Qwen3 all seven targets, GQA and QK-norm).
 */
class LoraGenerationTest {
    @ParameterizedTest
    @ValueSource(strings = {"llama_qvo1", "qwen3_all"})
    void unmergedAdaptersInTheKernelsAreTheFusedModel(String name) {
        LoraAdapters ad = PeftAdapterTest.goldenAdapters(name);
        LoraGoldenTest.Case k = LoraGoldenTest.load(name);
        Parameters base = new Parameters(k.layout(), k.base());
        Parameters fused = ad.fused(base);
        int seqLen = k.config().seqLen(), vocab = k.config().vocabSize();
        int[] tokens = new int[seqLen];
        for (int i = 0; i < seqLen; i++) tokens[i] = (7 * i + 3) % vocab;
        int n = Math.max(1, seqLen / 2);
        CpuModel cpu = new CpuModel(fused), plain = new CpuModel(base);
        float[][] want = new float[seqLen - n + 1][];
        double changed = 0;
        for (int p = 0; p < seqLen; p++) {
            float[] l = cpu.forward(tokens[p], p).clone();
            float[] b = plain.forward(tokens[p], p);
            for (int i = 0; i < l.length; i++) changed = Math.max(changed, Math.abs(l[i] - b[i]));
            if (p >= n - 1) want[p - n + 1] = l;
        }
        assertTrue(changed > 1e-2, "the adapters change the model (max logit change " + changed + ")");
        for (BackendGenerator.Decode decode : BackendGenerator.Decode.values()) {
            RefBackend b = new RefBackend(RefBackend.Options.FP32_STORAGE);
            try (BackendGenerator g = new BackendGenerator(base, ad, b::compile, "ref", decode, null, DType.FP32)) {
                float[][] got = g.forcedLogits(tokens, n);
                for (int p = 0; p < want.length; p++)
                    for (int i = 0; i < vocab; i++)
                        assertTrue(Math.abs(got[p][i] - want[p][i]) < 1e-4 * Math.max(1, Math.abs(want[p][i])),
                                name + " decode " + decode + " position " + (n - 1 + p) + " logit " + i + ": " + got[p][i] + " vs fused " + want[p][i]);
                // greedy tokens: the fused model's
                int[] prompt = Arrays.copyOf(tokens, n);
                int[] gen = g.generateTokens(prompt, seqLen, 0f, 1f, 1, -1, -1, t -> {});
                int[] ref = Arrays.copyOf(prompt, gen.length);
                CpuModel m = new CpuModel(fused);
                Sampler s = new Sampler(0f, 1f, 1);
                for (int p = 0; p + 1 < ref.length; p++) {
                    float[] l = m.forward(ref[p], p);
                    if (p + 1 >= n) ref[p + 1] = s.sample(l);
                }
                assertArrayEquals(ref, gen, name + " decode " + decode);
            }
        }
    }
}
