package ane4j.model;

import ane4j.fuzz.Fuzz;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The GGUF reader under 3000 mutated files (the shared {@link Fuzz} mutations: bit flips, byte sets, truncations,
 * deleted and spliced ranges, huge u32/u64 length fields, aimed at the header half the time): the model and the
 * tokenizer are read or refused in one line tagged [gguf] (or [tokenizer] for the tokenizer.json a gpt2 tokenizer
 * becomes), within bounded heap and time. (In the model package, beside the tests-only GGUF writer it needs.)
 */
class GgufFuzzTest {
    static final int CASES = 3000;

    @TempDir Path dir;

    @Test
    void gguf() throws Exception {
        Tokenizer spm = EmbeddedCorpus.tokenizer();
        ModelConfig llama = new ModelConfig("fz", 32, 64, 2, 2, 1, 16, spm.vocabSize(), 8, 10000f, RopeStyle.HALF, false, false, 1e-5f, 1f);
        ModelConfig qwen = new ModelConfig("fq", 32, 64, 1, 4, 2, 8, 300, 8, 1e6f, RopeStyle.HALF, true, true, 1e-6f, 1f);
        ModelConfig k = new ModelConfig("fk", 256, 256, 1, 2, 1, 128, 8, 8, 1e6f, RopeStyle.HALF, true, true, 1e-6f, 1f);
        List<byte[]> bases = List.of(
                // with Llama 3's RoPE scaling: a rope_freqs.weight tensor that the config reads
                GgufWriter.model(Parameters.init(llama.withRopeScaling(new RopeScaling.Llama3(8, 1, 4, 64)), 1), "llama", Gguf.Type.F32, spm).bytes(),
                GgufWriter.model(Parameters.init(qwen, 2), "qwen3", Gguf.Type.Q8_0, null).bytes(),
                GgufWriter.model(Parameters.init(k, 3), "qwen3", Gguf.Type.Q4_K, null).bytes(),
                GgufWriter.model(Parameters.init(k, 4), "llama", Gguf.Type.Q6_K, null).bytes(),
                Files.readAllBytes(GgufTest.golden()));
        long t0 = System.nanoTime();
        var o = Fuzz.run(dir.resolve("m.gguf"), bases, CASES, 1832, 4096, file -> {
            Gguf.Header h = Gguf.readHeader(file);
            if (h.metadata().containsKey("general.architecture") && h.tensors().containsKey("token_embd.weight")) Gguf.read(file);
            else Gguf.readTensors(file);
            if (h.metadata().containsKey("tokenizer.ggml.model")) Tokenizer.read(file);
        }, "\\[(gguf|tokenizer)\\] ", 16, List.of(ModelFormatException.class));
        System.out.printf("[fuzz] gguf: %d cases, %d read, %d refused, slowest %.1f ms, heap at most %d KB a case (%.1f bytes per file byte for files ≥ 1 KB), %d ms in all%n",
                o.accepted() + o.refused(), o.accepted(), o.refused(), o.maxNanos() / 1e6, o.maxAllocBytes() >> 10, o.maxAllocPerByte(), (System.nanoTime() - t0) / 1_000_000);
    }
}
