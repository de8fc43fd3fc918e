package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ane4j's chat rendering against an independent renderer: {@code @huggingface/jinja} from npm (the Jinja of
 * transformers.js's apply_chat_template, tools/hf-js/render-chat.mjs) renders the same templates with the same context.
 * For the Qwen3, Llama 3.2 and Mistral-style templates and every case of {@link ChatFixtures} (system messages,
 * multi-turn, reasoning, tools, tool calls, tool results, generation prompts, and the templates' own refusals): the same
 * text, or both refuse with the template's message; and the token ids ane4j makes of its text equal the ids Hugging
 * Face's tokenizers library (DJL) makes of the npm renderer's text.
 */
class ChatTemplateNpmTest {
    @TempDir Path tmp;

    @Test
    void qwen3() throws Exception { compare("qwen3"); }

    @Test
    void llama3() throws Exception { compare("llama3"); }

    @Test
    void mistralStyle() throws Exception { compare("mistral"); }

    @SuppressWarnings("unchecked")
    private void compare(String model) throws Exception {
        HfJs.assumeInstalled("@huggingface/jinja");
        Path tokFile = ChatFixtures.folder(tmp.resolve(model), model);
        Tokenizer tok = Tokenizer.read(tokFile);
        ChatTemplate t = tok.chatTemplate();
        assertNotNull(t, "tokenizer_config.json's chat_template is read with the tokenizer");
        List<ChatFixtures.Case> cases = ChatFixtures.cases(model);
        List<Object> contexts = new ArrayList<>();
        for (ChatFixtures.Case c : cases) {
            Map<String, Object> ctx = new LinkedHashMap<>(ChatFixtures.MODELS.get(model).special());
            ctx.put("messages", c.messages());
            ctx.put("add_generation_prompt", c.addGenerationPrompt());
            ctx.putAll(c.extra());
            contexts.add(ctx);
        }
        String out = HfJs.run("render-chat.mjs", Json.compact(Map.of("template", ChatFixtures.template(model), "contexts", contexts)));
        List<Object> theirs = (List<Object>) Json.parse(out);
        int compared = 0, refused = 0;
        try (HuggingFaceTokenizer hf = HuggingFaceTokenizer.newInstance(tokFile, Map.of("addSpecialTokens", "false", "truncation", "false", "padding", "false"))) {
            for (int i = 0; i < cases.size(); i++) {
                ChatFixtures.Case c = cases.get(i);
                Map<String, Object> r = (Map<String, Object>) theirs.get(i);
                String what = model + " / " + c.name();
                if (r.containsKey("error")) {
                    ModelFormatException e = org.junit.jupiter.api.Assertions.assertThrows(ModelFormatException.class,
                            () -> t.render(c.messages(), c.addGenerationPrompt(), c.extra()), what + ": npm refused with " + r.get("error"));
                    assertTrue(e.getMessage().contains("refused the messages: " + r.get("error")), what + ": " + e.getMessage() + " vs " + r.get("error"));
                    assertTrue(!e.getMessage().contains("\n"), e.getMessage());
                    refused++;
                    continue;
                }
                String ours = t.render(c.messages(), c.addGenerationPrompt(), c.extra());
                assertEquals(r.get("text"), ours, what + ": rendered text");
                int[] want = java.util.Arrays.stream(hf.encode((String) r.get("text"), false, false).getIds()).mapToInt(x -> (int) x).toArray();
                assertArrayEquals(want, tok.encode(ours, false, false), what + ": token ids");
                compared++;
            }
        }
        assertTrue(compared >= 4, "cases rendered by both: " + compared);
        if (!model.equals("qwen3")) assertEquals(1, refused, "the refusal case");
    }
}
