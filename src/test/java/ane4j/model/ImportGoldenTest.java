package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --init} files as other tools write them, against PyTorch logits of exactly the weights each file holds
 * (tools/gen_import_golden.py): llama2.c's version-1 .bin, a sharded F16 Llama laid out as transformers' conversion
 * script does (q/k rows permuted to rotate-half), a sharded BF16 Qwen3 (GQA, QK-norm, tied).
 */
class ImportGoldenTest {
    static final String HINT = " (regenerate with /usr/bin/python3 tools/gen_import_golden.py)";

    @TempDir Path tmp;

    static Path golden(String name) {
        try {
            return Path.of(ImportGoldenTest.class.getResource("/golden/import/" + name).toURI());
        } catch (URISyntaxException | NullPointerException e) {
            throw new AssertionError("missing golden file " + name + HINT, e);
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> logits() throws IOException {
        return (Map<String, Object>) Json.parse(Files.readString(golden("logits.json")));
    }

    @Test
    void llama2cVersion1IsLlamaTinyExactly() throws IOException {
        Parameters v1 = ModelFiles.read(golden("llama_tiny_v1.bin")), v0 = Llama2Bin.read(CpuModelGoldenTest.golden("llama_tiny.bin"));
        assertEquals(v0.config().withName("x"), v1.config().withName("x"));
        assertFalse(v1.config().tiedEmbedding());
        assertTrue(java.util.Arrays.equals(v0.data(), v1.data()), "the same float32 weights as the v0 file");
        CpuModelGoldenTest.checkLogits("llama_tiny", v1, CpuModelGoldenTest.logitsJson());
    }

    @Test
    void shardedF16LlamaMatchesPyTorch() throws IOException {
        Parameters p = ModelFiles.read(golden("llama_sharded_f16"));   // the folder: its model.safetensors.index.json
        assertEquals(RopeStyle.HALF, p.config().ropeStyle());
        assertFalse(p.config().tiedEmbedding());
        assertEquals("llama_sharded_f16", p.config().name());
        CpuModelGoldenTest.checkLogits("llama_sharded_f16", p, logits());
    }

    @Test
    void shardedBf16Qwen3MatchesPyTorch() throws IOException {
        Parameters p = ModelFiles.read(golden("qwen3_sharded_bf16/model.safetensors.index.json"));
        ModelConfig c = p.config();
        assertTrue(c.qkNorm() && c.tiedEmbedding());
        assertEquals(2, c.nKvHeads());
        assertEquals(16, c.headDim());
        CpuModelGoldenTest.checkLogits("qwen3_sharded_bf16", p, logits());
    }

    @Test
    void aSharedVersion1FileHasNoClassifier() throws IOException {
        // 1 layer, dim 8, hidden 16, 2 heads, vocab 5, seq 4, shared: norms, embedding, matrices; no wcls, no freq_cis
        ModelConfig c = ModelConfig.llama("s", 8, 16, 1, 2, 5, 4);
        Parameters src = Parameters.init(c, 7);
        ByteBuffer b = ByteBuffer.allocate(256 + 4 * src.data().length).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0x616b3432).putInt(1).putInt(8).putInt(16).putInt(1).putInt(2).putInt(2).putInt(5).putInt(4).put((byte) 1).position(256);
        ParameterLayout l = src.layout();
        for (String n : new String[]{"layers.0.rmsAtt", "layers.0.rmsFfn", "rmsFinal", "tokenEmbedding", "layers.0.wq", "layers.0.wk", "layers.0.wv", "layers.0.wo",
            "layers.0.w1", "layers.0.w2", "layers.0.w3"}) {
            ParameterView v = l.view(n);
            for (int i = v.offset(); i < v.end(); i++) b.putFloat(src.data()[i]);
        }
        Path f = tmp.resolve("s.bin");
        Files.write(f, b.array());
        Parameters p = Llama2Bin.read(f);
        assertTrue(p.config().tiedEmbedding());
        assertTrue(java.util.Arrays.equals(src.data(), p.data()));
        Files.write(f, java.util.Arrays.copyOf(b.array(), b.capacity() - 4));
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> Llama2Bin.read(f));
        assertTrue(e.getMessage().startsWith("[llama2.bin] s.bin: expected " + b.capacity() + " bytes for version=1 dim=8"), e.getMessage());
    }

    @Test
    void badShardedCheckpointsAreOneLineNamingTheFix() throws IOException {
        Path dir = tmp.resolve("ckpt");
        Files.createDirectories(dir);
        Path src = golden("qwen3_sharded_bf16");
        for (String f : new String[]{"config.json", "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model.safetensors.index.json"})
            Files.copy(src.resolve(f), dir.resolve(f));
        Path index = dir.resolve(Safetensors.INDEX_FILE);
        assertMessage(dir, "[safetensors] model.safetensors.index.json names shard model-00003-of-00003.safetensors, which is not in ");
        Files.copy(src.resolve("model-00002-of-00003.safetensors"), dir.resolve("model-00003-of-00003.safetensors"));
        assertMessage(dir, "[safetensors] model-00003-of-00003.safetensors: tensor '");
        String text = Files.readString(src.resolve(Safetensors.INDEX_FILE));
        Files.writeString(index, text.replace("\"model.norm.weight\": \"model-00003-of-00003.safetensors\"", "\"model.norm.weight\": \"../model-00003-of-00003.safetensors\""));
        assertMessage(dir, "[safetensors] model.safetensors.index.json: weight_map entry 'model.norm.weight' names ../model-00003-of-00003.safetensors, not a shard file name");
        Files.writeString(index, "{\"metadata\": {}}");
        assertMessage(dir, "[safetensors] model.safetensors.index.json: no \"weight_map\" object");
        Files.writeString(index, "{\"weight_map\": ");
        assertMessage(dir, "[safetensors] model.safetensors.index.json: not JSON");
        Files.delete(index);
        assertMessage(dir, "[model] " + dir + " is a folder without model.safetensors or model.safetensors.index.json");
    }

    private static void assertMessage(Path p, String start) {
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> ModelFiles.read(p));
        assertTrue(e.getMessage().startsWith(start), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }
}
