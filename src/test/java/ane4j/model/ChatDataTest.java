package ane4j.model;

import static ane4j.model.ChatFixtures.msg;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Chat data: which tokens carry the loss, data files of {"messages"} lines, Python's semantics where engines differ, and errors. */
class ChatDataTest {
    @TempDir Path tmp;

    // the text of the masked tokens, one string per run of consecutive masked tokens
    static List<String> maskedRuns(Tokenizer tok, ChatData.Encoded e) {
        List<String> runs = new ArrayList<>();
        int start = -1;
        for (int k = 0; k <= e.tokens().length; k++) {
            boolean in = k < e.tokens().length && e.mask()[k] == 1;
            if (in && start < 0) start = k;
            if (!in && start >= 0) {
                runs.add(tok.decode(java.util.Arrays.copyOfRange(e.tokens(), start, k)));
                start = -1;
            }
        }
        return runs;
    }

    private Tokenizer tok(String model) throws Exception { return Tokenizer.read(ChatFixtures.folder(tmp.resolve(model), model)); }

    @Test
    void theLossIsOnTheAssistantTurnsAndTheirEndOfTurnToken() throws Exception {
        var twoTurns = List.of(msg("system", "Be terse."), msg("user", "Hi!"), msg("assistant", "Hello."), msg("user", "Bye?"), msg("assistant", "Bye."));
        Tokenizer llama = tok("llama3");
        ChatData.Encoded e = ChatData.encode(llama, twoTurns, "");
        assertEquals(List.of("Hello.<|eot_id|>", "Bye.<|eot_id|>"), maskedRuns(llama, e));
        assertEquals(0, e.unmasked());
        assertArrayEquals(llama.encode(e.text(), false, false), e.tokens(), "the whole text tokenized at once");
        assertTrue(e.text().startsWith("<|begin_of_text|>") && e.tokens()[0] == llama.id("<|begin_of_text|>"), "BOS as the template writes it, once");
        // Mistral's v0.3 template puts the system message into the last user turn: with one, only the last turn is masked
        Tokenizer mistral = tok("mistral");
        assertEquals(List.of(" Hello.</s>", " Bye.</s>"), maskedRuns(mistral, ChatData.encode(mistral, twoTurns.subList(1, 5), "")));
        ChatData.Encoded m = ChatData.encode(mistral, twoTurns, "");
        assertEquals(List.of(" Hello.</s>", " Bye.</s>"), maskedRuns(mistral, m));
        assertEquals(0, m.unmasked());
        // Qwen3 writes an empty think block into the last turn only: the earlier turn (found by its content) carries its
        // answer and <|im_end|>; the last its think block, answer, <|im_end|> and newline
        Tokenizer qwen = tok("qwen3");
        ChatData.Encoded q = ChatData.encode(qwen, twoTurns, "");
        assertEquals(List.of("Hello.<|im_end|>", "<think>\n\n</think>\n\nBye.<|im_end|>\n"), maskedRuns(qwen, q));
        assertEquals(0, q.unmasked());
        ChatData.Encoded one = ChatData.encode(qwen, List.of(msg("user", "2+2?"), msg("assistant", "<think>\nadd\n</think>\n\n4")), "");
        assertEquals(List.of("<think>\nadd\n</think>\n\n4<|im_end|>\n"), maskedRuns(qwen, one));
    }

    @Test
    void dataFilesOfMessagesAndOfPromptsWithAChatModel() throws Exception {
        Tokenizer qwen = tok("qwen3");
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < 40; i++) {
            lines.append("{\"messages\": [{\"role\": \"user\", \"content\": \"What is ").append(i).append(" plus 1?\"}, {\"role\": \"assistant\", \"content\": \"")
                    .append(i + 1).append(".\"}]}\n");
            lines.append("{\"prompt\": \"Say ").append(i).append("\", \"completion\": \"").append(i).append("\"}\n");
        }
        Path data = Files.writeString(tmp.resolve("chat.jsonl"), lines);
        TextData d = TextData.open(data, qwen, 4352, 16);
        assertTrue(d.masked());
        assertEquals(80, d.documents());
        ChatData.Encoded first = ChatData.encode(qwen, List.of(msg("user", "What is 0 plus 1?"), msg("assistant", "1.")), "");
        ChatData.Encoded second = ChatData.encode(qwen, List.of(msg("user", "Say 0"), msg("assistant", "0")), "");
        int n = first.tokens().length + second.tokens().length;
        int[] tokens = new int[n];
        byte[] mask = new byte[n];
        d.read(0, tokens, 0, n);
        d.readMask(0, mask, 0, n);
        int[] want = java.util.stream.IntStream.concat(java.util.Arrays.stream(first.tokens()), java.util.Arrays.stream(second.tokens())).toArray();
        assertArrayEquals(want, tokens, "each line is its rendered conversation, nothing added between");
        assertEquals(List.of("<think>\n\n</think>\n\n1.<|im_end|>\n"), maskedRuns(qwen, first));
        for (int k = 0; k < first.tokens().length; k++) assertEquals(first.mask()[k], mask[k]);
        for (int k = 0; k < second.tokens().length; k++) assertEquals(second.mask()[k], mask[first.tokens().length + k]);
        // a tokenizer without a template: {"messages"} is one line naming the fix
        Path bad = Files.writeString(tmp.resolve("m.jsonl"), "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n");
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> TextData.open(bad, Tokenizer.read(TokenizerJsonTest.SMALL), 4352, 1));
        assertTrue(e.getMessage().startsWith("[data] m.jsonl line 1: chat messages need the model's chat template"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
    }

    @Test
    void pythonsStringSemanticsWhereEnginesDiffer() {
        ChatTemplate t = new ChatTemplate("[{{ x.lstrip('\\n') }}][{{ x.strip() }}][{{ 'a,b,,c'.split(',') }}][{{ 'hELLO wORLD'.capitalize() }}]"
                + "[{{ 'hello world'.title() }}][{{ d|tojson }}][{{ d|tojson(indent=2) }}][{{ x.startswith(('a', ' ')) }}]", Map.of(), "test");
        Map<String, Object> d = new java.util.LinkedHashMap<>();
        d.put("f", 1e-5);
        d.put("g", List.of(1.5, 100.0, 1e16));
        d.put("s", "é\"\n");
        String out = t.render(List.of(), false, Map.of("x", "  a\n", "d", d));
        // Python: lstrip('\n') keeps spaces (@huggingface/jinja 0.5.13 strips them: it ignores the argument)
        assertEquals("[  a\n][a][['a', 'b', '', 'c']][Hello world][Hello World][{\"f\": 1e-05, \"g\": [1.5, 100.0, 1e+16], \"s\": \"é\\\"\\n\"}]"
                + "[{\n  \"f\": 1e-05,\n  \"g\": [\n    1.5,\n    100.0,\n    1e+16\n  ],\n  \"s\": \"é\\\"\\n\"\n}][true]", out);
        // (a boolean prints as Jinjava prints it, "true"; Python would print "True": no chat template here prints one)
    }

    @Test
    void whatTheEngineCannotRenderIsOneLineNamingIt() {
        ChatTemplate t = new ChatTemplate("{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}", Map.of(), "tpl");
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> t.render(List.of(msg("user", "hi")), false, null));
        assertTrue(e.getMessage().startsWith("[chat] the chat template of tpl uses something ane4j's Jinja engine cannot render (line 1: "), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
        ChatTemplate raising = new ChatTemplate("{{ raise_exception('no system role') }}", Map.of(), "tpl");
        ModelFormatException r = assertThrows(ModelFormatException.class, () -> raising.render(List.of(), false, null));
        assertEquals("[chat] the chat template of tpl refused the messages: no system role", r.getMessage());
    }
}
