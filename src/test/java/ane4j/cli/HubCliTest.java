package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.hub.LocalHub;
import ane4j.model.HfExport;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.RopeStyle;
import ane4j.model.Safetensors;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code generate --model org/name}: the id resolved through a local hub (HF_ENDPOINT) into HF_HOME's cache, in a child JVM (the environment is the client's). */
class HubCliTest {
    @TempDir Path dir;

    @Test
    void generateFromAHuggingFaceId() throws Exception {
        ModelConfig c = new ModelConfig("hubby", 32, 64, 1, 2, 1, 16, 4352, 32, 1e6f, RopeStyle.HALF, true, true, 1e-6f, 1f);
        Path folder = dir.resolve("served");
        HfExport.write(folder, Parameters.init(c, 5), Safetensors.DType.F32);
        Files.copy(Path.of("src/test/resources/tokenizer/qwen3-4k/tokenizer.json"), folder.resolve("tokenizer.json"));
        var local = ExportCommandTest.run("generate", "--model", folder.toString(), "--prompt", "Hello", "--temperature", "0", "--tokens", "5");
        assertEquals(0, local.code(), local.err());
        try (LocalHub hub = new LocalHub("org/hubby", folder)) {
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "--enable-native-access=ALL-UNNAMED",
                    "--add-modules", "jdk.incubator.vector", "-cp", System.getProperty("java.class.path"), "ane4j.cli.Main",
                    "generate", "--model", "org/hubby", "--prompt", "Hello", "--temperature", "0", "--tokens", "5"));
            ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile());
            pb.environment().put("HF_ENDPOINT", hub.endpoint());
            pb.environment().put("HF_HOME", dir.resolve("hf").toString());
            pb.environment().remove("HF_HUB_CACHE");
            pb.environment().remove("HF_HUB_OFFLINE");
            pb.environment().remove("HF_TOKEN");
            Process p = pb.start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8), err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(120, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue(), err);
            assertEquals(local.out(), out, "the same model, through the hub");
            Path snap = dir.resolve("hf/hub/models--org--hubby/snapshots/" + LocalHub.COMMIT);
            assertTrue(Files.isSymbolicLink(snap.resolve("model.safetensors")) && Files.isRegularFile(snap.resolve("tokenizer.json")), err);
        }
    }
}
