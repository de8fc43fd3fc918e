package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EmbeddedCorpusTest {
    @TempDir Path tmp;

    @Test
    void theKeptTrainingStreamIsTheDrawnOneAndCallersCannotChangeIt() {
        int[] first = EmbeddedCorpus.train(7, 3000);
        int[] again = EmbeddedCorpus.train(7, 3000);
        assertArrayEquals(first, again);
        java.util.Arrays.fill(again, 0);
        assertArrayEquals(first, EmbeddedCorpus.train(7, 3000), "the kept stream is handed out as a copy");
        assertFalse(java.util.Arrays.equals(first, EmbeddedCorpus.train(8, 3000)), "another seed draws its own");
        assertArrayEquals(first, EmbeddedCorpus.train(7, 3000), "and drawing seed 7 again gives the same tokens");
    }

    @Test
    void storiesAreDeterministicVariedAndLookLikeStories() {
        List<String> a = EmbeddedCorpus.stories(3, 400), b = EmbeddedCorpus.stories(3, 400);
        assertEquals(a, b);
        assertNotEquals(a, EmbeddedCorpus.stories(4, 400));
        assertTrue(new HashSet<>(a).size() > 390, "stories should rarely repeat");
        long chars = a.stream().mapToLong(String::length).sum();
        assertTrue(chars > 100_000, "400 stories are " + chars + " chars");
        for (String s : a) {
            assertTrue(Character.isUpperCase(s.charAt(0)) && (s.endsWith(".") || s.endsWith("\"") || s.endsWith("!")), s);
            assertFalse(s.contains("  ") || s.contains(" a a") || s.contains(" a o") || s.contains(" a e"), s);
        }
    }

    @Test
    void tokenizerIsFittedAndRoundTrips() {
        Tokenizer t = EmbeddedCorpus.tokenizer();
        assertEquals(ModelConfig.TINY_VOCAB, t.vocabSize());
        assertEquals("<s>", t.piece(Tokenizer.BOS));
        assertEquals("<0x41>", t.piece(3 + 0x41));
        for (String s : EmbeddedCorpus.stories(11, 50)) assertEquals(s, t.decode(t.encode(s, true, false)));
        int[] tokens = EmbeddedCorpus.tokens(11, 20_000);
        assertEquals(0.0, EmbeddedCorpus.byteFallbackRate(tokens), "the corpus needs no byte fallback");
        String text = String.join("", EmbeddedCorpus.stories(11, 50));
        int n = t.encode(text, false, false).length;
        assertTrue(text.length() / (double) n > 2.5, "BPE should compress: " + text.length() / (double) n + " chars/token");
        // unseen text still round-trips through byte fallback
        assertEquals("Zürich 🙂 {x}", t.decode(t.encode("Zürich 🙂 {x}", true, false)));
    }

    @Test
    void tokenStreamsAndSplits() {
        int[] all = EmbeddedCorpus.tokens(5, 10_000);
        assertArrayEquals(all, EmbeddedCorpus.tokens(5, 10_000));
        assertEquals(Tokenizer.BOS, all[0]);
        int[] train = EmbeddedCorpus.train(5, 10_000), val = EmbeddedCorpus.validation(5, 2_000);
        assertEquals(10_000, train.length);
        assertEquals(2_000, val.length);
        // the first story (index 0) is training data, story 9 is the first validation story
        List<String> stories = EmbeddedCorpus.stories(5, 10);
        int[] first = EmbeddedCorpus.tokenizer().encode(stories.get(0), true, false);
        assertArrayEquals(first, java.util.Arrays.copyOf(train, first.length));
        int[] ninth = EmbeddedCorpus.tokenizer().encode(stories.get(9), true, false);
        assertArrayEquals(ninth, java.util.Arrays.copyOf(val, ninth.length));
        for (int t : all) assertTrue(t >= 0 && t < ModelConfig.TINY_VOCAB);
        try (TokenShard s = TokenShard.of(train, ModelConfig.TINY_VOCAB, 64)) {
            assertEquals(10_000, s.size());
        }
    }

    @Test
    void generationIsFastEnough() {
        long t0 = System.nanoTime();
        List<String> s = EmbeddedCorpus.stories(99, 1000);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(s.stream().mapToLong(String::length).sum() > 250_000);
        assertTrue(ms < 5000, "1000 stories took " + ms + " ms");
    }
}
