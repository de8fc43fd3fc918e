package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class GeneratorTest {
    @Test
    void argmaxAndSeededSamplingAreDeterministic() {
        ModelConfig c = ModelConfig.parse("tiny");
        Parameters p = Parameters.init(c, 1);
        Generator g = new Generator(p, EmbeddedCorpus.tokenizer());
        String a = g.generate("Once upon a time", 20, 0f, 0.9f, 1);
        assertEquals(a, new Generator(p, EmbeddedCorpus.tokenizer()).generate("Once upon a time", 20, 0f, 0.9f, 2), "temperature 0 ignores the seed");
        assertTrue(a.startsWith("Once upon a time"), a);
        String s1 = g.generate("Lily", 30, 1f, 0.9f, 7), s2 = g.generate("Lily", 30, 1f, 0.9f, 7);
        assertEquals(s1, s2);
        int[] prompt = EmbeddedCorpus.tokenizer().encode("Lily", true, false);
        int[] t1 = g.generateTokens(prompt, 30, 1f, 1f, 7), t2 = g.generateTokens(prompt, 30, 1f, 1f, 8);
        assertNotEquals(java.util.Arrays.toString(t1), java.util.Arrays.toString(t2), "different seeds, different samples");
        assertArrayEquals(prompt, java.util.Arrays.copyOf(t1, prompt.length));
        assertTrue(t1.length <= prompt.length + 30);
        // every position of the context is fed once; the token predicted at the last one ends the sequence (run.c -n seqLen)
        assertEquals(c.seqLen() + 1, g.generateTokens(prompt, 1000, 0f, 1f, 3).length);
    }

    @Test
    void textThatIsNotUtf8ShowsAsEscapesNotReplacementCharacters() {
        // an untrained model samples byte tokens in any order: the plain decode has U+FFFD, generate's text never does
        Parameters p = Parameters.init(ModelConfig.parse("tiny"), 1);
        Tokenizer tok = EmbeddedCorpus.tokenizer();
        Generator g = new Generator(p, tok);
        int broken = 0;
        for (long seed = 1; seed <= 8; seed++) {
            int[] ids = g.generateTokens(tok.encode("Lily", true, false), 60, 2f, 1f, seed);
            if (tok.decode(ids).contains("\uFFFD")) broken++;
            String text = g.generate("Lily", 60, 2f, 1f, seed);
            assertFalse(text.contains("\uFFFD"), text);
            assertTrue(text.chars().noneMatch(ch -> ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r'), text);
            assertEquals(tok.decodeVisible(ids), text);
        }
        assertTrue(broken > 0, "no seed produced invalid UTF-8: the test shows nothing");
    }

    @Test
    void anInterruptedThreadStopsBetweenTokens() {
        Generator g = new Generator(Parameters.init(ModelConfig.parse("tiny"), 1), EmbeddedCorpus.tokenizer());
        Thread.currentThread().interrupt();
        try {
            var e = assertThrows(java.util.concurrent.CancellationException.class, () -> g.generate("Lily", 30, 1f, 0.9f, 7));
            assertTrue(e.getMessage().startsWith("[generate] interrupted"), e.getMessage());
        } finally {
            Thread.interrupted();
        }
        assertTrue(g.generate("Lily", 5, 1f, 0.9f, 7).startsWith("Lily"), "a later call runs normally");
    }

    @Test
    void kvCacheForwardEqualsFreshRecompute() {
        // logits at position 3 must not depend on whether earlier positions came from this instance
        ModelConfig c = ParameterLayoutTest.QWEN_SMALL;
        Parameters p = Parameters.init(c, 4);
        CpuModel m = new CpuModel(p);
        int[] toks = {1, 5, 9, 3};
        float[] last = null;
        for (int i = 0; i < toks.length; i++) last = m.forward(toks[i], i).clone();
        CpuModel fresh = new CpuModel(p);
        for (int i = 0; i < toks.length - 1; i++) fresh.forward(toks[i], i);
        assertArrayEquals(last, fresh.forward(toks[3], 3));
        var e = assertThrows(IllegalArgumentException.class, () -> fresh.forward(40, 0));
        assertTrue(e.getMessage().contains("token 40 is outside the vocabulary of 40"), e.getMessage());
    }

    @Test
    void topPKeepsOnlyTheNucleus() {
        float[] probs = {0.5f, 0.3f, 0.15f, 0.05f};
        int[] counts = new int[4];
        Rng r = new Rng(1);
        for (int i = 0; i < 20_000; i++) counts[Sampler.sampleTopP(probs.clone(), 0.7f, r.nextFloat())]++;
        // nucleus for 0.7 is {0, 1} (0.5 + 0.3 > 0.7), renormalised to 5/8 and 3/8
        assertEquals(0, counts[2] + counts[3]);
        assertEquals(0.625, counts[0] / 20_000.0, 0.02);
        assertEquals(0, Sampler.argmax(new float[]{3f, 1f, 3f}), "argmax takes the first maximum");
        assertEquals(2, Sampler.sampleMult(new float[]{0.1f, 0.2f, 0.7f}, 0.35f));
        var e = assertThrows(IllegalArgumentException.class, () -> new Sampler(-1f, 0.9f, 1));
        assertTrue(e.getMessage().startsWith("[sampler] temperature"), e.getMessage());
    }
}
