package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ane4j generate} through the CLI entry point, against run.c's greedy continuation from tools/gen_export_golden.py. */
class GenerateCommandTest {
    @TempDir Path tmp;

    static final String MODEL = ExportCommandTest.resource("model/llama_tiny.bin").toString();
    static final String TOKENIZER = ExportCommandTest.resource("export/tokenizer.bin").toString();

    @SuppressWarnings("unchecked")
    @Test void greedyIsRunCTokenForTokenAndStreams() throws Exception {
        var g = (Map<String, Object>) ExportCommandTest.golden().get("generate");
        // every flush is one write the user sees; record what had arrived at each
        var bytes = new ByteArrayOutputStream();
        List<String> seen = new ArrayList<>();
        var out = new PrintStream(bytes, false, StandardCharsets.UTF_8) {
            @Override public void flush() {
                super.flush();
                seen.add(bytes.toString(StandardCharsets.UTF_8));
            }
        };
        var err = new ByteArrayOutputStream();
        int code = Main.run(new String[] {"generate", "--model", MODEL, "--tokenizer", TOKENIZER, "--prompt", (String) g.get("prompt"),
                "--temperature", "0", "--tokens", g.get("tokens").toString()}, out, new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, code, err.toString(StandardCharsets.UTF_8));
        String text = (String) g.get("text");
        assertEquals(text + "\n", bytes.toString(StandardCharsets.UTF_8), "run.c's greedy text (undecodable bytes as \\x escapes)");
        // streamed: the prompt, then one flush per generated token, each showing more text
        int generated = ((List<?>) g.get("ids")).size() - (((List<?>) g.get("prompt_ids")).size() - 1);
        assertTrue(seen.size() >= generated + 1, "flushes " + seen);
        assertEquals("cab", seen.getFirst());
        assertTrue(seen.get(1).startsWith("cab") && seen.get(1).length() > 3, seen.toString());
        assertTrue(err.toString(StandardCharsets.UTF_8).matches("(?s)\\[generate] " + generated + " tokens in .* tokens/s\\).*"), err.toString(StandardCharsets.UTF_8));
    }

    /**
     * To the end of the context: every position is fed once and the token predicted at the last is printed too, as
     * llama2.c's run.c (350e04f, gcc -O3) prints for {@code ./run llama_tiny.bin -z tokenizer.bin -t 0 -n 16 -i cab}:
     * "cab€qo<unk>qo<unk>qo<unk>q", 12 tokens after the prompt's 4 (run.c drops the lone byte token 0x9F that ane4j
     * shows as \x9f). More tokens asked for than fit make no difference.
     */
    @Test void greedyToTheEndOfTheContextIsRunCsToo() {
        for (String tokens : new String[] {"12", "100"}) {
            var r = ExportCommandTest.run("generate", "--model", MODEL, "--tokenizer", TOKENIZER, "--prompt", "cab", "--temperature", "0", "--tokens", tokens);
            assertEquals(0, r.code(), r.err());
            assertEquals("cab\\x9f€qo<unk>qo<unk>qo<unk>q\n", r.out());
            assertTrue(r.err().startsWith("[generate] 12 tokens in "), r.err());
        }
    }

    @Test void aCharacterSplitOverByteTokensPrintsWholeAndAnIncompleteOneAsEscapes() throws Exception {
        // the golden continuation has a lone continuation byte (token <0x9F>) and a whole "€" piece; none is U+FFFD
        var r = ExportCommandTest.run("generate", "--model", MODEL, "--tokenizer", TOKENIZER, "--prompt", "cab", "--temperature", "0", "--tokens", "3");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("\\x9f") && !r.out().contains("\uFFFD"), r.out());
    }

    @Test void aPromptLongerThanTheContextIsCutWithANote() {
        var r = ExportCommandTest.run("generate", "--model", MODEL, "--tokenizer", TOKENIZER, "--prompt", "abcdefghijklmnopqrstuvwxyz", "--temperature", "0", "--tokens", "4");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.err().startsWith("note: the prompt is 27 tokens, the context of llama_tiny is 16; using its last 7 tokens\n"), r.err());
        assertTrue(r.out().startsWith("tuvwxyz") && r.out().length() > "tuvwxyz\n".length(), r.out());
    }

    @Test void samplingIsSeededAndBadInputsAreOneLineEach() {
        String[] base = {"generate", "--model", MODEL, "--tokenizer", TOKENIZER, "--prompt", "ab", "--temperature", "1", "--top-p", "0.9"};
        var a = ExportCommandTest.run(concat(base, "--seed", "5"));
        var b = ExportCommandTest.run(concat(base, "--seed", "5"));
        assertEquals(0, a.code(), a.err());
        assertEquals(a.out(), b.out());
        String[][] bad = {
                {"generate", "--model", MODEL, "--tokenizer", TOKENIZER},
                {"generate", "--prompt", "x"},
                {"generate", "--model", tmp.resolve("none.bin").toString(), "--prompt", "x"},
                {"generate", "--model", MODEL, "--prompt", "x"},
                {"generate", "--model", MODEL, "--tokenizer", tmp.resolve("t.bin").toString(), "--prompt", "x"},
                {"generate", "--model", MODEL, "--tokenizer", TOKENIZER, "--prompt", "x", "--temperature", "-1"},
                {"generate", "--model", MODEL, "--tokenizer", TOKENIZER, "--prompt", "x", "--top-p", "2"},
                {"generate", "--model", MODEL, "--tokenizer", TOKENIZER, "--prompt", "x", "--tokens", "many"},
                {"generate", "--model", MODEL, "--tokenizer", TOKENIZER, "--prompt", "x", "--seed", "1.5"},
                {"generate", "--model", MODEL, "--tokenizer", TOKENIZER, "--prompt", "x", "--top-k", "5"},
                {"generate", "--model", MODEL, "--tokenizer", ane4jCorpusTokenizer(), "--prompt", "x"},
                {"generate", "--model", MODEL, "--prompt"},
                {"generate", "--prompt", "x", "--model"}};
        String[] expect = {"no --prompt", "no model given", "no such file", "no tokenizer for", "no such file", "--temperature -1 is not a number in [0,",
                "--top-p 2 is not a number in [0, 1]", "--tokens many is not a whole number", "--seed 1.5 is not a whole number", "unknown option --top-k",
                "has 512 tokens, the model 48", "--prompt has no value; give --prompt TEXT", "--model has no value; give --model FILE|DIR"};
        for (int i = 0; i < bad.length; i++) {
            var r = ExportCommandTest.run(bad[i]);
            assertEquals(1, r.code(), String.join(" ", bad[i]) + " → " + r.err());
            assertEquals(1, r.err().lines().count(), r.err());
            assertTrue(r.err().startsWith("ane4j generate: ") && r.err().contains(expect[i]), String.join(" ", bad[i]) + " → " + r.err());
        }
    }

    private String ane4jCorpusTokenizer() {
        Path t = tmp.resolve("corpus-tokenizer.bin");
        if (!java.nio.file.Files.exists(t)) ane4j.model.EmbeddedCorpus.tokenizer().write(t);
        return t.toString();
    }

    private static String[] concat(String[] a, String... b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
