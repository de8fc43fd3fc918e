package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The GGUF reader: dequantization against numpy's implementation of the block formats (tools/gen_gguf_golden.py), models
 * written in llama.cpp's layout read back to the same logits as the PyTorch goldens of their safetensors originals, the
 * tokenizers the files carry against the originals (and Hugging Face's tokenizers library), and one-line errors.
 */
class GgufTest {
    static final String HINT = " (regenerate with /usr/bin/python3 tools/gen_gguf_golden.py)";

    @TempDir Path tmp;

    static Path golden() {
        try {
            return Path.of(GgufTest.class.getResource("/golden/gguf_quants.gguf").toURI());
        } catch (URISyntaxException | NullPointerException e) {
            throw new AssertionError("missing golden file gguf_quants.gguf" + HINT, e);
        }
    }

    // ----------------------------------------------------------------------------------------------
    // formats

    @Test
    void everyTypeDequantizesAsNumpyDoesBitForBit() {
        Map<String, float[]> t = Gguf.readTensors(golden());
        Gguf.Header h = Gguf.readHeader(golden());
        int checked = 0;
        for (Gguf.Type type : Gguf.Type.values()) {
            String name = type.name().toLowerCase(java.util.Locale.ROOT) + ".weight";
            assertEquals(type, h.tensors().get(name).type(), name + HINT);
            float[] got = t.get(name), want = t.get(name + ".expected");
            assertEquals(1024, got.length);
            for (int i = 0; i < want.length; i++)
                assertEquals(Float.floatToIntBits(want[i]), Float.floatToIntBits(got[i]), type + " value " + i + ": numpy " + want[i] + ", ane4j " + got[i] + HINT);
            checked++;
        }
        assertEquals(8, checked);
    }

    @Test
    void metadataOfEveryValueType() {
        Map<String, Object> md = Gguf.readHeader(golden()).metadata();
        assertEquals(200L, md.get("test.u8"));
        assertEquals(-100L, md.get("test.i8"));
        assertEquals(60000L, md.get("test.u16"));
        assertEquals(-30000L, md.get("test.i16"));
        assertEquals(4000000000L, md.get("test.u32"));
        assertEquals(-2000000000L, md.get("test.i32"));
        assertEquals(0.25, md.get("test.f32"));
        assertEquals(true, md.get("test.bool"));
        assertEquals("héllo ▁wörld", md.get("test.string"));
        assertEquals(1L << 40, md.get("test.u64"));
        assertEquals(-(1L << 40), md.get("test.i64"));
        assertEquals(1e-6, md.get("test.f64"));
        assertArrayEquals(new long[]{1, -2, 3}, (long[]) md.get("test.array_i32"));
        assertEquals(List.of("a b", "Ġthe"), md.get("test.array_str"));
    }

    @Test
    void ourQuantizersStayWithinEachFormatsStep() {
        // x within a few % of its block's range: the writer's quantizers (used by the round trips below) are sane
        float[] x = new float[1024];
        Rng r = new Rng(5);
        for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian() * 0.05f;
        Map<Gguf.Type, Double> bound = Map.of(Gguf.Type.Q8_0, 0.006, Gguf.Type.Q4_0, 0.1, Gguf.Type.Q4_K, 0.1, Gguf.Type.Q5_K, 0.05, Gguf.Type.Q6_K, 0.025);
        for (var e : bound.entrySet()) {
            GgufWriter w = new GgufWriter().tensor("x", new long[]{512, 2}, e.getKey(), x);
            float[] y = Gguf.readTensors(w.write(tmp.resolve(e.getKey() + ".gguf"))).get("x");
            double maxErr = 0, range = 0;
            for (int i = 0; i < x.length; i++) { maxErr = Math.max(maxErr, Math.abs(x[i] - y[i])); range = Math.max(range, Math.abs(x[i])); }
            assertTrue(maxErr <= e.getValue() * range, e.getKey() + ": max error " + maxErr + " of a range " + range);
        }
    }

    // ----------------------------------------------------------------------------------------------
    // models

    @Test
    void llamaInLlamaCppLayoutGivesThePyTorchLogitsOfItsSafetensorsOriginal() throws IOException {
        Parameters hf = ModelFiles.read(ImportGoldenTest.golden("llama_sharded_f16"));
        for (Gguf.Type type : new Gguf.Type[]{Gguf.Type.F32, Gguf.Type.F16}) {
            Path f = GgufWriter.model(hf, "llama", type, null).write(tmp.resolve("llama-" + type + ".gguf"));
            // the q/k rows in the file are llama.cpp's (permuted), not the original's
            assertFalse(java.util.Arrays.equals(hf.get("layers.0.wq"), Gguf.readTensors(f).get("blk.0.attn_q.weight")));
            Parameters p = ModelFiles.read(f);
            assertEquals(hf.config().withName("x"), p.config().withName("x"));
            assertArrayEquals(hf.data(), p.data(), type + ": the F16 original's weights exactly");
            CpuModelGoldenTest.checkLogits("llama_sharded_f16", p, ImportGoldenTest.logits());
        }
    }

    @Test
    void qwen3GivesThePyTorchLogitsOfItsSafetensorsOriginal() throws IOException {
        Parameters hf = ModelFiles.read(ImportGoldenTest.golden("qwen3_sharded_bf16/model.safetensors.index.json"));
        for (Gguf.Type type : new Gguf.Type[]{Gguf.Type.F32, Gguf.Type.BF16}) {
            Path f = GgufWriter.model(hf, "qwen3", type, null).write(tmp.resolve("qwen3-" + type + ".gguf"));
            Parameters p = Gguf.read(f);
            assertTrue(p.config().qkNorm() && p.config().tiedEmbedding());
            assertEquals(hf.config().withName("x"), p.config().withName("x"));
            assertArrayEquals(hf.data(), p.data());
            CpuModelGoldenTest.checkLogits("qwen3_sharded_bf16", p, ImportGoldenTest.logits());
        }
    }

    @Test
    void quantizedExportsReadBackWithinTheFormatsError() {
        // dims that are whole K-quant super-blocks (256); an ane4j-initialised model, GQA, untied classifier
        ModelConfig c = new ModelConfig("q", 256, 512, 2, 4, 2, 64, 300, 16, 10000f, RopeStyle.HALF, false, false, 1e-5f, 1f);
        Parameters src = Parameters.init(c, 11);
        int[] tokens = {1, 17, 42, 299, 3, 150};
        float[][] want = logits(src, tokens);
        // the largest |logit difference| relative to the largest |logit|, per type: about 1.5x what was measured (2026-12-06:
        // Q8_0 0.014, Q6_K 0.042, Q5_K 0.074, Q4_K 0.197, Q4_0 0.189 for this random-init model, the same for both architectures)
        Map<Gguf.Type, Double> tol = Map.of(Gguf.Type.Q8_0, 0.02, Gguf.Type.Q6_K, 0.06, Gguf.Type.Q5_K, 0.11, Gguf.Type.Q4_K, 0.3, Gguf.Type.Q4_0, 0.3);
        for (var e : tol.entrySet()) {
            for (String arch : new String[]{"llama", "qwen3"}) {
                Path f = GgufWriter.model(src, arch, e.getKey(), null).write(tmp.resolve(arch + "-" + e.getKey() + ".gguf"));
                float[][] got = logits(Gguf.read(f), tokens);
                double diff = 0, spread = 0;
                for (int i = 0; i < tokens.length; i++)
                    for (int v = 0; v < c.vocabSize(); v++) { diff = Math.max(diff, Math.abs(got[i][v] - want[i][v])); spread = Math.max(spread, Math.abs(want[i][v])); }
                assertTrue(diff <= e.getValue() * spread, arch + " " + e.getKey() + ": max logit difference " + diff + " for logits up to " + spread);
                assertTrue(diff > 0, "a quantized model is not the fp32 one");
            }
        }
        // F32 is exact in both architectures
        for (String arch : new String[]{"llama", "qwen3"}) {
            Parameters p = Gguf.read(GgufWriter.model(src, arch, Gguf.Type.F32, null).write(tmp.resolve(arch + ".gguf")));
            assertArrayEquals(src.data(), p.data());
        }
    }

    static float[][] logits(Parameters p, int[] tokens) {
        CpuModel m = new CpuModel(p);
        float[][] out = new float[tokens.length][];
        for (int i = 0; i < tokens.length; i++) out[i] = m.forward(tokens[i], i);
        return out;
    }

    @Test
    void aLlama2cModelThroughGgufKeepsItsInterleavedFunction() throws IOException {
        // a llama2.c file is interleaved; GGUF (llama arch) holds it permuted, read back as rotate-half: the same logits
        Parameters bin = Llama2Bin.read(CpuModelGoldenTest.golden("llama_tiny.bin"));
        Parameters p = Gguf.read(GgufWriter.model(bin, "llama", Gguf.Type.F32, null).write(tmp.resolve("tiny.gguf")));
        assertEquals(RopeStyle.HALF, p.config().ropeStyle());
        CpuModelGoldenTest.checkLogits("llama_tiny", p, CpuModelGoldenTest.logitsJson());
    }

    // ----------------------------------------------------------------------------------------------
    // tokenizers

    static final List<String> TEXTS = TokenizerJsonTest.TEXTS;

    @Test
    void gpt2TokenizerEqualsItsTokenizerJsonAndHuggingFaces() throws Exception {
        Tokenizer json = Tokenizer.read(TokenizerJsonTest.SMALL);
        ModelConfig c = ModelConfig.llama("t", 32, 64, 1, 2, 4352, 8);
        Path f = GgufWriter.model(Parameters.init(c, 1), "qwen3", Gguf.Type.F32, json).write(tmp.resolve("t.gguf"));
        Tokenizer g = Tokenizer.read(f);
        assertTrue(g.isTokenizerJson());
        assertEquals(json.vocabSize(), g.vocabSize(), "the [PAD] tokens of the file are not part of the vocabulary");
        assertEquals(json.eosId(), g.eosId());
        assertEquals(-1, g.bosId());
        // the tokenizer.json it makes is one Hugging Face's tokenizers library reads, with the same ids
        Path made = tmp.resolve("made.json");
        g.write(made);
        try (HuggingFaceTokenizer hf = HuggingFaceTokenizer.newInstance(made, Map.of("addSpecialTokens", "false", "truncation", "false", "padding", "false"))) {
            for (String text : TEXTS) {
                int[] ids = json.encode(text, false, false);
                assertArrayEquals(ids, g.encode(text, false, false), "ids of: " + text);
                assertArrayEquals(java.util.Arrays.stream(hf.encode(text, false, false).getIds()).mapToInt(x -> (int) x).toArray(), ids, "Hugging Face's ids of: " + text);
                assertEquals(json.decode(ids), g.decode(ids));
            }
        }
        // found beside nothing: the model file is its own tokenizer
        assertEquals(f, ModelFiles.findTokenizer(null, null, f));
    }

    @Test
    void llamaSentencePieceTokenizerEqualsLlama2cs() {
        Tokenizer bin = EmbeddedCorpus.tokenizer();
        ModelConfig c = ModelConfig.llama("t", 32, 64, 1, 2, bin.vocabSize(), 8);
        Tokenizer g = Tokenizer.read(GgufWriter.model(Parameters.init(c, 1), "llama", Gguf.Type.F32, bin).write(tmp.resolve("t.gguf")));
        assertFalse(g.isTokenizerJson());
        assertEquals(bin.vocabSize(), g.vocabSize());
        assertEquals(1, g.bosId());
        assertEquals(2, g.eosId());
        for (String text : TEXTS) {
            int[] ids = bin.encode(text, true, true);
            assertArrayEquals(ids, g.encode(text, true, true), "ids of: " + text);
            assertEquals(bin.decode(ids), g.decode(ids));
        }
    }

    // ----------------------------------------------------------------------------------------------
    // errors

    private Path small(GgufWriter w) { return w.write(tmp.resolve("bad.gguf")); }

    private static void assertOneLine(Path f, String start, java.util.function.Consumer<Path> read) {
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> read.accept(f));
        assertTrue(e.getMessage().startsWith(start), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }

    @Test
    void badFilesAreOneLineNamingTheFix() throws IOException {
        ModelConfig c = ModelConfig.llama("t", 32, 64, 1, 2, 40, 8);
        Parameters p = Parameters.init(c, 1);
        GgufWriter w = GgufWriter.model(p, "llama", Gguf.Type.F32, null);
        w.version = 1;
        assertOneLine(small(w), "[gguf] bad.gguf: GGUF version 1 (32-bit lengths) is not read", Gguf::read);
        w.version = 3;
        w.metadata.put("general.architecture", "gemma3");
        assertOneLine(small(w), "[gguf] bad.gguf: architecture 'gemma3' is not read", Gguf::read);
        w.metadata.put("general.architecture", "llama");
        w.metadata.put("llama.rope.scaling.type", "yarn");
        assertOneLine(small(w), "[gguf] bad.gguf: RoPE scaling type 'yarn' is not supported", Gguf::read);
        w.metadata.remove("llama.rope.scaling.type");
        w.metadata.remove("llama.block_count");
        assertOneLine(small(w), "[gguf] bad.gguf: metadata key 'llama.block_count' is missing", Gguf::read);
        // a type ane4j does not dequantize: Q2_K (id 10) in the tensor table
        byte[] b = GgufWriter.model(p, "llama", Gguf.Type.F32, null).bytes();
        Gguf.Header h = Gguf.readHeader(Files.write(tmp.resolve("ok.gguf"), b));
        assertEquals(3, h.version());
        int at = indexOf(b, "blk.0.attn_q.weight".getBytes()) + "blk.0.attn_q.weight".length() + 4 + 16;
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(at, 10);
        assertOneLine(Files.write(tmp.resolve("bad.gguf"), b), "[gguf] bad.gguf: tensor 'blk.0.attn_q.weight' is Q2_K, which ane4j does not dequantize", Gguf::read);
        // truncated data
        byte[] ok = GgufWriter.model(p, "llama", Gguf.Type.F32, null).bytes();
        assertOneLine(Files.write(tmp.resolve("bad.gguf"), java.util.Arrays.copyOf(ok, ok.length - 100)), "[gguf] bad.gguf: tensor '", Gguf::read);
        // not GGUF at all, through the one model rule
        assertOneLine(Files.write(tmp.resolve("bad.gguf"), "hello".getBytes()), "[gguf] bad.gguf: no GGUF magic at byte 0", ModelFiles::read);
        // a tokenizer-less file asked for its tokenizer
        assertOneLine(small(GgufWriter.model(p, "llama", Gguf.Type.F32, null)), "[gguf] bad.gguf: no tokenizer.ggml.model in the metadata", Tokenizer::read);
    }

    static int indexOf(byte[] b, byte[] what) {
        outer:
        for (int i = 0; i + what.length <= b.length; i++) {
            for (int j = 0; j < what.length; j++) if (b[i + j] != what[j]) continue outer;
            return i;
        }
        throw new AssertionError("not found");
    }
}
