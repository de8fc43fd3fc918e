package ane4j.model;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Locale;

/**
 * A flat file of little-endian token ids, no header: uint16 (llama2.c's pretokenized TinyStories shards) or uint32
 * (vocabularies over 65536, e.g. Qwen3's 151936); or the same after llm.c's 1024-byte header (magic 20240520 uint16,
 * 20240801 uint32, detected), memory-mapped read-only. Opening checks the length and every id against the vocabulary once.
 * {@link #of} wraps tokens already in memory (the embedded corpus) the same way.
 */
public final class TokenShard implements AutoCloseable {
    private static final String TAG = "[tokens] ";

    /** The width of one token id in a token file (the {@code dataDtype} run key). */
    public enum Dtype {
        UINT16(2, 0xFFFFL), UINT32(4, 0xFFFF_FFFFL);

        final int bytes;
        final long maxId;

        Dtype(int bytes, long maxId) { this.bytes = bytes; this.maxId = maxId; }

        public String key() { return name().toLowerCase(Locale.ROOT); }

        /** The largest vocabulary whose ids fit. */
        public long maxVocab() { return maxId + 1; }

        public static Dtype of(String key) {
            for (Dtype d : values()) if (d.key().equalsIgnoreCase(key.trim())) return d;
            throw new IllegalArgumentException(TAG + "data dtype '" + key + "' is not uint16 or uint32");
        }
    }

    private final MemorySegment tokens;
    private final Arena arena; // null for in-memory shards
    private final Dtype dtype;
    private final long size;
    private final String name;
    private int maxToken = -1;

    private TokenShard(String name, MemorySegment tokens, Arena arena, Dtype dtype) {
        this.name = name;
        this.tokens = tokens;
        this.arena = arena;
        this.dtype = dtype;
        this.size = tokens.byteSize() / dtype.bytes;
    }

    /** Maps a uint16 shard (see {@link #open(Path, int, int, Dtype)}). */
    public static TokenShard open(Path file, int vocabSize, int seqLen) { return open(file, vocabSize, seqLen, Dtype.UINT16); }

    /**
     * Maps a shard of {@code dtype} ids. Fails with a one-line message when the vocabulary does not fit the dtype, when the
     * length is not a whole number of ids, when it holds fewer than {@code seqLen + 1} tokens (one training window), or
     * when an id is ≥ {@code vocabSize}.
     */
    public static TokenShard open(Path file, int vocabSize, int seqLen, Dtype dtype) {
        String name = file.getFileName().toString();
        checkFits(name, vocabSize, dtype);
        LeFiles.Mapped m = LeFiles.map(file, "tokens");
        try {
            long bytes = m.size();
            MemorySegment ids = llmcTokens(name, m.segment(), dtype);
            if (ids.byteSize() % dtype.bytes != 0)
                throw new ModelFormatException(TAG + name + ": " + bytes + " bytes is not a whole number of " + dtype.key() + " ids (" + dtype.bytes
                        + " bytes each)" + (dtype == Dtype.UINT32 && bytes % 2 == 0 ? "; if the file is uint16 tokens, pass --data-dtype uint16" : ""));
            TokenShard s = new TokenShard(name, ids, m.arena(), dtype);
            s.validate(vocabSize, seqLen);
            return s;
        } catch (RuntimeException e) {
            m.close();
            throw e;
        }
    }

    private static void checkFits(String name, int vocabSize, Dtype dtype) {
        if (vocabSize > dtype.maxVocab())
            throw new IllegalArgumentException(TAG + name + ": vocabSize " + vocabSize + " does not fit " + dtype.key() + " token files (max "
                    + dtype.maxVocab() + "); write the tokens as uint32 and pass --data-dtype uint32");
    }

    // llm.c's dev/data/data_common.py write_datafile: 256 int32 header (magic, version, token count, zeros), then the tokens;
    // magic 20240520 version 1 is uint16 (GPT-2) tokens, 20240801 version 7 uint32 (Llama 3) tokens
    static final int LLMC_MAGIC = 20240520, LLMC_LLAMA3_MAGIC = 20240801, LLMC_HEADER_BYTES = 256 * 4;

    /** The token part of an llm.c shard (after its header), or the whole file when it has no llm.c header. */
    private static MemorySegment llmcTokens(String name, MemorySegment file, Dtype dtype) {
        if (file.byteSize() < LLMC_HEADER_BYTES) return file;
        int magic = file.get(LeFiles.INT, 0), version = file.get(LeFiles.INT, 4), count = file.get(LeFiles.INT, 8);
        Dtype headerDtype;
        int expectedVersion;
        if (magic == LLMC_MAGIC) { headerDtype = Dtype.UINT16; expectedVersion = 1; }
        else if (magic == LLMC_LLAMA3_MAGIC) { headerDtype = Dtype.UINT32; expectedVersion = 7; }
        else return file;
        if (headerDtype != dtype)
            throw new ModelFormatException(TAG + name + ": an llm.c shard of " + headerDtype.key() + " tokens (magic " + magic + ", version " + version
                    + "), read as " + dtype.key() + "; pass --data-dtype " + headerDtype.key());
        long expected = LLMC_HEADER_BYTES + (long) dtype.bytes * Integer.toUnsignedLong(count);
        if (version != expectedVersion || expected != file.byteSize())
            throw new ModelFormatException(TAG + name + ": an llm.c token shard header (magic " + magic + ") with version " + version + " and " + count
                    + " tokens, but the file has " + file.byteSize() + " bytes (expected version " + expectedVersion + " and " + expected
                    + "); re-create the shard with llm.c's dev/data scripts");
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
        TokenShard shard = new TokenShard("memory", seg, null, Dtype.UINT16);
        shard.validate(vocabSize, seqLen);
        return shard;
    }

    private void validate(int vocabSize, int seqLen) {
        checkFits(name, vocabSize, dtype);
        if (size < (long) seqLen + 1)
            throw new ModelFormatException(TAG + name + ": " + size + " tokens, need at least seqLen+1 = " + (seqLen + 1) + " for one training window");
        for (long i = 0; i < size; i++) {
            long t = rawId(i);
            if (t >= vocabSize)
                throw new ModelFormatException(TAG + name + ": token id " + t + " at index " + i + " is ≥ vocabSize " + vocabSize
                        + (dtype == Dtype.UINT32 && t > 0xFFFF ? "; the file was tokenized with a different tokenizer, or it holds uint16 ids (then pass --data-dtype uint16)"
                                : "; the file was tokenized with a different tokenizer"));
            maxToken = Math.max(maxToken, (int) t);
        }
    }

    public String name() { return name; }

    /** The largest token id in the shard. */
    public int maxToken() { return maxToken; }

    /** Number of tokens. */
    public long size() { return size; }

    /** The width of the ids in the file. */
    public Dtype dtype() { return dtype; }

    public int get(long index) { return (int) rawId(index); }

    private long rawId(long index) {
        return dtype == Dtype.UINT16 ? Short.toUnsignedInt(tokens.get(LeFiles.SHORT, 2 * index))
                : Integer.toUnsignedLong(tokens.get(LeFiles.INT, 4 * index));
    }

    /** Copies tokens [pos, pos + n) into {@code dst}. */
    public void read(long pos, int[] dst, int dstIndex, int n) {
        if (pos < 0 || pos + n > size) throw new IndexOutOfBoundsException(TAG + name + ": window [" + pos + ", " + (pos + n) + ") of " + size + " tokens");
        for (int i = 0; i < n; i++) dst[dstIndex + i] = get(pos + i);
    }

    /** Writes a uint16 shard file (for tests and for exporting the embedded corpus). */
    public static void write(Path file, int[] tokens) { write(file, tokens, Dtype.UINT16); }

    /** Writes a headerless shard of {@code dtype} ids (ids are non-negative ints, so uint32 files written here stay below 2^31). */
    public static void write(Path file, int[] tokens, Dtype dtype) {
        try (LeFiles.Writer w = new LeFiles.Writer(file, "tokens")) {
            for (int i = 0; i < tokens.length; i++) {
                if (tokens[i] < 0 || tokens[i] > dtype.maxId)
                    throw new IllegalArgumentException(TAG + "token " + tokens[i] + " at index " + i + " does not fit in " + dtype.key());
                if (dtype == Dtype.UINT16) w.u16(tokens[i]);
                else w.i32(tokens[i]);
            }
            w.commit();
        }
    }

    /** Unmaps the file; a second close does nothing (a trainer and the run around it may both close their data). */
    @Override
    public void close() {
        if (arena != null && arena.scope().isAlive()) arena.close();
    }
}
