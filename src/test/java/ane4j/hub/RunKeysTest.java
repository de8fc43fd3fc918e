package ane4j.hub;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.HfExport;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.Safetensors;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link HfHub#resolveRunKeys}, the one rule by which the CLI's train and the notebook's %%train / Ane.train turn
 * Hugging Face ids into snapshot folders, against a local hub server (never the real hub).
 */
class RunKeysTest {
    @TempDir Path dir;

    // a stand-in for RunSpec.KEYS::canonical (run is not below hub): case and -/_ ignored, a leading -- dropped
    static final Function<String, String> CANONICAL = k -> {
        String s = k.replaceFirst("^--", "").replace("-", "").replace("_", "").toLowerCase(Locale.ROOT);
        return switch (s) { case "init" -> "init"; case "model" -> "model"; case "tokenizer" -> "tokenizer"; case "steps" -> "steps"; default -> null; };
    };

    @Test
    void idsBecomeSnapshotsAndEverythingElseIsLeftAsGiven() throws Exception {
        Path served = dir.resolve("served");
        HfExport.write(served, Parameters.init(ModelConfig.parse("tiny"), 1), Safetensors.DType.F32);
        Path local = Files.writeString(dir.resolve("my.conf"), "preset = tiny\n");
        try (LocalHub server = new LocalHub("org/tiny", served)) {
            AtomicInteger made = new AtomicInteger();
            var env = Map.of("HF_ENDPOINT", server.endpoint(), "HF_HOME", dir.resolve("hf").toString());
            java.util.function.Supplier<HfHub> hub = () -> { made.incrementAndGet(); return new HfHub(env, null); };
            Path snap = dir.resolve("hf/hub/models--org--tiny/snapshots/" + LocalHub.COMMIT);

            // no id: the settings come back as they were, and no client is made
            Map<String, String> plain = new LinkedHashMap<>(Map.of("model", "tiny", "steps", "3"));
            assertEquals(plain, HfHub.resolveRunKeys(plain, CANONICAL, hub));
            assertEquals(Map.of("model", local.toString()), HfHub.resolveRunKeys(Map.of("model", local.toString()), CANONICAL, hub), "an existing file is a path");
            assertEquals(0, made.get());

            // init and tokenizer in any spelling
            Map<String, String> given = new LinkedHashMap<>();
            given.put("Init", "org/tiny");
            given.put("--tokenizer", "org/tiny");
            given.put("steps", "3");
            Map<String, String> out = HfHub.resolveRunKeys(given, CANONICAL, hub);
            assertEquals(snap.toString(), out.get("Init"));
            assertEquals(snap.toString(), out.get("--tokenizer"));
            assertEquals("3", out.get("steps"));
            assertEquals(1, made.get(), "one client for the whole run");
            assertTrue(Files.isSymbolicLink(snap.resolve("model.safetensors")) && Files.isRegularFile(snap.resolve("config.json")));

            // model = org/name is the model to fine-tune (mlx-lm's --model): it becomes init
            assertEquals(Map.of("steps", "2", "init", snap.toString()), HfHub.resolveRunKeys(new LinkedHashMap<>(Map.of("steps", "2", "model", "org/tiny")), CANONICAL, hub));
            var e = assertThrows(IllegalArgumentException.class, () -> HfHub.resolveRunKeys(Map.of("model", "org/tiny", "init", "x.bin"), CANONICAL, hub));
            assertEquals("[train] model = org/tiny names a Hugging Face model to fine-tune, and init = x.bin too; keep one of them", e.getMessage());
            // an id the hub does not have: its one line
            var missing = assertThrows(IllegalArgumentException.class, () -> HfHub.resolveRunKeys(Map.of("init", "org/absent"), CANONICAL, hub));
            assertTrue(missing.getMessage().startsWith("[hub] ") && !missing.getMessage().contains("\n"), missing.getMessage());
        }
    }
}
