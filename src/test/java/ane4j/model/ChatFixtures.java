package ane4j.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Chat-template test fixtures: the Qwen3, Llama 3.2 and Mistral-style (v0.3, tools) templates as the models ship them
 * (src/test/resources/chat), a model folder with the 4k-merge cut of Qwen3's tokenizer.json plus the other templates'
 * special tokens as added tokens, and conversations covering system messages, multi-turn, reasoning, tools and tool calls.
 */
public final class ChatFixtures {
    private ChatFixtures() {}

    static final List<String> EXTRA_SPECIAL = List.of("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
            "<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]");

    record Model(String template, Map<String, Object> special) {}

    static final Map<String, Model> MODELS = Map.of(
            "qwen3", new Model("qwen3.jinja", Map.of("eos_token", "<|im_end|>", "pad_token", "<|endoftext|>")),
            "llama3", new Model("llama3.jinja", Map.of("bos_token", "<|begin_of_text|>", "eos_token", "<|eot_id|>")),
            "mistral", new Model("mistral.jinja", Map.of("bos_token", "<s>", "eos_token", "</s>", "unk_token", "<unk>")));

    static String template(String model) throws IOException {
        return Files.readString(Path.of("src/test/resources/chat").resolve(MODELS.get(model).template));
    }

    /** A model folder: tokenizer.json (with the extra special tokens) and tokenizer_config.json (template, special tokens). */
    @SuppressWarnings("unchecked")
    public static Path folder(Path dir, String model) throws IOException {
        Files.createDirectories(dir);
        Map<String, Object> json = (Map<String, Object>) Json.parse(Files.readString(TokenizerJsonTest.SMALL));
        List<Object> added = new ArrayList<>((List<Object>) json.get("added_tokens"));
        int id = 4282;
        for (String t : EXTRA_SPECIAL) {
            Map<String, Object> a = new LinkedHashMap<>();
            a.put("id", id++);
            a.put("content", t);
            a.put("single_word", false);
            a.put("lstrip", false);
            a.put("rstrip", false);
            a.put("normalized", false);
            a.put("special", true);
            added.add(a);
        }
        json.put("added_tokens", added);
        Files.writeString(dir.resolve("tokenizer.json"), Json.compact(json));
        Map<String, Object> cfg = new LinkedHashMap<>(MODELS.get(model).special);
        cfg.put("chat_template", template(model));
        Files.writeString(dir.resolve("tokenizer_config.json"), Json.pretty(cfg));
        return dir.resolve("tokenizer.json");
    }

    static Map<String, Object> msg(String role, Object content) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", role);
        m.put("content", content);
        return m;
    }

    static Map<String, Object> call(String id, String name, Map<String, Object> args) {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("name", name);
        f.put("arguments", args);
        Map<String, Object> c = new LinkedHashMap<>();
        if (id != null) c.put("id", id);
        c.put("type", "function");
        c.put("function", f);
        return c;
    }

    static Map<String, Object> withCalls(Map<String, Object> m, Object... calls) {
        m.put("tool_calls", List.of(calls));
        return m;
    }

    static final Map<String, Object> WEATHER_TOOL = Map.of("type", "function", "function", new LinkedHashMap<>(Map.of(
            "name", "get_weather",
            "description", "Get the current weather in a city",
            "parameters", Map.of("type", "object", "properties", Map.of("city", Map.of("type", "string", "description", "the city")), "required", List.of("city")))));

    /** A named case: the messages and the rest of the context. */
    record Case(String name, List<Map<String, Object>> messages, Map<String, Object> extra, boolean addGenerationPrompt) {}

    static List<Case> cases(String model) {
        List<Case> c = new ArrayList<>();
        Map<String, Object> date = Map.of("date_string", "06 Dec 2026");
        c.add(new Case("one turn", List.of(msg("user", "What is 7 plus 5?"), msg("assistant", "7 plus 5 is 12.")), date, false));
        c.add(new Case("system and two turns", List.of(msg("system", "You are terse.  "), msg("user", "Hi!"), msg("assistant", "Hello."),
                msg("user", "Ünïcödé: 日本語, emoji 🤗, \"quotes\" and\nnew lines"), msg("assistant", "Noted.  ")), date, false));
        c.add(new Case("generation prompt", List.of(msg("system", "Be brief."), msg("user", "Name a colour.")), date, true));
        if (model.equals("qwen3")) {
            c.add(new Case("reasoning in content", List.of(msg("user", "2+2?"), msg("assistant", "<think>\nadd them\n</think>\n\n4"),
                    msg("user", "and 3+3?"), msg("assistant", "<think>\nagain\n</think>\n\n6")), date, false));
            c.add(new Case("thinking off", List.of(msg("user", "Hi")), Map.of("enable_thinking", false), true));
            Map<String, Object> tools = Map.of("tools", List.of(WEATHER_TOOL));
            c.add(new Case("tools and tool calls", List.of(msg("system", "Use tools."), msg("user", "Weather in Paris and Rome?"),
                    withCalls(msg("assistant", ""), call(null, "get_weather", Map.of("city", "Paris")), call(null, "get_weather", Map.of("city", "Rome"))),
                    msg("tool", "{\"temp\": 21}"), msg("tool", "{\"temp\": 25}"), msg("assistant", "Paris 21, Rome 25.")), tools, false));
        }
        if (model.equals("llama3")) {
            Map<String, Object> tools = new LinkedHashMap<>(date);
            tools.put("tools", List.of(WEATHER_TOOL));
            c.add(new Case("tools in the user message", List.of(msg("user", "Weather in Paris?"),
                    withCalls(msg("assistant", null), call(null, "get_weather", Map.of("city", "Paris"))),
                    msg("tool", Map.of("temp", 21)), msg("assistant", "It is 21 degrees.")), tools, false));
            Map<String, Object> sys = new LinkedHashMap<>(tools);
            sys.put("tools_in_user_message", false);
            c.add(new Case("tools in the system message", List.of(msg("system", "Be helpful."), msg("user", "Weather in Rome?"),
                    withCalls(msg("assistant", null), call(null, "get_weather", Map.of("city", "Rome"))),
                    msg("ipython", "25 degrees"), msg("assistant", "25.")), sys, false));
            c.add(new Case("two tool calls at once (refused)", List.of(msg("user", "x"),
                    withCalls(msg("assistant", null), call(null, "a", Map.of()), call(null, "b", Map.of()))), tools, false));
        }
        if (model.equals("mistral")) {
            Map<String, Object> tools = Map.of("tools", List.of(WEATHER_TOOL));
            c.add(new Case("tools and tool calls", List.of(msg("user", "Weather in Oslo?"),
                    withCalls(msg("assistant", null), call("abc123XYZ", "get_weather", Map.of("city", "Oslo"))),
                    new LinkedHashMap<>(Map.of("role", "tool", "content", "-3 degrees", "tool_call_id", "abc123XYZ")), msg("assistant", "It is -3.")), tools, false));
            c.add(new Case("roles not alternating (refused)", List.of(msg("user", "a"), msg("user", "b")), Map.of(), false));
        }
        return c;
    }
}
