package ane4j.infer;

import static ane4j.infer.GenModels.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.chip.Chip;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.ModelFiles;
import ane4j.model.Parameters;
import ane4j.model.RopeStyle;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Generation on the reference backend against the CPU path ({@link ane4j.model.CpuModel}, itself checked against
 * PyTorch and run.c by CpuModelGoldenTest and GenerateCommandTest), position by position and token by token.
 * <p>
 * Two numerics: fp32 kernels on fp32 storage, which must give the CPU's logits up to summation order (relative 1e-4)
 * and so its tokens; and the ANE's (fp16 kernels, every value rounded to fp16 after each op), whose logits differ from
 * the CPU's by fp16 rounding: within 2e-2 of max(1, max |logit|) (measured 1.3e-3 … 7.3e-3 on these models), and whose
 * greedy tokens equal the CPU's except where the CPU's own two best logits are closer than that tolerance: there fp16
 * may pick the other one, legitimately, and the continuations part ({@link #assertSameUpToANearTie}).
 * <p>
 * Models: every preset's architecture with 2 layers and a 512-token vocabulary (widths, heads, GQA, QK-norm, RoPE as
 * the preset), stories15m in full; stories110m and qwen3-0.6b in full are {@code slow}. Their weights are
 * {@code Parameters.init} ×4 ({@link GenModels#model}): an untrained init is so flat its greedy continuation is one
 * token repeated, which would compare nothing.
 */
class BackendGeneratorTest {
    static final double EXACT = 1e-4, FP16 = 2e-2;
    static final int PROMPT = 9, NEW = 16;

    @ParameterizedTest
    @ValueSource(strings = {"tiny", "stories15m", "stories42m", "stories110m", "qwen3-0.6b"})
    void greedyTokensAndLogitsAreTheCpusForEveryPreset(String preset) {
        check(reduced(preset), 4f);
    }

    @Test
    void stories15mInFull() {
        check(ModelConfig.parse("stories15m"), 4f);
    }

    @Tag("slow")
    @ParameterizedTest
    @ValueSource(strings = {"stories110m", "qwen3-0.6b"})
    void fullPresets(String preset) {
        check(ModelConfig.parse(preset), 4f);
    }

    static void check(ModelConfig c, float gain) {
        Parameters p = model(c, 3, gain);
        int[] prompt = prompt(PROMPT, c.vocabSize(), 5);
        int[] want = cpuTokens(p, prompt, NEW, 0f, 1f, 1);
        assertEquals(PROMPT + NEW, want.length);
        float[][] cpu = cpuLogits(p, want, PROMPT);
        for (BackendGenerator.Decode decode : BackendGenerator.Decode.values()) {
            try (BackendGenerator g = ref(p, decode, true)) {
                assertArrayEquals(want, backendTokens(g, prompt, NEW, 0f, 1f, 1), c.name() + " fp32, decode " + decode);
                double r = relDiff(g.forcedLogits(want, PROMPT), cpu);
                assertTrue(r < EXACT, c.name() + " fp32 decode " + decode + ": logits differ by " + r);
            }
        }
        try (BackendGenerator g = ref(p, BackendGenerator.Decode.BACKEND, false)) {
            double r = relDiff(g.forcedLogits(want, PROMPT), cpu);
            assertTrue(r < FP16, c.name() + " fp16: logits differ by " + r + " of max(1, max |logit|)");
            assertSameUpToANearTie(c.name() + " fp16", want, backendTokens(g, prompt, NEW, 0f, 1f, 1), cpu, FP16);
        }
    }

    /**
     * got equals want, or they part at one position where the CPU's logits of the two tokens are within {@code tol} of
     * max(1, max |logit|): a near-tie that fp16 rounding may decide the other way (the rest then follows another context).
     */
    static void assertSameUpToANearTie(String what, int[] want, int[] got, float[][] cpuLogits, double tol) {
        for (int i = PROMPT; i < Math.min(want.length, got.length); i++) {
            if (want[i] == got[i]) continue;
            float[] l = cpuLogits[i - PROMPT];
            double m = 1;
            for (float v : l) m = Math.max(m, Math.abs(v));
            double gap = Math.abs(l[want[i]] - l[got[i]]) / m;
            assertTrue(gap < tol, what + ": token " + i + " is " + got[i] + ", the CPU's " + want[i] + ", whose logits are " + gap + " apart (not a near-tie)");
            System.out.println("[generate test] " + what + ": near-tie at token " + i + " (" + gap + "), continuations part there");
            return;
        }
        assertEquals(want.length, got.length, what);
    }

    static Path golden(String name) {
        try {
            return Path.of(BackendGeneratorTest.class.getResource("/golden/" + name).toURI());
        } catch (URISyntaxException | NullPointerException e) {
            throw new AssertionError("missing golden file " + name, e);
        }
    }

    /** An imported llama2.c model and Hugging Face ones (safetensors, GQA and QK-norm, sharded F16 and BF16): their own weights, as imported. */
    @ParameterizedTest
    @ValueSource(strings = {"model/llama_tiny.bin", "import/llama_tiny_v1.bin", "model/qwen3", "rope/llama3_tiny", "import/llama_sharded_f16", "import/qwen3_sharded_bf16/model.safetensors.index.json"})
    void importedModelsGiveTheCpusTokens(String file) {
        Parameters p = ModelFiles.read(golden(file));
        ModelConfig c = p.config();
        int n = Math.min(PROMPT, c.seqLen() / 2);
        int[] prompt = prompt(n, c.vocabSize(), 11);
        int[] want = cpuTokens(p, prompt, c.seqLen(), 0f, 1f, 1);
        int[] fed = Arrays.copyOf(want, Math.min(want.length, c.seqLen()));   // to the end of the context: seqLen + 1 tokens, the last never fed
        float[][] cpu = cpuLogits(p, fed, n);
        for (BackendGenerator.Decode decode : BackendGenerator.Decode.values())
            try (BackendGenerator g = ref(p, decode, true)) {
                assertArrayEquals(want, backendTokens(g, prompt, c.seqLen(), 0f, 1f, 1), file + " decode " + decode);
                assertTrue(relDiff(g.forcedLogits(fed, n), cpu) < EXACT, file);
            }
        try (BackendGenerator g = ref(p, BackendGenerator.Decode.BACKEND, false)) {
            assertTrue(relDiff(g.forcedLogits(fed, n), cpu) < FP16, file + " fp16");
        }
    }

    @Test
    void seededSamplingIsReproduciblePerBackendAndDecode() {
        ModelConfig c = reduced("stories15m");
        Parameters p = model(c, 3, 4f);
        int[] prompt = prompt(PROMPT, c.vocabSize(), 5);
        int[] cpu = cpuTokens(p, prompt, NEW, 1f, 0.9f, 7);
        for (boolean fp32 : new boolean[] {true, false})
            for (BackendGenerator.Decode decode : BackendGenerator.Decode.values())
                try (BackendGenerator g = ref(p, decode, fp32)) {
                    int[] a = backendTokens(g, prompt, NEW, 1f, 0.9f, 7), b = backendTokens(g, prompt, NEW, 1f, 0.9f, 7);
                    assertArrayEquals(a, b, "same seed, same tokens (fp32 " + fp32 + ", " + decode + ")");
                    assertNotEquals(Arrays.toString(a), Arrays.toString(backendTokens(g, prompt, NEW, 1f, 0.9f, 8)), "another seed, other tokens");
                    // exact numerics draw the CPU's tokens from the same coins
                    if (fp32) assertArrayEquals(cpu, a, "fp32 sampling is the CPU's, " + decode);
                }
    }

    @Test
    void aBucketCompilesOnceAndPromptsArePaddedToTheSmallestThatHoldsThem() {
        ModelConfig c = reduced("stories15m");                 // seqLen 256: buckets 32, 64, 128, 256
        Parameters p = model(c, 3, 4f);
        try (BackendGenerator g = ref(p, BackendGenerator.Decode.BACKEND, true)) {
            assertArrayEquals(new int[] {32, 64, 128, 256}, g.buckets());
            assertEquals(256, g.cacheCapacity());
            assertTrue(g.prepare(5) >= 0);
            assertEquals(4, g.compiles(), "prepare: the bucket's prefill pair and the decode pair, before any token");
            backendTokens(g, prompt(5, 512, 1), 3, 0f, 1f, 1);
            assertEquals(32, g.lastStats().bucket());
            assertEquals(4, g.compiles(), "prefill attention + FFN at 32, decode attention + FFN");
            backendTokens(g, prompt(31, 512, 2), 3, 0f, 1f, 1);
            assertEquals(4, g.compiles(), "the same bucket again: nothing compiled");
            int[] longer = prompt(40, 512, 3);
            int[] got = backendTokens(g, longer, 3, 0f, 1f, 1);
            assertEquals(64, g.lastStats().bucket());
            assertEquals(6, g.compiles());
            assertArrayEquals(cpuTokens(p, longer, 3, 0f, 1f, 1), got);
            assertEquals(40, g.lastStats().promptTokens());
            assertEquals(2, g.lastStats().decodedTokens(), "the first new token comes from the prefill's logits");
        }
    }

    @Test
    void aPromptLongerThanTheLargestBucketIsOneLineNamingIt() {
        ModelConfig c = reduced("stories15m");
        RefBackend b = new RefBackend(RefBackend.Options.FP32_STORAGE);
        try (BackendGenerator g = new BackendGenerator(model(c, 3, 1f), null, b::compile, "ref", null, new int[] {64, 32}, DType.FP32)) {
            var e = assertThrows(IllegalArgumentException.class, () -> backendTokens(g, prompt(65, 512, 1), 3, 0f, 1f, 1));
            assertEquals("[generate] the prompt is 65 tokens, longer than the largest prefill bucket 64 (buckets [32,64], seqLen 256); shorten the prompt or add a bucket up to 256",
                    e.getMessage());
            assertEquals(0, g.compiles(), "refused before compiling");
        }
        var bad = assertThrows(IllegalArgumentException.class, () -> new BackendGenerator(model(c, 3, 1f), null, b::compile, "ref", null, new int[] {48}, DType.FP32));
        assertTrue(bad.getMessage().startsWith("[generate] prefill bucket 48 must be a positive multiple of 32"), bad.getMessage());
    }

    @Test
    void aModelTooWideForTheChipIsOneLineNamingTheLimit() {
        // FFN hidden 8192: the FFN kernel's input is S + 3·8192 + 1 columns wide, over M1–M3's 16384 axis cap, within M4's 65536
        ModelConfig c = new ModelConfig("wide", 1024, 8192, 1, 8, 8, 128, 512, 64, 10000f, RopeStyle.HALF, false, true, 1e-5f, 1f);
        RefBackend b = new RefBackend(RefBackend.Options.FP32_STORAGE);
        try (BackendGenerator g = new BackendGenerator(Parameters.zeros(c), null, b::compile, "ane", null, null, DType.FP16)) {
            var e = assertThrows(IllegalArgumentException.class, () -> g.requireFits(Chip.M1));
            assertTrue(e.getMessage().startsWith("[generate] wide does not fit the ANE of M1: kernel genFfn32 (input [1, 1024, 1, 24609]) breaks chip rule axis-cap:"), e.getMessage());
            assertTrue(e.getMessage().contains("(limit 16384)") && e.getMessage().endsWith("; use --backend cpu or smaller prefill buckets"), e.getMessage());
            assertFalse(e.getMessage().contains("\n"));
            g.requireFits(Chip.M4);
        }
        // a KV cache wider than the kernels' channels
        ModelConfig kvWide = new ModelConfig("kvwide", 64, 128, 1, 4, 4, 32, 512, 64, 10000f, RopeStyle.HALF, false, true, 1e-5f, 1f);
        var e = assertThrows(IllegalArgumentException.class, () -> new GenerationKernels(kvWide));
        assertEquals("[generate] kvwide: the KV cache rides the kernel input's 64 channels (dim), but kvDim is 128; the backend generator needs nKvHeads·headDim ≤ dim (use --backend cpu)", e.getMessage());
    }

    @Test
    void defaultsPerBackend() {
        assertEquals(BackendGenerator.Decode.CPU, BackendGenerator.defaultDecode(false), "inputs restaged per layer: the reference backend, a worker's kernels");
        assertEquals(BackendGenerator.Decode.BACKEND, BackendGenerator.defaultDecode(true), "bound inputs: the in-process ANE");
        Parameters p = model(reduced("tiny"), 3, 1f);
        RefBackend b = new RefBackend(RefBackend.Options.FP32_STORAGE);
        try (BackendGenerator g = new BackendGenerator(p, null, b::compile, "ref")) {
            assertEquals(null, g.decode(), "decided by the first compile");
            backendTokens(g, prompt(3, 512, 1), 2, 0f, 1f, 1);
            assertEquals(BackendGenerator.Decode.CPU, g.decode());
            assertEquals(BackendGenerator.Decode.CPU, g.lastStats().decode());
        }
        assertArrayEquals(new int[] {32, 64}, BackendGenerator.defaultBuckets(64));
        assertArrayEquals(new int[] {32}, BackendGenerator.defaultBuckets(32));
        assertArrayEquals(new int[] {32, 64, 128, 256, 512, 1024}, BackendGenerator.defaultBuckets(1024));
    }
}
