package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokenizerTest {
    @TempDir Path tmp;

    /** Llama layout: specials, 256 byte tokens, then pieces with scores. */
    static Tokenizer handMade() {
        List<byte[]> pieces = new ArrayList<>();
        List<Float> scores = new ArrayList<>();
        for (String s : new String[]{"<unk>", "<s>", "</s>"}) { pieces.add(s.getBytes(StandardCharsets.UTF_8)); scores.add(0f); }
        for (int b = 0; b < 256; b++) { pieces.add(String.format("<0x%02X>", b).getBytes(StandardCharsets.UTF_8)); scores.add(0f); }
        Object[][] extra = {{" ", 0f}, {"h", 0f}, {"e", 0f}, {"l", 0f}, {"o", 0f}, {"é", 0f}, {"he", 1f}, {"ll", 3f}, {"lo", 2f},
            {"llo", 4f}, {"hello", 5f}, {" hello", 6f}, {" ll", -2e10f}};
        for (Object[] e : extra) { pieces.add(((String) e[0]).getBytes(StandardCharsets.UTF_8)); scores.add((Float) e[1]); }
        float[] s = new float[scores.size()];
        for (int i = 0; i < s.length; i++) s[i] = scores.get(i);
        return new Tokenizer(pieces, s);
    }

    @Test
    void mergesByScoreLikeRunC() {
        Tokenizer t = handMade();
        assertArrayEquals(new int[]{Tokenizer.BOS, t.id(" hello")}, t.encode("hello", true, false));
        // ties merge the leftmost pair first: " lll" → " ", "ll", "l" (the " ll" piece scores below run.c's -1e10 floor)
        assertArrayEquals(new int[]{t.id(" "), t.id("ll"), t.id("l")}, t.encode("lll", false, false));
        assertArrayEquals(new int[]{Tokenizer.BOS, t.id(" hello"), Tokenizer.EOS}, t.encode("hello", true, true));
        assertArrayEquals(new int[]{Tokenizer.BOS}, t.encode("", true, false), "no dummy prefix for empty text");
    }

    @Test
    void unicodeAndByteFallback() {
        Tokenizer t = handMade();
        String s = "hé🙂\n";
        int[] ids = t.encode(s, true, false);
        // " ", "h", "é" are pieces; 🙂 (F0 9F 99 82) and \n fall back to <0xXX> = byte + 3
        assertArrayEquals(new int[]{1, t.id(" "), t.id("h"), t.id("é"), 0xF0 + 3, 0x9F + 3, 0x99 + 3, 0x82 + 3, '\n' + 3}, ids);
        assertEquals(s, t.decode(ids), "BOS strips the dummy prefix space; byte tokens decode to bytes");
        assertEquals(" hello", t.decode(t.encode("hello", false, false)), "without BOS the leading space stays");
        assertArrayEquals(new byte[]{(byte) 0xF0}, t.decodePiece(5, 0xF0 + 3));
    }

    @Test
    void tokenizerBinRoundTripAndErrors() throws IOException {
        Tokenizer t = handMade();
        Path f = tmp.resolve("tokenizer.bin");
        t.write(f);
        Tokenizer back = Tokenizer.read(f);
        assertEquals(t.vocabSize(), back.vocabSize());
        assertEquals(t.maxTokenLength(), back.maxTokenLength());
        for (int i = 0; i < t.vocabSize(); i++) {
            assertArrayEquals(t.pieceBytes(i), back.pieceBytes(i));
            assertEquals(t.score(i), back.score(i));
        }
        assertEquals(back.vocabSize(), Tokenizer.read(f, t.vocabSize()).vocabSize());
        var e = assertThrows(ModelFormatException.class, () -> Tokenizer.read(f, 32000));
        assertTrue(e.getMessage().contains("has " + t.vocabSize() + " tokens but the model's vocabSize is 32000"), e.getMessage());

        byte[] all = Files.readAllBytes(f);
        Path cut = Files.write(tmp.resolve("cut.bin"), Arrays.copyOf(all, all.length - 3));
        e = assertThrows(ModelFormatException.class, () -> Tokenizer.read(cut));
        assertTrue(e.getMessage().startsWith("[tokenizer] cut.bin: token ") && e.getMessage().contains("truncated"), e.getMessage());
        Path junk = Files.writeString(tmp.resolve("junk.bin"), "\u0000\u0000\u0000\u0080 not a tokenizer");
        e = assertThrows(ModelFormatException.class, () -> Tokenizer.read(junk));
        assertTrue(e.getMessage().startsWith("[tokenizer] junk.bin: max_token_length"), e.getMessage());
    }

    /** run.c's encode() merge loop, quadratic, as the reference for the priority-queue version. */
    static int[] runCEncode(Tokenizer t, String text, boolean bos) {
        Map<String, Integer> ids = new HashMap<>();
        for (int i = 0; i < t.vocabSize(); i++) ids.putIfAbsent(new String(t.pieceBytes(i), StandardCharsets.ISO_8859_1), i);
        List<Integer> tok = new ArrayList<>();
        if (bos) tok.add(1);
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        if (b.length > 0) tok.add(ids.get(" "));
        StringBuilder buf = new StringBuilder();
        for (int i = 0; i < b.length; i++) {
            if ((b[i] & 0xC0) != 0x80) buf.setLength(0);
            buf.append((char) (b[i] & 0xFF));
            if (i + 1 < b.length && (b[i + 1] & 0xC0) == 0x80 && buf.length() < 4) continue;
            Integer id = ids.get(buf.toString());
            if (id != null) tok.add(id);
            else for (char c : buf.toString().toCharArray()) tok.add(c + 3);
            buf.setLength(0);
        }
        while (true) {
            float best = -1e10f;
            int bestId = -1, bestIdx = -1;
            for (int i = 0; i + 1 < tok.size(); i++) {
                Integer id = ids.get(new String(t.pieceBytes(tok.get(i)), StandardCharsets.ISO_8859_1) + new String(t.pieceBytes(tok.get(i + 1)), StandardCharsets.ISO_8859_1));
                if (id != null && t.score(id) > best) { best = t.score(id); bestId = id; bestIdx = i; }
            }
            if (bestIdx < 0) break;
            tok.set(bestIdx, bestId);
            tok.remove(bestIdx + 1);
        }
        return tok.stream().mapToInt(Integer::intValue).toArray();
    }

    @Test
    void priorityQueueEncodeEqualsRunCOnManyStrings() {
        Tokenizer t = EmbeddedCorpus.tokenizer();
        Rng r = new Rng(9);
        List<String> samples = new ArrayList<>(EmbeddedCorpus.stories(77, 20));
        String alphabet = "aeilnorst lh.,!\"'é🙂\n";
        for (int i = 0; i < 50; i++) {
            StringBuilder b = new StringBuilder();
            int n = 1 + r.nextInt(40);
            for (int k = 0; k < n; ) {
                int cp = alphabet.codePointAt(r.nextInt(alphabet.length()));
                if (Character.isLowSurrogate((char) cp)) continue;
                b.appendCodePoint(cp);
                k++;
            }
            samples.add(b.toString());
        }
        for (String s : samples) {
            assertArrayEquals(runCEncode(t, s, true), t.encode(s, true, false), s);
            assertEquals(s, t.decode(t.encode(s, true, false)));
        }
    }
}
