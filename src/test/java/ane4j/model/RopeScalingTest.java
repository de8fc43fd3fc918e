package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.golden.TensorCheck;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * RoPE scaling against {@code tools/gen_rope_scaling_golden.py} (transformers' and llama.cpp's published formulas in
 * PyTorch): the frequencies of Llama 3.1 8B, Llama 3.2 1B/3B and linear configs, llama.cpp's rope_freqs tensor, and a
 * tiny Llama model's logits with llama3, linear and no scaling, read from safetensors and from GGUF.
 */
class RopeScalingTest {
    static final String HINT = " (regenerate with /usr/bin/python3 tools/gen_rope_scaling_golden.py)";

    @TempDir Path tmp;

    static Path golden(String name) {
        try {
            return Path.of(RopeScalingTest.class.getResource("/golden/rope/" + name).toURI());
        } catch (URISyntaxException | NullPointerException e) {
            throw new AssertionError("missing golden file " + name + HINT, e);
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> json(String name) throws IOException {
        var root = (Map<String, Object>) Json.parse(Files.readString(golden(name)));
        assertEquals(1L, root.get("version"), "golden version" + HINT);
        return root;
    }

    static double[] doubles(Object list) {
        return ((List<?>) list).stream().mapToDouble(v -> ((Number) v).doubleValue()).toArray();
    }

    static ModelConfig config(double theta, int headDim, RopeScaling s) {
        return new ModelConfig("t", headDim * 2, 64, 1, 2, 2, headDim, 16, 32, (float) theta, RopeStyle.HALF, false, true, 1e-5f, 1f, s);
    }

    @Test
    @SuppressWarnings("unchecked")
    void frequenciesAreTransformersAndFactorsAreLlamaCpps() throws IOException {
        for (Object o : (List<Object>) json("frequencies.json").get("cases")) {
            var c = (Map<String, Object>) o;
            String name = (String) c.get("name");
            RopeScaling s = RopeScaling.fromHf((Map<?, ?>) c.get("rope_scaling"));
            int hd = ((Number) c.get("head_dim")).intValue();
            double theta = ((Number) c.get("theta")).doubleValue();
            double[] got = config(theta, hd, s).ropeFrequencies();
            // float64 reference: the same formula, so equal up to rounding; float32: what transformers itself computes
            double[] want64 = doubles(c.get("inv_freq_f64"));
            for (int i = 0; i < got.length; i++)
                assertEquals(want64[i], got[i], 1e-12 * want64[i], name + " pair " + i + HINT);
            double[] want32 = doubles(c.get("inv_freq_f32"));
            for (int i = 0; i < got.length; i++)
                assertEquals(want32[i], got[i], 2e-6 * want32[i], name + " pair " + i + " against transformers' float32" + HINT);
            if (s instanceof RopeScaling.Llama3 l) {
                double[] ff = doubles(c.get("rope_freqs"));
                float[] mine = l.freqFactors(RopeScaling.baseFrequencies(theta, hd));
                for (int i = 0; i < ff.length; i++)
                    assertEquals(ff[i], mine[i], 1e-5 * ff[i], name + " rope_freqs[" + i + "]" + HINT);
                // llama.cpp's tensor read back: Llama 3's rule when it is one with the defaults, else the factors as they are
                float[] ffFloats = toFloats(ff);
                RopeScaling back = RopeScaling.fromFreqFactors(ffFloats, theta, hd);
                if (l.lowFreqFactor() == 1 && l.highFreqFactor() == 4 && l.originalContext() == 8192) assertEquals(s, back, name);
                else assertInstanceOf(RopeScaling.Factors.class, back, name);
                double[] viaFactors = config(theta, hd, back).ropeFrequencies();
                for (int i = 0; i < got.length; i++) assertEquals(want64[i], viaFactors[i], 1e-6 * want64[i], name + " via rope_freqs, pair " + i);
            }
        }
    }

    static float[] toFloats(double[] d) {
        float[] f = new float[d.length];
        for (int i = 0; i < d.length; i++) f[i] = (float) d[i];
        return f;
    }

    /** The tiny model's logits under {@code key}'s scaling (CpuModel, float32 vs the float64 reference). */
    @SuppressWarnings("unchecked")
    static void checkLogits(String key, Parameters p) throws IOException {
        Map<String, Object> root = json("logits.json");
        var tokens = (List<Number>) root.get("tokens");
        var logits = (List<List<Number>>) ((Map<String, Object>) root.get(key)).get("logits");
        CpuModel m = new CpuModel(p);
        for (int pos = 0; pos < tokens.size(); pos++) {
            float[] out = m.forward(tokens.get(pos).intValue(), pos);
            double[] want = logits.get(pos).stream().mapToDouble(Number::doubleValue).toArray();
            TensorCheck.checkTensor(key + " logits at pos " + pos + HINT, want, out, 1e-4, 1e-4);
        }
    }

    /** The golden model folder with its config.json's rope_scaling replaced. */
    Path withScaling(Object scaling) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("m" + System.nanoTime()));
        Files.copy(golden("llama3_tiny/model.safetensors"), dir.resolve("model.safetensors"));
        @SuppressWarnings("unchecked")
        Map<String, Object> cfg = new LinkedHashMap<>((Map<String, Object>) Json.parse(Files.readString(golden("llama3_tiny/config.json"))));
        cfg.put("rope_scaling", scaling);
        Files.writeString(dir.resolve("config.json"), Json.pretty(cfg));
        return dir.resolve("model.safetensors");
    }

    @Test
    void safetensorsWithRopeScalingGivePyTorchsLogits() throws IOException {
        Parameters p = Safetensors.read(golden("llama3_tiny/model.safetensors"));
        assertEquals(new RopeScaling.Llama3(8, 1, 4, 64), p.config().ropeScaling());
        checkLogits("llama3", p);
        checkLogits("linear2", Safetensors.read(withScaling(Map.of("rope_type", "linear", "factor", 2.0))));
        checkLogits("linear2", Safetensors.read(withScaling(Map.of("type", "linear", "factor", 2))));   // the older key
        checkLogits("none", Safetensors.read(withScaling(null)));
        checkLogits("none", Safetensors.read(withScaling(Map.of("rope_type", "default"))));
    }

    @Test
    void ggufWithRopeFreqsOrLinearScalingGivesTheSameLogits() throws IOException {
        Parameters hf = Safetensors.read(golden("llama3_tiny/model.safetensors"));
        Path f = GgufWriter.model(hf, "llama", Gguf.Type.F32, null).write(tmp.resolve("llama3.gguf"));
        assertTrue(Gguf.readTensors(f).containsKey("rope_freqs.weight"), "Llama 3's rule travels as llama.cpp's rope_freqs tensor");
        Parameters p = Gguf.read(f);
        // original context 64 is not Llama 3.x's 8192: the tensor is kept as per-pair factors, the same frequencies
        assertInstanceOf(RopeScaling.Factors.class, p.config().ropeScaling());
        double[] want = hf.config().ropeFrequencies(), got = p.config().ropeFrequencies();
        for (int i = 0; i < want.length; i++) assertEquals(want[i], got[i], 1e-6 * want[i], "pair " + i);
        checkLogits("llama3", p);
        // Llama 3.2's own parameters come back as the llama3 rule itself
        ModelConfig l32 = new ModelConfig("l", 128, 64, 1, 2, 2, 64, 48, 16, 500000f, RopeStyle.HALF, false, false, 1e-5f, 1f,
                new RopeScaling.Llama3(32, 1, 4, 8192));
        Path f32 = GgufWriter.model(Parameters.init(l32, 3), "llama", Gguf.Type.F32, null).write(tmp.resolve("l32.gguf"));
        assertEquals(l32.withName("x"), Gguf.read(f32).config().withName("x"));
        Parameters lin = Safetensors.read(withScaling(Map.of("rope_type", "linear", "factor", 2.0)));
        Path g = GgufWriter.model(lin, "llama", Gguf.Type.F32, null).write(tmp.resolve("linear.gguf"));
        assertEquals(new RopeScaling.Linear(2), Gguf.read(g).config().ropeScaling());
        checkLogits("linear2", Gguf.read(g));
    }

    @Test
    void exportsCarryTheScalingBack() throws IOException {
        Parameters p = Safetensors.read(golden("llama3_tiny/model.safetensors"));
        // our safetensors without config.json: the scaling is in __metadata__
        Path dir = Files.createDirectories(tmp.resolve("st"));
        Safetensors.write(dir.resolve("x.safetensors"), p, Safetensors.DType.F32);
        assertEquals(p.config().ropeScaling(), Safetensors.read(dir.resolve("x.safetensors")).config().ropeScaling());
        // the Hugging Face export's config.json: rope_scaling as transformers reads it
        Map<?, ?> cfg = (Map<?, ?>) Json.parse(HfExport.configJson(p.config(), Safetensors.DType.F32));
        Map<?, ?> rs = (Map<?, ?>) cfg.get("rope_scaling");
        assertEquals("llama3", rs.get("rope_type"));
        assertEquals(8.0, ((Number) rs.get("factor")).doubleValue());
        assertEquals(64L, ((Number) rs.get("original_max_position_embeddings")).longValue());
        assertEquals(null, ((Map<?, ?>) Json.parse(HfExport.configJson(ModelConfig.parse("tiny"), Safetensors.DType.F32))).get("rope_scaling"));
        // a checkpoint's config text
        for (RopeScaling s : List.of(RopeScaling.NONE, new RopeScaling.Linear(2.5), new RopeScaling.Llama3(32, 1, 4, 8192),
                new RopeScaling.Factors(List.of(1f, 1.5f, 3.25f, 8f)))) {
            ModelConfig c = config(10000, 8, s);
            assertEquals(c, ModelConfig.fromFileText(c.toFileText(), "ckpt"), s.text());
        }
        assertFalse(ModelConfig.parse("tiny").toFileText().contains("ropeScaling"), "unscaled configs' text is as before");
        // llama2.c files compute theta^(-2i/HD) in run.c: a scaled model is refused in one line
        Parameters scaled = Parameters.init(ModelConfig.llama("s", 16, 32, 1, 2, 16, 8).withRopeScaling(new RopeScaling.Llama3(8, 1, 4, 64)), 1);
        var e = assertThrows(IllegalArgumentException.class, () -> Llama2Bin.write(tmp.resolve("x.bin"), scaled));
        assertTrue(e.getMessage().contains("RoPE scaling (llama3 factor=8"), e.getMessage());
    }

    @Test
    void otherScalingTypesAreOneLineNamingThem() throws IOException {
        for (String type : List.of("yarn", "dynamic", "longrope")) {
            Path f = withScaling(Map.of("rope_type", type, "factor", 4.0));
            var e = assertThrows(ModelFormatException.class, () -> Safetensors.read(f));
            assertTrue(e.getMessage().startsWith("[safetensors] model.safetensors: RoPE scaling type '" + type + "' is not supported"), e.getMessage());
            assertFalse(e.getMessage().contains("\n"));
        }
        var e = assertThrows(ModelFormatException.class, () -> Safetensors.read(withScaling(Map.of("rope_type", "llama3"))));
        assertTrue(e.getMessage().contains("rope_scaling has no 'factor'"), e.getMessage());
        var bad = assertThrows(ModelFormatException.class, () -> ModelConfig.fromFileText("preset = tiny\nropeScaling = llama3 factor=8\n", "c.conf"));
        assertTrue(bad.getMessage().startsWith("[config] c.conf:2: ropeScaling = 'llama3 factor=8': 'lowFreqFactor=' is missing"), bad.getMessage());
    }
}
