package ane4j.cli;

import ane4j.model.Generator;
import ane4j.model.Tokenizer;
import ane4j.model.Utf8Stream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * {@code ane4j generate}: text from a model on the CPU, printed token by token as it is sampled (the sampler of
 * {@code %generate}: temperature 0 is greedy, as llama2.c's run.c). The prompt is printed first, as run.c does.
 */
final class GenerateCommand {
    private GenerateCommand() {}

    static final String USAGE = "generate --model FILE|DIR|--run DIR|--checkpoint FILE --prompt TEXT [--tokens N] [--temperature T] [--top-p P] [--seed S] [--tokenizer FILE]";
    private static final Set<String> KEYS = Set.of("model", "run", "checkpoint", "prompt", "tokens", "temperature", "topP", "seed", "tokenizer");

    static int run(String[] args, PrintStream out, PrintStream err) {
        if (Arrays.asList(args).contains("--help") || Arrays.asList(args).contains("-h")) {
            out.println("usage: ane4j " + USAGE + """


                      --model        a llama2.c .bin, a safetensors file or folder, or an ane4j checkpoint
                      --tokens       tokens to generate (default 256; generation stops at the model's seqLen, BOS or EOS)
                      --temperature  0 is greedy (argmax); default 1.0     --top-p  nucleus sampling, default 0.9 (1 = off)
                      --seed         sampling seed, default 42             --tokenizer  a llama2.c tokenizer.bin (default: the model's)""");
            return 0;
        }
        Map<String, String> o = TrainCommand.parse(args);
        for (String k : o.keySet()) if (!KEYS.contains(k)) throw new CliException("unknown option --" + kebab(k) + "; usage: ane4j " + USAGE);
        String prompt = o.get("prompt");
        if (prompt == null)
            throw new CliException("no --prompt TEXT (e.g. --prompt \"Once upon a time\")");
        int tokens = (int) number(o, "tokens", "256", 0, Integer.MAX_VALUE, true);
        float temperature = (float) number(o, "temperature", "1.0", 0, 1e6, false);
        float topP = (float) number(o, "topP", "0.9", 0, 1, false);
        long seed;
        try {
            seed = Long.parseLong(o.getOrDefault("seed", "42"));
        } catch (NumberFormatException e) {
            throw new CliException("--seed " + o.get("seed") + " is not a whole number");
        }
        ModelSource src = ModelSource.open(o.get("run"), o.get("checkpoint"), o.get("model"), o.get("tokenizer"), "generate");
        Tokenizer tok = src.tokenizer();
        int vocab = src.params().config().vocabSize();
        if (tok == null)
            throw new CliException("[generate] no tokenizer for " + src.description() + "; give --tokenizer FILE (a llama2.c tokenizer.bin with " + vocab + " tokens)");
        if (tok.vocabSize() != vocab)
            throw new CliException("[generate] the tokenizer " + src.tokenizerFrom() + " has " + tok.vocabSize() + " tokens, the model " + vocab
                    + "; give --tokenizer FILE with the model's own tokenizer");

        int[] ids = tok.encode(prompt, true, false);
        int seqLen = src.params().config().seqLen();
        if (ids.length >= seqLen) {
            // keep BOS and the end of the prompt, leaving half the context for generation
            int keep = Math.max(1, seqLen / 2 - 1);
            int[] cut = new int[keep + 1];
            cut[0] = ids[0];
            System.arraycopy(ids, ids.length - keep, cut, 1, keep);
            err.printf("note: the prompt is %d tokens, the context of %s is %d; using its last %d tokens%n", ids.length - 1, src.params().config().name(), seqLen, keep);
            ids = cut;
        }

        // the text is UTF-8 whatever the locale says (run.c writes the bytes as they are); a C locale would print '?' for "€"
        if (out == System.out && !out.charset().equals(StandardCharsets.UTF_8))
            out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        PrintStream text8 = out;
        Generator g = new Generator(src.params(), tok);
        Utf8Stream text = new Utf8Stream();
        int[] prev = {ids[0]};
        // the prompt first, as run.c prints it
        for (int i = 1; i < ids.length; i++) {
            out.print(text.push(tok.decodePiece(prev[0], ids[i])));
            prev[0] = ids[i];
        }
        out.flush();
        long t0 = System.nanoTime();
        int[] all = g.generateTokens(ids, tokens, temperature, topP, seed, next -> {
            text8.print(text.push(tok.decodePiece(prev[0], next)));
            text8.flush();
            prev[0] = next;
        });
        out.println(text.finish());
        out.flush();
        double secs = (System.nanoTime() - t0) / 1e9;
        int made = all.length - ids.length;
        err.printf(Locale.ROOT, "[generate] %d tokens in %.2f s (%.1f tokens/s), %s%n", made, secs, made / Math.max(secs, 1e-9), src.description());
        return 0;
    }

    private static double number(Map<String, String> o, String key, String dflt, double min, double max, boolean whole) {
        String v = o.getOrDefault(key, dflt);
        String flag = "--" + kebab(key);
        try {
            double d = whole ? Long.parseLong(v) : Double.parseDouble(v);
            if (!(d >= min && d <= max)) throw new NumberFormatException();
            return d;
        } catch (NumberFormatException e) {
            throw new CliException(flag + " " + v + " is not " + (whole ? "a whole number" : "a number") + " in [" + fmt(min) + ", " + fmt(max) + "]");
        }
    }

    /** {@code topP} → {@code top-p}: an option key as the user typed it. */
    static String kebab(String key) { return key.replaceAll("([A-Z])", "-$1").toLowerCase(Locale.ROOT); }

    private static String fmt(double d) { return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d); }
}
