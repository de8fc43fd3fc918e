package ane4j.model;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * A flat file of little-endian uint16 token ids, no header (llama2.c's pretokenized TinyStories shards), or the same
 * after llm.c's 1024-byte header (magic 20240520, detected), memory-mapped read-only. Opening checks the length and every id against the vocabulary once.
 * {@link #of} wraps tokens already in memory (the embedded corpus) the same way.
 */
public final class TokenShard implements AutoCloseable {
    private static final String TAG = "[tokens] ";
    private final MemorySegment tokens;
    private final Arena arena; // null for in-memory shards
    private final long size;
    private final String name;
    private int maxToken = -1;

    private TokenShard(String name, MemorySegment tokens, Arena arena) {
        this.name = name;
        this.tokens = tokens;
        this.arena = arena;
        this.size = tokens.byteSize() / 2;
    }

    /**
     * Maps a shard. Fails with a one-line message when the length is odd, when it holds fewer than
     * {@code seqLen + 1} tokens (one training window), or when an id is ≥ {@code vocabSize}.
     */
    public static TokenShard open(Path file, int vocabSize, int seqLen) {
        LeFiles.Mapped m = LeFiles.map(file, "tokens");
        try {
            String name = file.getFileName().toString();
            long bytes = m.size();
            if (bytes % 2 != 0)
                throw new ModelFormatException(TAG + name + ": " + bytes + " bytes is odd; a token file is uint16 ids (2 bytes each)");
            TokenShard s = new TokenShard(name, llmcTokens(name, m.segment()), m.arena());
            s.validate(vocabSize, seqLen);
            return s;
        } catch (RuntimeException e) {
            m.close();
            throw e;
        }
    }

    // llm.c's dev/data/data_common.py write_datafile: 256 int32 header (magic, version, token count, zeros), then the tokens;
    // magic 20240520 version 1 is uint16 (GPT-2) tokens, 20240801 version 7 uint32 (Llama 3) tokens
    static final int LLMC_MAGIC = 20240520, LLMC_LLAMA3_MAGIC = 20240801, LLMC_HEADER_BYTES = 256 * 4;

    /** The token part of an llm.c shard (after its header), or the whole file when it has no llm.c header. */
    private static MemorySegment llmcTokens(String name, MemorySegment file) {
        if (file.byteSize() < LLMC_HEADER_BYTES) return file;
        int magic = file.get(LeFiles.INT, 0), version = file.get(LeFiles.INT, 4), count = file.get(LeFiles.INT, 8);
        if (magic == LLMC_LLAMA3_MAGIC)
            throw new ModelFormatException(TAG + name + ": an llm.c Llama 3 shard (magic 20240801, version " + version + ", uint32 tokens); ane4j reads "
                    + "uint16 tokens: use a GPT-2 llm.c shard (magic 20240520) or llama2.c's headerless uint16 shards");
        if (magic != LLMC_MAGIC) return file;
        long expected = LLMC_HEADER_BYTES + 2L * Integer.toUnsignedLong(count);
        if (version != 1 || expected != file.byteSize())
            throw new ModelFormatException(TAG + name + ": an llm.c token shard header (magic 20240520) with version " + version + " and " + count
                    + " tokens, but the file has " + file.byteSize() + " bytes (expected version 1 and " + expected + "); re-create the shard with llm.c's dev/data scripts");
        return file.asSlice(LLMC_HEADER_BYTES);
    }

    /** An in-memory shard over {@code tokens} (each must fit in uint16). */
    public static TokenShard of(int[] tokens, int vocabSize, int seqLen) {
        MemorySegment seg = MemorySegment.ofArray(new short[tokens.length]);
        for (int i = 0; i < tokens.length; i++) {
            if (tokens[i] < 0 || tokens[i] > 0xFFFF)
                throw new IllegalArgumentException(TAG + "token " + tokens[i] + " at index " + i + " does not fit in uint16");
            seg.set(LeFiles.SHORT, 2L * i, (short) tokens[i]);
        }
        TokenShard shard = new TokenShard("memory", seg, null);
        shard.validate(vocabSize, seqLen);
        return shard;
    }

    private void validate(int vocabSize, int seqLen) {
        if (vocabSize > 65536)
            throw new IllegalArgumentException(TAG + name + ": vocabSize " + vocabSize + " does not fit uint16 token files (max 65536)");
        if (size < (long) seqLen + 1)
            throw new ModelFormatException(TAG + name + ": " + size + " tokens, need at least seqLen+1 = " + (seqLen + 1) + " for one training window");
        for (long i = 0; i < size; i++) {
            int t = get(i);
            maxToken = Math.max(maxToken, t);
            if (t >= vocabSize)
                throw new ModelFormatException(TAG + name + ": token id " + t + " at index " + i + " is ≥ vocabSize " + vocabSize
                        + "; the file was tokenized with a different tokenizer");
        }
    }

    public String name() { return name; }

    /** The largest token id in the shard. */
    public int maxToken() { return maxToken; }

    /** Number of tokens. */
    public long size() { return size; }

    public int get(long index) {
        return Short.toUnsignedInt(tokens.get(LeFiles.SHORT, 2 * index));
    }

    /** Copies tokens [pos, pos + n) into {@code dst}. */
    public void read(long pos, int[] dst, int dstIndex, int n) {
        if (pos < 0 || pos + n > size) throw new IndexOutOfBoundsException(TAG + name + ": window [" + pos + ", " + (pos + n) + ") of " + size + " tokens");
        for (int i = 0; i < n; i++) dst[dstIndex + i] = get(pos + i);
    }

    /** Writes a shard file (for tests and for exporting the embedded corpus). */
    public static void write(Path file, int[] tokens) {
        try (LeFiles.Writer w = new LeFiles.Writer(file, "tokens")) {
            for (int i = 0; i < tokens.length; i++) {
                if (tokens[i] < 0 || tokens[i] > 0xFFFF)
                    throw new IllegalArgumentException(TAG + "token " + tokens[i] + " at index " + i + " does not fit in uint16");
                w.u16(tokens[i]);
            }
            w.commit();
        }
    }

    @Override
    public void close() {
        if (arena != null) arena.close();
    }
}
