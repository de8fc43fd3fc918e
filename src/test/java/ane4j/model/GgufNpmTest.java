package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ane4j's GGUF header and tensor table against Hugging Face's own parser, {@code @huggingface/gguf} from npm
 * (tools/hf-js/gguf-dump.mjs): the same version, data offset, and for every tensor the same name, shape, type and offset;
 * the same metadata values. On the numpy golden file (every value and tensor type) and on models ane4j writes in
 * llama.cpp's layout (v3 and v2, alignment 32 and 64, both tokenizer kinds, quantized and float).
 */
class GgufNpmTest {
    @TempDir Path tmp;

    @Test
    void huggingFacesParserReadsTheSameHeaderAndTensorTable() throws Exception {
        HfJs.assumeInstalled("@huggingface/gguf");
        List<Path> files = new ArrayList<>();
        files.add(GgufTest.golden());
        Parameters qwen = ModelFiles.read(ImportGoldenTest.golden("qwen3_sharded_bf16/model.safetensors.index.json"));
        ModelConfig c = new ModelConfig("q", 256, 512, 1, 4, 2, 64, 4352, 16, 1e6f, RopeStyle.HALF, true, true, 1e-6f, 1f);
        GgufWriter k = GgufWriter.model(Parameters.init(c, 3), "qwen3", Gguf.Type.Q4_K, Tokenizer.read(TokenizerJsonTest.SMALL));
        files.add(k.write(tmp.resolve("qwen3-q4k.gguf")));
        GgufWriter v2 = GgufWriter.model(qwen, "qwen3", Gguf.Type.Q8_0, null);
        v2.version = 2;
        v2.alignment = 64;
        files.add(v2.write(tmp.resolve("qwen3-v2.gguf")));
        Parameters llama = ModelFiles.read(ImportGoldenTest.golden("llama_sharded_f16"));
        ModelConfig lc = llama.config();
        Tokenizer spm = EmbeddedCorpus.tokenizer();
        Parameters l2 = Parameters.init(new ModelConfig("l", lc.dim(), lc.hiddenDim(), lc.nLayers(), lc.nHeads(), lc.nKvHeads(), lc.headDim(), spm.vocabSize(),
                lc.seqLen(), lc.ropeTheta(), lc.ropeStyle(), false, false, lc.normEps(), 1f), 4);
        files.add(GgufWriter.model(l2, "llama", Gguf.Type.F16, spm).write(tmp.resolve("llama-f16.gguf")));
        files.add(GgufWriter.model(llama, "llama", Gguf.Type.Q4_0, null).write(tmp.resolve("llama-q4_0.gguf")));
        // Llama 3.2's RoPE scaling: the rope_freqs.weight tensor as convert_hf_to_gguf.py writes it; linear as metadata
        ModelConfig l32 = new ModelConfig("l32", 128, 256, 1, 2, 1, 64, 300, 16, 500000f, RopeStyle.HALF, false, true, 1e-5f, 1f,
                new RopeScaling.Llama3(32, 1, 4, 8192));
        files.add(GgufWriter.model(Parameters.init(l32, 5), "llama", Gguf.Type.Q8_0, null).write(tmp.resolve("llama32-rope-freqs.gguf")));
        files.add(GgufWriter.model(Parameters.init(l32.withRopeScaling(new RopeScaling.Linear(4)), 5), "llama", Gguf.Type.F32, null)
                .write(tmp.resolve("llama-linear.gguf")));
        for (Path f : files) compare(f);
    }

    @SuppressWarnings("unchecked")
    private static void compare(Path file) throws Exception {
        Gguf.Header ours = Gguf.readHeader(file);
        Map<String, Object> theirs = (Map<String, Object>) Json.parse(HfJs.run("gguf-dump.mjs", null, file.toString()));
        String f = file.getFileName() + ": ";
        assertEquals((long) ours.version(), theirs.get("version"), f + "version");
        assertEquals(Long.toString(ours.dataStart()), theirs.get("tensorDataOffset"), f + "data offset");
        List<Object> tensors = (List<Object>) theirs.get("tensors");
        assertEquals(ours.tensors().size(), tensors.size(), f + "tensor count");
        int i = 0;
        for (Gguf.TensorInfo t : ours.tensors().values()) {
            Map<String, Object> o = (Map<String, Object>) tensors.get(i++);
            assertEquals(t.name(), o.get("name"), f + "tensor " + i + " name");
            List<String> shape = new ArrayList<>();
            for (long d : t.dims()) shape.add(Long.toString(d));
            assertEquals(shape, o.get("shape"), f + t.name() + " shape");
            assertEquals((long) t.type().id, o.get("dtype"), f + t.name() + " type");
            assertEquals(Long.toString(t.offset()), o.get("offset"), f + t.name() + " offset");
        }
        Map<String, Object> md = (Map<String, Object>) theirs.get("metadata");
        assertEquals(ours.metadata().keySet(), md.keySet(), f + "metadata keys");
        for (var e : ours.metadata().entrySet()) {
            Object v = ((Map<String, Object>) md.get(e.getKey())).get("value");
            assertSame(f + e.getKey(), e.getValue(), v);
        }
        assertTrue(!tensors.isEmpty());
    }

    // our metadata value (Long, Double, String, Boolean, long[], float[], List) against the npm parser's JSON of it
    private static void assertSame(String what, Object ours, Object theirs) {
        switch (ours) {
            case Long l -> assertEquals(l.longValue(), theirs instanceof String s ? Long.parseLong(s) : ((Number) theirs).longValue(), what);
            case Double d -> assertEquals(d, ((Number) theirs).doubleValue(), what);
            case long[] a -> {
                List<?> l = (List<?>) theirs;
                assertEquals(a.length, l.size(), what + " length");
                for (int i = 0; i < a.length; i++) assertSame(what + "[" + i + "]", a[i], l.get(i));
            }
            case float[] a -> {
                List<?> l = (List<?>) theirs;
                assertEquals(a.length, l.size(), what + " length");
                for (int i = 0; i < a.length; i++) assertEquals((double) a[i], ((Number) l.get(i)).doubleValue(), what + "[" + i + "]");
            }
            case List<?> a -> {
                List<?> l = (List<?>) theirs;
                assertEquals(a.size(), l.size(), what + " length");
                for (int i = 0; i < a.size(); i++) assertSame(what + "[" + i + "]", a.get(i), l.get(i));
            }
            default -> assertEquals(ours, theirs, what);
        }
    }
}
