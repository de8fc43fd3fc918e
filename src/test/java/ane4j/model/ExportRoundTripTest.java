package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Export is the exact inverse of import: import(export(x)) == x bit for bit in f32, for both formats and both RoPE styles. */
class ExportRoundTripTest {
    @TempDir Path tmp;

    static final ModelConfig LLAMA_GQA = new ModelConfig("llama-gqa", 64, 96, 2, 4, 2, 16, 40, 24, 10000f, RopeStyle.INTERLEAVED, false, false, 1e-5f, 1f);
    static final ModelConfig QWEN = new ModelConfig("qwen", 32, 48, 2, 4, 2, 16, 40, 20, 1e6f, RopeStyle.HALF, true, true, 1e-6f, 1f);

    @Test void safetensorsFolderRoundTripsBitForBit() {
        for (ModelConfig c : new ModelConfig[] {LLAMA_GQA, QWEN, ModelConfig.parse("tiny")}) {
            Parameters p = Parameters.init(c, 7);
            Path st = HfExport.write(tmp.resolve(c.name()), p, Safetensors.DType.F32);
            Parameters back = Safetensors.read(st);
            // the folder's config.json gives back the exported config, with rotate-half RoPE
            assertEquals(RopePermutation.convert(p, RopeStyle.HALF).config(), back.config(), c.name());
            assertArrayEquals(p.data(), RopePermutation.convert(back, c.ropeStyle()).data(), c.name() + ": weights differ after the round trip");
        }
    }

    @Test void llama2cRoundTripsBitForBit() {
        Parameters p = Parameters.init(LLAMA_GQA, 3);
        Path f = tmp.resolve("m.bin");
        Llama2Bin.write(f, p);
        Parameters back = Llama2Bin.read(f);
        assertEquals(LLAMA_GQA.withName("m"), back.config());
        assertArrayEquals(p.data(), back.data());
        // from a rotate-half model: llama2c → back to rotate-half is the identity too
        Parameters half = RopePermutation.convert(p, RopeStyle.HALF);
        Llama2Bin.write(f, half);
        assertArrayEquals(half.data(), RopePermutation.convert(Llama2Bin.read(f), RopeStyle.HALF).data());
    }

    @Test void configJsonHasTheTransformersKeys() throws Exception {
        HfExport.write(tmp.resolve("q"), Parameters.init(QWEN, 1), Safetensors.DType.BF16);
        @SuppressWarnings("unchecked")
        var cfg = (java.util.Map<String, Object>) Json.parse(Files.readString(tmp.resolve("q/config.json")));
        assertEquals(java.util.List.of("Qwen3ForCausalLM"), cfg.get("architectures"));
        assertEquals("qwen3", cfg.get("model_type"));
        assertEquals("bfloat16", cfg.get("torch_dtype"));
        assertEquals(16L, cfg.get("head_dim"));
        assertEquals(2L, cfg.get("num_key_value_heads"));
        assertEquals(true, cfg.get("tie_word_embeddings"));
        assertEquals(1e6, ((Number) cfg.get("rope_theta")).doubleValue());
        assertEquals(1e-6f, ((Number) cfg.get("rms_norm_eps")).floatValue());
        assertEquals(20L, cfg.get("max_position_embeddings"));
        var e = assertThrows(IllegalArgumentException.class, () -> HfExport.write(tmp.resolve("a"), Parameters.init(
                new ModelConfig("alpha", 32, 48, 1, 4, 4, 8, 40, 8, 1e4f, RopeStyle.HALF, false, true, 1e-5f, 0.5f), 1), Safetensors.DType.F32));
        assertTrue(e.getMessage().startsWith("[export] alpha has residualScale 0.5"), e.getMessage());
    }

    @Test void bf16RoundsToNearestEven() {
        assertEquals((short) 0x3F80, Safetensors.toBf16(1f));
        assertEquals((short) 0x3F80, Safetensors.toBf16(Float.intBitsToFloat(0x3F808000))); // tie, even stays
        assertEquals((short) 0x3F82, Safetensors.toBf16(Float.intBitsToFloat(0x3F818000))); // tie, odd rounds up
        assertEquals((short) 0x3F81, Safetensors.toBf16(Float.intBitsToFloat(0x3F808001)));
        assertEquals((short) 0xBF80, Safetensors.toBf16(-1f));
        assertEquals((short) 0x7F80, Safetensors.toBf16(Float.MAX_VALUE)); // past bf16's largest: infinity, as PyTorch
        assertTrue(Float.isNaN(Float.intBitsToFloat(Safetensors.toBf16(Float.NaN) << 16)));
    }
}
