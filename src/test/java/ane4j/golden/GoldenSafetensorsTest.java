package ane4j.golden;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The committed training goldens load, are complete and self-consistent; the reader rejects broken files. */
class GoldenSafetensorsTest {

    static final double LOSS_TOL = 1e-5;

    static GoldenSafetensors golden(String config) {
        return GoldenSafetensors.load("golden/train/" + config + ".safetensors");
    }

    /** Parameter names and shapes implied by the metadata config, in the generator's order. */
    static Map<String, int[]> expectedParams(GoldenSafetensors g) {
        int dim = g.metaInt("dim"), hidden = g.metaInt("hiddenDim"), nLayers = g.metaInt("nLayers");
        int qDim = g.metaInt("nHeads") * g.metaInt("headDim"), kvDim = g.metaInt("nKvHeads") * g.metaInt("headDim");
        boolean qkNorm = Boolean.parseBoolean(g.meta("qkNorm"));
        Map<String, int[]> p = new LinkedHashMap<>();
        p.put("tokenEmbedding", new int[] {g.metaInt("vocabSize"), dim});
        for (int l = 0; l < nLayers; l++) {
            String L = "layers." + l + ".";
            p.put(L + "rmsAtt", new int[] {dim});
            p.put(L + "wq", new int[] {qDim, dim});
            p.put(L + "wk", new int[] {kvDim, dim});
            p.put(L + "wv", new int[] {kvDim, dim});
            if (qkNorm) {
                p.put(L + "qNorm", new int[] {g.metaInt("headDim")});
                p.put(L + "kNorm", new int[] {g.metaInt("headDim")});
            }
            p.put(L + "wo", new int[] {dim, qDim});
            p.put(L + "rmsFfn", new int[] {dim});
            p.put(L + "w1", new int[] {hidden, dim});
            p.put(L + "w2", new int[] {dim, hidden});
            p.put(L + "w3", new int[] {hidden, dim});
        }
        p.put("rmsFinal", new int[] {dim});
        return p;
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "qwen3"})
    void metadataDescribesTheConfig(String config) {
        GoldenSafetensors g = golden(config);
        assertEquals("ane4j-train-golden", g.meta("format"));
        assertEquals("1", g.meta("version"));
        assertEquals(config, g.meta("config"));
        assertEquals("tools/gen_golden.py", g.meta("generator"));
        assertEquals("true", g.meta("tied"));
        assertEquals(config.equals("qwen3") ? "half" : "interleaved", g.meta("ropeStyle"));
        assertEquals(config.equals("qwen3") ? "true" : "false", g.meta("qkNorm"));
        assertEquals(config.equals("qwen3") ? 1e-6 : 1e-5, Double.parseDouble(g.meta("normEps")));
        assertEquals(config.equals("qwen3") ? 1e6 : 1e4, Double.parseDouble(g.meta("ropeTheta")));
        if (config.equals("qwen3")) {
            assertNotEquals(g.metaInt("dim") / g.metaInt("nHeads"), g.metaInt("headDim"), "qwen3 golden must have headDim != dim/nHeads");
            assertTrue(g.metaInt("nKvHeads") < g.metaInt("nHeads"), "qwen3 golden must use GQA");
        }
        for (String k : List.of("lr", "beta1", "beta2", "eps", "weightDecay", "clip")) {
            Double.parseDouble(g.meta(k));
        }
        assertEquals(String.join(",", expectedParams(g).keySet()), g.meta("params"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "qwen3"})
    void namesAndShapesMatchTheConfig(String config) {
        GoldenSafetensors g = golden(config);
        int seqLen = g.metaInt("seqLen"), vocab = g.metaInt("vocabSize"), steps = g.metaInt("adamSteps");
        Map<String, int[]> params = expectedParams(g);
        Set<String> expected = new LinkedHashSet<>(params.keySet());
        expected.addAll(List.of("tokens", "targets", "logits", "loss", "losses", "gradNorms"));
        for (String p : params.keySet()) expected.add("grad." + p);
        List<String> finals = List.of(g.meta("finals").split(","));
        assertTrue(finals.size() >= 2, "at least two final.* parameters");
        for (String f : finals) {
            assertTrue(params.containsKey(f), "final." + f + " names a parameter");
            expected.add("final." + f);
        }
        assertEquals(expected, g.names());

        for (Map.Entry<String, int[]> e : params.entrySet()) {
            String n = e.getKey();
            assertArrayEquals(e.getValue(), g.shape(n), n);
            assertArrayEquals(e.getValue(), g.shape("grad." + n), "grad." + n);
            assertEquals("F32", g.dtype(n));
            assertEquals(product(e.getValue()), g.f32("grad." + n).length);
        }
        for (String f : finals) assertArrayEquals(params.get(f), g.shape("final." + f));
        assertArrayEquals(new int[] {seqLen}, g.shape("tokens"));
        assertArrayEquals(new int[] {seqLen}, g.shape("targets"));
        assertArrayEquals(new int[] {seqLen, vocab}, g.shape("logits"));
        assertArrayEquals(new int[] {1}, g.shape("loss"));
        assertArrayEquals(new int[] {steps}, g.shape("losses"));
        assertArrayEquals(new int[] {steps}, g.shape("gradNorms"));
        assertEquals("I32", g.dtype("tokens"));
        assertEquals("I32", g.dtype("targets"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "qwen3"})
    void lossIsTheCrossEntropyOfTheLogits(String config) {
        GoldenSafetensors g = golden(config);
        int seqLen = g.metaInt("seqLen"), vocab = g.metaInt("vocabSize");
        int[] tokens = g.i32("tokens"), targets = g.i32("targets");
        float[] logits = g.f32("logits");
        // targets are the next tokens of one random sequence
        for (int t = 0; t < seqLen; t++) {
            assertTrue(tokens[t] >= 0 && tokens[t] < vocab && targets[t] >= 0 && targets[t] < vocab, "token id in range at " + t);
            if (t + 1 < seqLen) assertEquals(tokens[t + 1], targets[t], "targets[t] == tokens[t+1] at " + t);
        }
        // loss = mean_t (logsumexp(logits[t]) - logits[t, y_t])
        double sum = 0;
        for (int t = 0; t < seqLen; t++) {
            double max = Double.NEGATIVE_INFINITY;
            for (int v = 0; v < vocab; v++) max = Math.max(max, logits[t * vocab + v]);
            double z = 0;
            for (int v = 0; v < vocab; v++) z += Math.exp(logits[t * vocab + v] - max);
            sum += max + Math.log(z) - logits[t * vocab + targets[t]];
        }
        float loss = g.f32("loss")[0];
        assertEquals(sum / seqLen, loss, LOSS_TOL);
        assertEquals(Math.log(vocab), loss, 0.05, "an untrained model is near uniform");
        float[] losses = g.f32("losses");
        assertEquals(loss, losses[0], 0f, "losses[0] is the loss of the stored weights");
        assertTrue(losses[losses.length - 1] < losses[0] - 0.1f, "10 AdamW steps on one batch lower the loss");
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "qwen3"})
    void goldenCatchesCommonGradientBugs(String config) {
        GoldenSafetensors g = golden(config);
        // norm weights differ from 1, so a formula that drops one is visible
        for (String n : expectedParams(g).keySet()) {
            if (!n.matches(".*(rmsAtt|rmsFfn|rmsFinal|qNorm|kNorm)")) continue;
            double maxDev = 0;
            for (float w : g.f32(n)) maxDev = Math.max(maxDev, Math.abs(w - 1));
            assertTrue(maxDev > 0.05, n + " is not ~1");
        }
        // clipping is active in step 0 (gradient norm > clip), and every gradient is non-zero
        double sq = 0;
        for (String n : expectedParams(g).keySet()) {
            double s = 0;
            for (float v : g.f32("grad." + n)) s += (double) v * v;
            assertTrue(s > 0, "grad." + n + " is non-zero");
            sq += s;
        }
        assertEquals(Math.sqrt(sq), g.f32("gradNorms")[0], 1e-4 * Math.sqrt(sq));
        assertTrue(g.f32("gradNorms")[0] > Double.parseDouble(g.meta("clip")));
        // the final parameters moved
        for (String f : g.meta("finals").split(",")) assertNotEquals(0, TensorCheck.maxAbsDiff(g.f32(f), g.f32("final." + f)), f);
    }

    @Test
    void rejectsBrokenFiles() {
        byte[] good = fileBytes("{\"__metadata__\":{\"a\":\"b\"},\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                new byte[8]);
        GoldenSafetensors ok = GoldenSafetensors.parse(good, "ok");
        assertEquals(Map.of("a", "b"), ok.metadata());
        assertArrayEquals(new float[] {0f, 0f}, ok.f32("x"));

        assertMessage("shorter than the 8-byte", () -> GoldenSafetensors.parse(new byte[3], "t"));
        byte[] longHeader = good.clone();
        ByteBuffer.wrap(longHeader).order(ByteOrder.LITTLE_ENDIAN).putLong(0, 1L << 40);
        assertMessage("header length", () -> GoldenSafetensors.parse(longHeader, "t"));
        assertMessage("do not match shape", () -> GoldenSafetensors.parse(fileBytes(
                "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", new byte[8]), "t"));
        assertMessage("only F32 and I32", () -> GoldenSafetensors.parse(fileBytes(
                "{\"x\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]}}", new byte[8]), "t"));
        assertMessage("not contiguous", () -> GoldenSafetensors.parse(fileBytes(
                "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", new byte[8]), "t"));
        assertMessage("bad JSON header", () -> GoldenSafetensors.parse(fileBytes("{\"x\":[1,}", new byte[0]), "t"));
        assertMessage("is F32, not I32", () -> ok.i32("x"));
        assertMessage("no tensor 'y'", () -> ok.f32("y"));
    }

    @Test
    void jsonParserHandlesEscapesNumbersAndNesting() {
        Object v = Json.parse(" {\"a\\\"b\\u0041\\n\": [1, -2, 3.5e1, true, null, {}], \"c\": \"\\/\"} ");
        Map<?, ?> m = (Map<?, ?>) v;
        List<Object> expected = new ArrayList<>();
        expected.add(1L);
        expected.add(-2L);
        expected.add(35.0);
        expected.add(true);
        expected.add(null);
        expected.add(Map.of());
        assertEquals(expected, m.get("a\"bA\n"));
        assertEquals("/", m.get("c"));
        assertMessage("duplicate key", () -> GoldenSafetensors.parse(fileBytes("{\"a\":1,\"a\":2}", new byte[0]), "t"));
        assertMessage("expected end of input", () -> GoldenSafetensors.parse(fileBytes("{} x", new byte[0]), "t"));
    }

    private static byte[] fileBytes(String header, byte[] data) {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        return b.putLong(h.length).put(h).put(data).array();
    }

    private static void assertMessage(String part, org.junit.jupiter.api.function.Executable e) {
        IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, e);
        assertTrue(ex.getMessage().startsWith("[golden] ") && ex.getMessage().contains(part), ex.getMessage());
    }

    private static long product(int[] shape) {
        long p = 1;
        for (int d : shape) p *= d;
        return p;
    }
}
