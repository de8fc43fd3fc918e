package ane4j.model;

import ane4j.golden.TensorCheck;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CPU forward against PyTorch logits from {@code tools/gen_model_golden.py} (float64 reference, full-sequence
 * causal attention): a llama2.c .bin (MHA, interleaved RoPE, untied) and a Qwen3 safetensors (GQA 4/2,
 * headDim 16 ≠ dim/heads, QK-norm, rotate-half RoPE, theta 1e6, tied).
 */
class CpuModelGoldenTest {
    static final double RTOL = 1e-4, ATOL = 1e-4; // float32 forward vs float64 reference
    static final String HINT = " (regenerate with /usr/bin/python3 tools/gen_model_golden.py)";

    @TempDir Path tmp;

    static Path golden(String name) {
        try {
            return Path.of(CpuModelGoldenTest.class.getResource("/golden/model/" + name).toURI());
        } catch (URISyntaxException | NullPointerException e) {
            throw new AssertionError("missing golden file " + name + HINT, e);
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> logitsJson() throws IOException {
        var root = (Map<String, Object>) Json.parse(Files.readString(golden("logits.json")));
        assertEquals(1L, root.get("version"), "golden version" + HINT);
        return root;
    }

    @SuppressWarnings("unchecked")
    static void checkLogits(String model, Parameters params, Map<String, Object> root) {
        var g = (Map<String, Object>) root.get(model);
        var tokens = (List<Long>) g.get("tokens");
        var logits = (List<List<Number>>) g.get("logits");
        CpuModel m = new CpuModel(params);
        double maxDiff = 0;
        for (int pos = 0; pos < tokens.size(); pos++) {
            float[] out = m.forward(tokens.get(pos).intValue(), pos);
            List<Number> want = logits.get(pos);
            assertEquals(want.size(), out.length, model + " vocab size");
            double[] expected = want.stream().mapToDouble(Number::doubleValue).toArray();
            try {
                maxDiff = Math.max(maxDiff, TensorCheck.checkTensor(model + " logits at pos " + pos, expected, out, ATOL, RTOL).maxAbsDiff());
            } catch (AssertionError e) {
                fail(e.getMessage() + HINT);
            }
        }
        assertTrue(maxDiff < 1e-4, model + " max diff " + maxDiff);
    }

    @Test
    void llama2BinUntiedInterleavedMatchesPyTorch() throws IOException {
        Parameters p = Llama2Bin.read(golden("llama_tiny.bin"));
        ModelConfig c = p.config();
        assertEquals(32, c.dim());
        assertEquals(4, c.nKvHeads());
        assertEquals(RopeStyle.INTERLEAVED, c.ropeStyle());
        assertTrue(!c.tiedEmbedding() && p.layout().wcls() != null, "negative vocab in header = untied");
        checkLogits("llama_tiny", p, logitsJson());
    }

    @Test
    void qwen3SafetensorsGqaQkNormHalfRopeMatchesPyTorch() throws IOException {
        Parameters p = Safetensors.read(golden("qwen3/model.safetensors"));
        ModelConfig c = p.config();
        assertEquals(4, c.nHeads());
        assertEquals(2, c.nKvHeads());
        assertEquals(16, c.headDim());
        assertEquals(64, c.qDim());
        assertTrue(c.qkNorm() && c.tiedEmbedding());
        assertEquals(RopeStyle.HALF, c.ropeStyle());
        assertEquals(1e6f, c.ropeTheta());
        assertEquals(1e-6f, c.normEps());
        checkLogits("qwen3_tiny", p, logitsJson());
    }

    /** llama2.c weights exported to safetensors are permuted to rotate-half RoPE and still give PyTorch's logits. */
    @Test
    void llamaExportedToSafetensorsComputesTheSameFunction() throws IOException {
        Parameters p = Llama2Bin.read(golden("llama_tiny.bin"));
        Path st = tmp.resolve("llama.safetensors");
        Safetensors.write(st, p, Safetensors.DType.F32);
        Parameters back = Safetensors.read(st);
        assertEquals(RopeStyle.HALF, back.config().ropeStyle());
        checkLogits("llama_tiny", back, logitsJson());
        // and back to llama2.c: the permutation is undone exactly
        Path bin = tmp.resolve("again.bin");
        Llama2Bin.write(bin, back);
        assertEquals(-1L, Files.mismatch(golden("llama_tiny.bin"), bin), "llama2.c → safetensors → llama2.c is byte-identical");
    }

    @Test
    void qwen3ThroughOurOwnWriterAndMetadataStillMatches() throws IOException {
        Parameters p = Safetensors.read(golden("qwen3/model.safetensors"));
        Path dir = Files.createDirectories(tmp.resolve("nocfg"));
        Path st = dir.resolve("q.safetensors");
        Safetensors.write(st, p, Safetensors.DType.F32);
        Parameters back = Safetensors.read(st); // no config.json here: config from __metadata__
        assertEquals(p.config().withName("x"), back.config().withName("x"));
        checkLogits("qwen3_tiny", back, logitsJson());
    }
}
