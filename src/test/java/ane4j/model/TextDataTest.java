package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Plain text and JSON lines tokenized on the fly: documents, the prompt/completion loss mask, the held-out split. */
class TextDataTest {
    @TempDir Path dir;
    static final Tokenizer LLAMA = TokenizerTest.handMade();
    static final Tokenizer QWEN = Tokenizer.read(TokenizerJsonTest.SMALL);

    private static int[] concat(int[]... parts) { return Arrays.stream(parts).flatMapToInt(Arrays::stream).toArray(); }

    private static int[] all(TokenData d) {
        int[] t = new int[(int) d.size()];
        d.read(0, t, 0, t.length);
        return t;
    }

    private static byte[] mask(TokenData d) {
        byte[] m = new byte[(int) d.size()];
        d.readMask(0, m, 0, m.length);
        return m;
    }

    @Test
    void textLinesAreDocumentsWithBosAndEos() throws Exception {
        Path f = dir.resolve("train.jsonl");
        Files.writeString(f, "{\"text\": \"hello\"}\n\n{\"text\": \"hello hello\", \"meta\": 3}\n");
        try (TokenData d = TokenData.open(f, LLAMA, LLAMA.vocabSize(), 4)) {
            int[] want = concat(LLAMA.encode("hello", true, true), LLAMA.encode("hello hello", true, true));
            assertArrayEquals(want, all(d));
            assertFalse(d.masked());
            assertTrue(IntStream.range(0, want.length).allMatch(i -> mask(d)[i] == 1));
            assertEquals(2, ((TextData) d).documents());
        }
    }

    @Test
    void promptCompletionCountsOnlyTheCompletionAndItsEos() throws Exception {
        Path f = dir.resolve("chat.jsonl");
        Files.writeString(f, "{\"prompt\": \"Q: 2+2?\", \"completion\": \" A: 4\"}\n{\"prompt\": \"Hi\", \"completion\": \" there\"}\n");
        try (TokenData d = TokenData.open(f, QWEN, 151936, 4)) {   // a padded model vocabulary, as Qwen3's 151936
            int[] p1 = QWEN.encode("Q: 2+2?", true, false), c1 = QWEN.encodeContinuation(" A: 4");
            int[] p2 = QWEN.encode("Hi", true, false), c2 = QWEN.encodeContinuation(" there");
            int eos = QWEN.eosId();
            assertArrayEquals(concat(p1, c1, new int[]{eos}, p2, c2, new int[]{eos}), all(d));
            assertTrue(d.masked());
            byte[] want = new byte[(int) d.size()];
            int at = p1.length;
            for (int i = 0; i <= c1.length; i++) want[at + i] = 1;
            at += c1.length + 1 + p2.length;
            for (int i = 0; i <= c2.length; i++) want[at + i] = 1;
            assertArrayEquals(want, mask(d));
            // a window's mask, as the trainer reads it for the targets
            byte[] w = new byte[3];
            d.readMask(p1.length - 1, w, 0, 3);
            assertArrayEquals(new byte[]{0, 1, 1}, w);
        }
    }

    @Test
    void textFilesSplitAtEndOfTextLines() throws Exception {
        Path f = dir.resolve("stories.txt");
        Files.writeString(f, "hello\n<|endoftext|>\nhello hello\n");
        try (TokenData d = TokenData.open(f, LLAMA, LLAMA.vocabSize(), 4)) {
            assertArrayEquals(concat(LLAMA.encode("hello\n", true, true), LLAMA.encode("hello hello\n", true, true)), all(d));
            assertEquals(2, ((TextData) d).documents());
        }
    }

    @Test
    void heldOutTailStartsAtADocument() throws Exception {
        Path f = dir.resolve("many.jsonl");
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 20; i++) sb.append("{\"text\": \"hello hello hello\"}\n");
        Files.writeString(f, sb);
        try (TokenData d = TokenData.open(f, LLAMA, LLAMA.vocabSize(), 4)) {
            int doc = LLAMA.encode("hello hello hello", true, true).length;
            TokenData.Split s = d.split(0.1, 5);
            assertEquals(18L * doc, s.train().size());
            assertEquals(2L * doc, s.validation().size());
            assertEquals(2, ((TextData) s.validation()).documents());
            assertEquals(Tokenizer.BOS, all(s.validation())[0]);
            assertNull(d.split(0, 5).validation());
            ModelFormatException e = assertThrows(ModelFormatException.class, () -> d.split(0.1, 20L * doc));
            assertTrue(e.getMessage().startsWith("[data] many.jsonl: "), e.getMessage());
        }
    }

    @Test
    void tokenFilesSplitTheirTail() {
        int[] toks = IntStream.range(0, 100).map(i -> i % 7).toArray();
        try (TokenData d = TokenData.of(TokenShard.of(toks, 16, 8))) {
            TokenData.Split s = d.split(0.25, 9);
            assertEquals(75, s.train().size());
            int[] v = all(s.validation());
            assertArrayEquals(Arrays.copyOfRange(toks, 75, 100), v);
            assertFalse(s.validation().masked());
            d.close();   // closing twice is harmless (the run layer closes the training, then the run)
        }
    }

    @Test
    void badTextDataIsOneLineNamingTheFix() throws Exception {
        Path f = dir.resolve("bad.jsonl");
        Files.writeString(f, "{\"text\": \"hello\"}\n{\"txt\": \"oops\"}\n");
        assertMessage(f, LLAMA, "[data] bad.jsonl line 2: no string \"text\", nor \"prompt\" and \"completion\" (keys: txt)");
        Files.writeString(f, "{\"text\": \"hello\"\n");
        assertMessage(f, LLAMA, "[data] bad.jsonl line 1: not JSON");
        Files.writeString(f, "[1, 2]\n");
        assertMessage(f, LLAMA, "[data] bad.jsonl line 1: not a JSON object");
        Files.writeString(f, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n");
        assertMessage(f, LLAMA, "[data] bad.jsonl line 1: chat messages need the model's chat template, and this tokenizer has none");
        Files.writeString(f, "{\"text\": \"hi\"}\n");
        assertMessage(f, LLAMA, "[data] bad.jsonl: 5 tokens, need at least seqLen+1 = 65 for one training window; give more text");
        Path latin1 = dir.resolve("latin1.txt");
        Files.write(latin1, new byte[]{'c', 'a', 'f', (byte) 0xE9, '\n'});
        assertMessage(latin1, LLAMA, "[data] latin1.txt: not UTF-8 text");
        assertMessage(dir.resolve("none.txt"), LLAMA, "[data] " + dir.resolve("none.txt") + ": no such file");
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> TokenData.open(dir.resolve("x.txt"), null, 300, 64));
        assertTrue(e.getMessage().startsWith("[data] x.txt is text, tokenized as it is read: give --tokenizer FILE"), e.getMessage());
        e = assertThrows(ModelFormatException.class, () -> TokenData.open(latin1, QWEN, 512, 4));
        assertTrue(e.getMessage().startsWith("[data] latin1.txt: the tokenizer has 4282 tokens but the model's vocabSize is 512"), e.getMessage());
    }

    private static void assertMessage(Path f, Tokenizer t, String start) {
        ModelFormatException e = assertThrows(ModelFormatException.class, () -> TokenData.open(f, t, t.vocabSize(), 64));
        assertTrue(e.getMessage().startsWith(start), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }
}
