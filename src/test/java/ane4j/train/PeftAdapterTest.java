package ane4j.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.golden.TensorCheck;
import ane4j.model.CpuModel;
import ane4j.model.Json;
import ane4j.model.ParameterView;
import ane4j.model.Parameters;
import ane4j.model.Safetensors;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * PEFT-layout adapters: the names and config PEFT writes, a lossless round trip, and the committed golden
 * (tools/gen_lora_golden.py --peft): PyTorch loads the exported folder with Hugging Face's module names and layout
 * (rotate-half RoPE, permuted q/k rows) on the base and computes logits; ane4j's fused model reproduces them.
 */
class PeftAdapterTest {
    @TempDir Path dir;

    /** The final adapters of a LoRA golden (trained by PyTorch), as ane4j holds them. */
    static LoraAdapters goldenAdapters(String name) {
        LoraGoldenTest.Case k = LoraGoldenTest.load(name);
        for (ParameterView v : k.adapters().views()) System.arraycopy(k.g().f32("final." + v.name()), 0, k.adapters().data(), v.offset(), v.size());
        return k.adapters();
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama_qvo1", "qwen3_all"})
    void writesPeftsNamesAndConfigAndReadsBackLosslessly(String name) throws IOException {
        LoraAdapters ad = goldenAdapters(name);
        PeftAdapter.write(dir, ad, "base");
        List<String> want = new ArrayList<>();
        for (int l = 0; l < ad.config().nLayers(); l++)
            for (String t : ad.targets()) {
                String m = switch (t) { case "w1" -> "mlp.gate_proj"; case "w2" -> "mlp.down_proj"; case "w3" -> "mlp.up_proj"; default -> "self_attn." + t + "_proj"; };
                want.add("base_model.model.model.layers." + l + "." + m + ".lora_A.weight");
                want.add("base_model.model.model.layers." + l + "." + m + ".lora_B.weight");
            }
        assertEquals(want, new ArrayList<>(Safetensors.readHeader(dir.resolve("adapter_model.safetensors")).entries().keySet()));
        Map<?, ?> cfg = (Map<?, ?>) Json.parse(Files.readString(dir.resolve("adapter_config.json")));
        assertEquals("LORA", cfg.get("peft_type"));
        assertEquals("CAUSAL_LM", cfg.get("task_type"));
        assertEquals(ad.rank(), ((Number) cfg.get("r")).intValue());
        assertEquals(ad.alpha(), ((Number) cfg.get("lora_alpha")).floatValue());
        assertEquals(ad.targets().stream().map(t -> PeftAdapter.module(t).replaceFirst(".*\\.", "")).toList(), cfg.get("target_modules"));
        LoraAdapters back = PeftAdapter.read(dir, ad.config());
        assertEquals(ad.targets(), back.targets());
        assertArrayEquals(ad.data(), back.data());
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama_qvo1", "qwen3_all"})
    void pyTorchLoadingTheExportGivesTheLogitsOfTheFusedModel(String name) throws IOException {
        LoraAdapters ad = goldenAdapters(name);
        Path out = PeftAdapter.write(dir.resolve(name), ad, "base");
        // the golden belongs to these bytes: the export must not drift from what PyTorch loaded
        Path committed = Path.of("src/test/resources/golden/lora/peft", name);
        for (String f : List.of(PeftAdapter.WEIGHTS, PeftAdapter.CONFIG))
            assertEquals(-1L, Files.mismatch(committed.resolve(f), out.resolve(f)), f + " differs from the folder tools/gen_lora_golden.py --peft loaded");
        Map<?, ?> golden = (Map<?, ?>) ((Map<?, ?>) Json.parse(Files.readString(Path.of("src/test/resources/golden/lora/peft/golden.json")))).get(name);
        List<?> tokens = (List<?>) golden.get("tokens"), logits = (List<?>) golden.get("logits");
        LoraGoldenTest.Case k = LoraGoldenTest.load(name);
        CpuModel fused = new CpuModel(PeftAdapter.read(out, k.config()).fused(new Parameters(k.layout(), k.base())));
        for (int t = 0; t < tokens.size(); t++) {
            List<?> row = (List<?>) logits.get(t);
            float[] want = new float[row.size()];
            for (int i = 0; i < want.length; i++) want[i] = ((Number) row.get(i)).floatValue();
            TensorCheck.checkTensor(name + " logits at position " + t, want, fused.forward(((Number) tokens.get(t)).intValue(), t), 1e-4, 0);
        }
    }

    /** adapter_config.json records the run's lora_dropout (the committed golden folders are of lora_dropout 0: "0.0", unchanged bytes). */
    @org.junit.jupiter.api.Test
    void theConfigRecordsTheRunsDropout() throws IOException {
        LoraAdapters g = goldenAdapters("llama_qvo1");
        LoraAdapters ad = new LoraAdapters(g.config(), g.rank(), g.alpha(), g.targets(), new LoraDropout(0.1f, 7));
        PeftAdapter.write(dir, ad, "base");
        String cfg = Files.readString(dir.resolve("adapter_config.json"));
        assertTrue(cfg.contains("\n  \"lora_dropout\": 0.1,\n"), cfg);
        assertEquals(0.1, ((Number) ((Map<?, ?>) Json.parse(cfg)).get("lora_dropout")).doubleValue(), 1e-9);
    }

    @ParameterizedTest
    @ValueSource(strings = {"qwen3_all"})
    void unsupportedSettingsAreOneLine(String name) throws IOException {
        LoraAdapters ad = goldenAdapters(name);
        PeftAdapter.write(dir, ad, "base");
        Path cfg = dir.resolve("adapter_config.json");
        Files.writeString(cfg, Files.readString(cfg).replace("\"use_dora\": false", "\"use_dora\": true"));
        var e = assertThrows(IllegalArgumentException.class, () -> PeftAdapter.read(dir, ad.config()));
        assertTrue(e.getMessage().startsWith("[lora] ") && e.getMessage().endsWith("use_dora = true is not supported; export the adapter without it"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> PeftAdapter.read(dir.resolve("nothing"), ad.config()));
        assertTrue(e.getMessage().contains("is not a PEFT adapter folder"), e.getMessage());
    }

    /** Writes the folders tools/gen_lora_golden.py --peft loads (run from the repository root after a test-compile). */
    public static void main(String[] args) {
        for (String name : List.of("llama_qvo1", "qwen3_all"))
            System.out.println("wrote " + PeftAdapter.write(Path.of("src/test/resources/golden/lora/peft", name), goldenAdapters(name), "base"));
    }
}
