package ane4j.model;

import java.nio.file.Path;
import java.util.Locale;

/**
 * Training tokens as the trainer reads them: a flat sequence of ids and, for each, whether it counts as a target in
 * the loss (the loss mask). Token files count every token; prompt/completion JSON lines count only the completion
 * ({@link TextData}). A window [pos, pos + seqLen] predicts token pos + i + 1 from the ones before it, and that target
 * counts when {@code mask[pos + i + 1]} is 1.
 *
 * <p>{@link #split} holds a tail out for validation: documents whole for text data, tokens for token files.
 */
public interface TokenData extends AutoCloseable {

    /** The file name (or "memory"), for messages. */
    String name();

    /** Number of tokens. */
    long size();

    /** The largest token id. */
    int maxToken();

    /** Copies tokens [pos, pos + n) into {@code dst[dstIndex…]}. */
    void read(long pos, int[] dst, int dstIndex, int n);

    /** True when some token does not count as a target (prompt tokens of prompt/completion data). */
    boolean masked();

    /** Copies the loss mask of tokens [pos, pos + n) (1 counts, 0 does not) into {@code dst[dstIndex…]}. */
    void readMask(long pos, byte[] dst, int dstIndex, int n);

    /** Tokens [from, to) as their own data (a view; closing it closes nothing). */
    TokenData range(long from, long to);

    /** Training part and held-out part. */
    record Split(TokenData train, TokenData validation) {}

    /**
     * The first part for training, the last {@code fraction} held out for validation loss, each at least
     * {@code minTokens} long (seqLen + 1: one window); 0 holds nothing out (validation is null).
     */
    default Split split(double fraction, long minTokens) {
        if (!(fraction >= 0 && fraction < 1)) throw new IllegalArgumentException("[data] valFraction " + fraction + " must be in [0, 1)");
        if (fraction == 0) return new Split(this, null);
        long cut = splitPoint(fraction);
        if (cut < minTokens || size() - cut < minTokens)
            throw new ModelFormatException(String.format(Locale.ROOT, "[data] %s: %d tokens are too few to hold out %.0f%% for validation with windows of %d tokens "
                    + "(both parts need %d); give more data, --val-fraction 0, or --val-data FILE", name(), size(), 100 * fraction, minTokens - 1, minTokens));
        return new Split(range(0, cut), range(cut, size()));
    }

    /** Where {@link #split} cuts: the first token of the held-out tail. */
    default long splitPoint(double fraction) { return size() - (long) Math.floor(size() * fraction); }

    @Override
    void close();

    /** The mask of token data that counts every token. */
    static void fillAll(byte[] dst, int dstIndex, int n) { java.util.Arrays.fill(dst, dstIndex, dstIndex + n, (byte) 1); }

    /**
     * Opens training data by its name: {@code .txt}, {@code .jsonl} (and {@code .json} lines) are tokenized on the fly
     * with {@code tokenizer}; anything else is a token file ({@link TokenShard}).
     */
    static TokenData open(Path file, Tokenizer tokenizer, int vocabSize, int seqLen) {
        return open(file, tokenizer, vocabSize, seqLen, TokenShard.Dtype.UINT16);
    }

    /** {@link #open(Path, Tokenizer, int, int)} with the id width of token files. */
    static TokenData open(Path file, Tokenizer tokenizer, int vocabSize, int seqLen, TokenShard.Dtype dtype) {
        if (TextData.isText(file)) {
            if (tokenizer == null)
                throw new ModelFormatException("[data] " + file.getFileName() + " is text, tokenized as it is read: give --tokenizer FILE (a tokenizer.bin or "
                        + "tokenizer.json), or put one next to it");
            return TextData.open(file, tokenizer, vocabSize, seqLen);
        }
        return of(TokenShard.open(file, vocabSize, seqLen, dtype));
    }

    /** A token shard as token data (every token counts). */
    static TokenData of(TokenShard shard) { return new ShardData(shard, 0, shard.size(), true); }

    /** {@link TokenShard} seen as token data, over tokens [from, to). */
    record ShardData(TokenShard shard, long from, long to, boolean owner) implements TokenData {
        @Override public String name() { return shard.name(); }

        @Override public long size() { return to - from; }

        @Override public int maxToken() { return shard.maxToken(); }

        @Override public void read(long pos, int[] dst, int dstIndex, int n) {
            if (pos < 0 || pos + n > size()) throw new IndexOutOfBoundsException("[tokens] " + name() + ": window [" + pos + ", " + (pos + n) + ") of " + size() + " tokens");
            shard.read(from + pos, dst, dstIndex, n);
        }

        @Override public boolean masked() { return false; }

        @Override public void readMask(long pos, byte[] dst, int dstIndex, int n) { fillAll(dst, dstIndex, n); }

        @Override public TokenData range(long a, long b) {
            if (a < 0 || b > size() || a > b) throw new IndexOutOfBoundsException("[tokens] " + name() + ": range [" + a + ", " + b + ") of " + size() + " tokens");
            return new ShardData(shard, from + a, from + b, false);
        }

        @Override public void close() { if (owner) shard.close(); }
    }
}
