package ane4j.model;

import java.util.Arrays;
import java.util.concurrent.CancellationException;

/** Text generation on the CPU: a {@link CpuModel}, a {@link Tokenizer} and a {@link Sampler}, as llama2.c's generate(). */
public final class Generator {
    private final CpuModel model;
    private final Tokenizer tokenizer;

    public Generator(Parameters params, Tokenizer tokenizer) {
        // a tokenizer.json may have fewer tokens than the model's padded vocabulary (Qwen3: 151669 of 151936)
        if (tokenizer.isTokenizerJson() ? tokenizer.vocabSize() > params.config().vocabSize() : tokenizer.vocabSize() != params.config().vocabSize())
            throw new IllegalArgumentException("[generate] tokenizer has " + tokenizer.vocabSize() + " tokens, model "
                    + params.config().name() + " has vocabSize " + params.config().vocabSize() + "; use the model's tokenizer");
        this.model = new CpuModel(params);
        this.tokenizer = tokenizer;
    }

    public CpuModel model() { return model; }

    /**
     * The prompt followed by up to {@code maxTokens} generated tokens, as text. Generation stops early at the tokenizer's BOS or
     * EOS, or when every position of the context has been fed (seqLen + 1 tokens: the last one predicted, as run.c). Same seed, same text. Bytes that are not UTF-8 (a short run's model
     * emits byte tokens in any order) show as {@code \xNN} escapes, never as U+FFFD.
     */
    public String generate(String prompt, int maxTokens, float temperature, float topP, long seed) {
        return tokenizer.decodeVisible(generateTokens(tokenizer.encode(prompt, true, false), maxTokens, temperature, topP, seed));
    }

    /** The prompt tokens (starting with BOS, usually) followed by the generated tokens. */
    public int[] generateTokens(int[] prompt, int maxTokens, float temperature, float topP, long seed) {
        return generateTokens(prompt, maxTokens, temperature, topP, seed, t -> {});
    }

    /** {@link #generateTokens(int[], int, float, float, long)}, handing each generated token to {@code onToken} as it is sampled. */
    public int[] generateTokens(int[] prompt, int maxTokens, float temperature, float topP, long seed, java.util.function.IntConsumer onToken) {
        if (prompt.length == 0) throw new IllegalArgumentException("[generate] empty prompt; start it with BOS (Tokenizer.encode(text, true, false))");
        if (maxTokens < 0) throw new IllegalArgumentException("[generate] maxTokens must be ≥ 0, got " + maxTokens);
        int seqLen = model.config().seqLen();
        if (prompt.length > seqLen) throw new IllegalArgumentException("[generate] prompt of " + prompt.length + " tokens is longer than seqLen " + seqLen);
        Sampler sampler = new Sampler(temperature, topP, seed);
        // positions 0..seqLen-1 are fed; the token predicted at the last one is kept, never fed (run.c -n seqLen)
        int[] out = Arrays.copyOf(prompt, Math.min(seqLen + 1, prompt.length + maxTokens));
        int n = prompt.length;
        // feed the prompt, then sample; position pos predicts token pos + 1
        for (int pos = 0; pos + 1 < out.length; pos++) {
            // an interrupted notebook cell or thread stops between tokens
            if (Thread.currentThread().isInterrupted())
                throw new CancellationException("[generate] interrupted after " + (n - prompt.length) + " tokens");
            float[] logits = model.forward(out[pos], pos);
            if (pos + 1 < prompt.length) continue; // still forcing the prompt
            int next = sampler.sample(logits);
            if (next == tokenizer.bosId() || next == tokenizer.eosId()) break;
            out[n++] = next;
            onToken.accept(next);
        }
        return Arrays.copyOf(out, n);
    }
}
