package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.ChatFixtures;
import ane4j.model.HfExport;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.RopeStyle;
import ane4j.model.Safetensors;
import ane4j.model.Tokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A chat fine-tune through the CLI: a Hugging Face folder with a chat template, {"messages"} data, the export carrying
 * tokenizer_config.json with the same template, and {@code generate --chat} answering with the rendered prompt.
 */
class ChatCliTest {
    @TempDir Path dir;

    @Test
    void chatFineTuneExportAndGenerate() throws Exception {
        Path tok = ChatFixtures.folder(dir.resolve("tok"), "qwen3");
        ModelConfig c = new ModelConfig("chat-tiny", 32, 64, 1, 2, 1, 16, 4352, 32, 1e6f, RopeStyle.HALF, true, true, 1e-6f, 1f);
        Path base = dir.resolve("base");
        HfExport.write(base, Parameters.init(c, 9), Safetensors.DType.F32);
        for (String f : List.of("tokenizer.json", "tokenizer_config.json")) Files.copy(tok.resolveSibling(f), base.resolve(f));
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < 30; i++)
            lines.append("{\"messages\": [{\"role\": \"system\", \"content\": \"Add.\"}, {\"role\": \"user\", \"content\": \"").append(i).append(" plus 1?\"}, ")
                    .append("{\"role\": \"assistant\", \"content\": \"").append(i + 1).append("\"}]}\n");
        Path data = Files.writeString(dir.resolve("chat.jsonl"), lines);
        Path run = dir.resolve("run");
        var t = ExportCommandTest.run("train", "--init", base.toString(), "--data", data.toString(), "--steps", "3", "--storage", "fp32",
                "--eval-every", "0", "--run-dir", run.toString(), "--in-process");
        assertEquals(0, t.code(), t.err() + t.out());
        Path export = run.resolve("export/hf");
        assertTrue(t.out().contains("tokenizer_config.json (chat template)"), t.out());
        // the export carries the template: read back, it is the model's own
        Tokenizer exported = Tokenizer.read(export.resolve("tokenizer.json"));
        assertEquals(Files.readString(Path.of("src/test/resources/chat/qwen3.jinja")), exported.chatTemplate().source());
        assertEquals(Map.of("eos_token", "<|im_end|>", "pad_token", "<|endoftext|>"), exported.chatTemplate().specialTokens());

        // generate --chat: the answer to the rendered prompt, which a plain generate of the same text continues alike
        var chat = ExportCommandTest.run("generate", "--model", export.toString(), "--chat", "--prompt", "4 plus 1?", "--temperature", "0", "--tokens", "6");
        assertEquals(0, chat.code(), chat.err());
        String rendered = "<|im_start|>user\n4 plus 1?<|im_end|>\n<|im_start|>assistant\n";
        var plain = ExportCommandTest.run("generate", "--model", export.toString(), "--prompt", rendered, "--temperature", "0", "--tokens", "6");
        assertEquals(0, plain.code(), plain.err());
        assertTrue(plain.out().startsWith(rendered), plain.out());
        String answer = chat.out().stripTrailing();
        assertTrue(plain.out().substring(rendered.length()).startsWith(answer), "chat: [" + answer + "] plain: [" + plain.out() + "]");
        // a model without a template: one line
        Path noTemplate = dir.resolve("plain");
        HfExport.write(noTemplate, Parameters.init(c, 9), Safetensors.DType.F32);
        Files.copy(tok, noTemplate.resolve("tokenizer.json"));
        var e = ExportCommandTest.run("generate", "--model", noTemplate.toString(), "--chat", "--prompt", "hi");
        assertTrue(e.code() != 0 && e.err().contains("[chat] --chat needs the model's chat template") && e.err().strip().lines().count() == 1, e.err());
    }
}
