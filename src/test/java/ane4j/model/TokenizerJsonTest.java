package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tokenizer.json reader against Hugging Face's tokenizers (the Rust library, through DJL's binding): the same ids
 * and the same decoded text on varied text, for a 4k-merge cut of Qwen3's tokenizer.json (tools/gen_tokenizer_json.py)
 * and, when {@code ANE4J_QWEN3_TOKENIZER_JSON} names it, Qwen3's full file.
 */
class TokenizerJsonTest {
    static final Path SMALL = Path.of("src/test/resources/tokenizer/qwen3-4k/tokenizer.json");

    static final List<String> TEXTS = List.of(
            "Hello world!",
            "Once upon a time, there was a little girl named Lily. She loved to play outside.",
            "  leading spaces, trailing spaces   ",
            "tabs\tand\nnew\n\n\nlines\r\n and \u00a0 no-break",
            "numbers 1234567890 3.14159 -42 1e10 ١٢٣",
            "I'm sure you'll see they've done it, he'd said. DON'T SHOUT'S",
            "Ünïcödé: naïve café, Straße, Ελληνικά, русский, 日本語のテキスト, 中文分词, 한국어",
            "emoji 🤗🚀👩‍👩‍👧‍👦 ❤️ 🇫🇷 and combining e\u0301 (NFC makes é)",
            "def f(x):\n    return {'a': [x**2 for x in range(10)]}  # comment\n",
            "public static void main(String[] args) { System.out.println(\"hi\"); }",
            "<|endoftext|>special <|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
            "                                                  fifty spaces",
            "!!!???...,,,;;;:::---___===+++",
            "mixed中English日本語123abc",
            "");

    @Test
    void smallQwen3MatchesHuggingFaceTokenizers() throws Exception {
        compare(SMALL);
    }

    @Test
    void gpt2LayoutMatchesHuggingFaceTokenizers(@TempDir Path d) throws Exception {
        // GPT-2's tokenizer.json: no normalizer, ByteLevel with its own regex (use_regex) and add_prefix_space as the file says
        String json = Files.readString(SMALL);
        int from = json.indexOf("\"normalizer\""), to = json.indexOf(",\"post_processor\"");
        for (boolean prefix : new boolean[]{false, true}) {
            Path f = d.resolve("gpt2-" + prefix + ".json");
            Files.writeString(f, json.substring(0, from) + "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":" + prefix
                    + ",\"trim_offsets\":true,\"use_regex\":true}" + json.substring(to));
            compare(f);
        }
    }

    @Test
    void fullQwen3MatchesHuggingFaceTokenizersWhenPresent() throws Exception {
        String full = System.getenv("ANE4J_QWEN3_TOKENIZER_JSON");
        Assumptions.assumeTrue(full != null && Files.isRegularFile(Path.of(full)), "ANE4J_QWEN3_TOKENIZER_JSON names no file");
        Tokenizer t = compare(Path.of(full));
        assertEquals(151669, t.vocabSize());
    }

    private static Tokenizer compare(Path file) throws Exception {
        Tokenizer ours = Tokenizer.read(file);
        assertTrue(ours.isTokenizerJson());
        List<String> texts = new ArrayList<>(TEXTS);
        texts.add(String.join(" ", TEXTS).repeat(20)); // longer than any default truncation
        try (HuggingFaceTokenizer hf = HuggingFaceTokenizer.newInstance(file, Map.of("addSpecialTokens", "false", "truncation", "false", "padding", "false"))) {
            for (String text : texts) {
                long[] want = hf.encode(text, false, false).getIds();
                int[] got = ours.encode(text, false, false);
                assertArrayEquals(java.util.Arrays.stream(want).mapToInt(x -> (int) x).toArray(), got, "ids of: " + text);
                assertEquals(hf.decode(want, false), ours.decode(got), "decoded: " + text);
            }
        }
        return ours;
    }

    @Test
    void qwenHasNoBosAndEndsDocumentsWithEndOfText() {
        Tokenizer t = Tokenizer.read(SMALL);
        assertEquals(4256 + 26, t.vocabSize());
        assertEquals(-1, t.bosId());
        assertEquals(4256, t.eosId());   // <|endoftext|>, the first added token
        int[] ids = t.encode("Hi", true, true);
        assertEquals(4256, ids[ids.length - 1]);
        assertEquals("Hi<|endoftext|>", t.decode(ids));
        // an id of a padded model vocabulary past the tokenizer's shows as such
        assertEquals("a<|unused 5000|>", t.decode(new int[]{t.id("a"), 5000}));
        assertArrayEquals(t.encode(" there", false, false), t.encodeContinuation(" there"));
        // a token's bytes: byte characters back to bytes (Ġ is the space)
        assertArrayEquals(" t".getBytes(StandardCharsets.UTF_8), t.decodePiece(-1, t.id(" t")));
    }

    @Test
    void badFilesAreOneLineNamingTheFix(@TempDir Path d) throws Exception {
        Path f = d.resolve("tokenizer.json");
        Files.writeString(f, "{\"model\": ");
        assertMessage(f, "[tokenizer] tokenizer.json: not JSON");
        Files.writeString(f, "{\"version\": \"1.0\"}");
        assertMessage(f, "[tokenizer] tokenizer.json: no \"model\" object; not a Hugging Face tokenizer.json");
        Files.writeString(f, "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}");
        assertMessage(f, "[tokenizer] tokenizer.json: model type Unigram is not read; ane4j reads byte-level BPE");
        Files.writeString(f, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2}, \"merges\": [\"a b\"]}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}");
        assertMessage(f, "[tokenizer] tokenizer.json: merge 0 (a b) names a token missing from the vocabulary; the file is corrupt");
        Files.writeString(f, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"Metaspace\"}}");
        assertMessage(f, "[tokenizer] tokenizer.json: pre_tokenizer Metaspace is not supported");
        Files.writeString(f, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2}, \"merges\": []}}");
        assertMessage(f, "[tokenizer] tokenizer.json: the pre_tokenizer has no ByteLevel step, so this is not a byte-level BPE");
        Files.writeString(f, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2}, \"merges\": []}, \"normalizer\": {\"type\": \"Lowercase\"}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}");
        assertMessage(f, "[tokenizer] tokenizer.json: normalizer Lowercase is not supported");
        assertMessage(d.resolve("missing.json"), "[tokenizer] " + d.resolve("missing.json") + ": no such file");
        assertFalse(Tokenizer.read(SMALL).encode("x", false, false).length == 0);
    }

    private static void assertMessage(Path f, String start) {
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> Tokenizer.read(f));
        assertTrue(e.getMessage().startsWith(start), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }
}
