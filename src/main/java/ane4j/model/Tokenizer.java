package ane4j.model;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * A tokenizer: llama2.c's, or a Hugging Face {@code tokenizer.json} with byte-level BPE ({@link ByteLevelBpe}; {@link #read}
 * tells them apart by the file). llama2.c's BPE tokenizer and its {@code tokenizer.bin} file: int32 max_token_length, then per token
 * {float32 score, int32 byte length, bytes}. Encoding follows {@code run.c encode()}: optional BOS, a dummy
 * " " prefix for non-empty text, one token per UTF-8 code point (or one {@code <0xXX>} byte token per byte
 * when the code point is not in the vocabulary), then repeatedly merge the adjacent pair whose concatenation
 * is a token with the highest score (leftmost on ties), optional EOS. Merges use a priority queue instead of
 * run.c's quadratic rescans, with the same result.
 */
public final class Tokenizer {
    public static final int UNK = 0, BOS = 1, EOS = 2;
    private static final String TAG = "[tokenizer] ";
    private static final float NO_MERGE = -1e10f; // run.c's initial best_score: pairs scoring below it never merge

    // pieces as ISO-8859-1 strings: one char per byte, so byte strings work as map keys and concatenate
    private final String[] pieces;
    private final float[] scores;
    private final Map<String, Integer> ids;
    private final int[] byteTokens = new int[256];
    private final int maxTokenLength;
    private final ByteLevelBpe bpe; // null: llama2.c's tokenizer
    private final String json;      // the tokenizer.json text it was read from, or null
    private final int bos, eos;
    private ChatTemplate chatTemplate; // the model's chat template (tokenizer_config.json, a GGUF's), or null

    /** A tokenizer over raw byte pieces (pieces are bytes, usually UTF-8) and their merge scores. */
    public Tokenizer(List<byte[]> pieces, float[] scores) {
        this(pieces, scores, null, null, BOS, EOS);
    }

    private Tokenizer(List<byte[]> pieces, float[] scores, ByteLevelBpe bpe, String json, int bos, int eos) {
        this.bpe = bpe;
        this.json = json;
        this.bos = bos;
        this.eos = eos;
        if (pieces.size() != scores.length)
            throw new IllegalArgumentException(TAG + pieces.size() + " pieces but " + scores.length + " scores");
        if (pieces.size() < 3) throw new IllegalArgumentException(TAG + "vocabulary of " + pieces.size() + " tokens has no room for <unk>, <s>, </s>");
        this.pieces = new String[pieces.size()];
        this.scores = scores.clone();
        this.ids = HashMap.newHashMap(pieces.size());
        int max = 0;
        for (int i = 0; i < pieces.size(); i++) {
            this.pieces[i] = new String(pieces.get(i), StandardCharsets.ISO_8859_1);
            ids.putIfAbsent(this.pieces[i], i);
            max = Math.max(max, pieces.get(i).length);
        }
        this.maxTokenLength = max;
        for (int b = 0; b < 256; b++) {
            Integer id = ids.get(String.format("<0x%02X>", b));
            // llama2.c assumes the Llama layout (byte b = token b + 3); use it when the table has no such piece
            byteTokens[b] = id != null ? id : (b + 3 < pieces.size() ? b + 3 : UNK);
        }
    }

    /** A SentencePiece-style tokenizer (a GGUF file's {@code llama} model) with its own BOS and EOS ids (-1: none). */
    static Tokenizer sentencePiece(List<byte[]> pieces, float[] scores, int bos, int eos) {
        return new Tokenizer(pieces, scores, null, null, bos, eos);
    }

    /** A byte-level BPE tokenizer from tokenizer.json text with the given BOS and EOS ids (a GGUF file's {@code gpt2} model). */
    static Tokenizer fromJson(String json, String name, int bos, int eos) {
        ByteLevelBpe bpe = ByteLevelBpe.parse(json, name);
        List<byte[]> pieces = new ArrayList<>(bpe.vocabSize());
        for (int i = 0; i < bpe.vocabSize(); i++) pieces.add(bpe.bytes(i));
        if (pieces.size() < 3) throw new ModelFormatException(TAG + name + ": a vocabulary of " + pieces.size() + " tokens");
        return new Tokenizer(pieces, new float[pieces.size()], bpe, json, bos, eos);
    }

    public int vocabSize() { return pieces.length; }

    /** The model's chat template (from the tokenizer_config.json beside a tokenizer.json, or a GGUF file), or null. */
    public ChatTemplate chatTemplate() { return chatTemplate; }

    /** Sets the chat template (when reading the tokenizer's files); returns this. */
    public Tokenizer withChatTemplate(ChatTemplate t) {
        this.chatTemplate = t;
        return this;
    }

    /** The id documents and prompts start with, or -1 (GPT-2 and Qwen tokenizers have none). */
    public int bosId() { return bos; }

    /** The id documents end with and generation stops at, or -1. */
    public int eosId() { return eos; }

    /** True for a Hugging Face tokenizer.json, false for a llama2.c tokenizer.bin. */
    public boolean isTokenizerJson() { return bpe != null; }

    public int maxTokenLength() { return maxTokenLength; }

    public float score(int id) { return scores[id]; }

    /** The piece of a token as UTF-8 text (byte tokens stay {@code <0xXX>}). */
    public String piece(int id) { return new String(pieceBytes(id), StandardCharsets.UTF_8); }

    public byte[] pieceBytes(int id) { return pieces[id].getBytes(StandardCharsets.ISO_8859_1); }

    /** The id of a piece given as text, or -1. */
    public int id(String piece) {
        Integer id = ids.get(new String(piece.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1));
        return id == null ? -1 : id;
    }

    // ----------------------------------------------------------------------------------------------
    // encode

    /** The tokens of {@code text}, after BOS and before EOS when asked and the tokenizer has them. */
    public int[] encode(String text, boolean bos, boolean eos) {
        return encode(text, bos, eos, true);
    }

    /** Tokens of text that continues other text (a completion after its prompt): no BOS, no EOS, no dummy prefix. */
    public int[] encodeContinuation(String text) {
        return encode(text, false, false, false);
    }

    private int[] encode(String text, boolean bos, boolean eos, boolean dummyPrefix) {
        if (bpe != null) {
            int[] ids = bpe.encode(text);
            boolean b = bos && this.bos >= 0, e = eos && this.eos >= 0;
            int[] out = new int[ids.length + (b ? 1 : 0) + (e ? 1 : 0)];
            if (b) out[0] = this.bos;
            System.arraycopy(ids, 0, out, b ? 1 : 0, ids.length);
            if (e) out[out.length - 1] = this.eos;
            return out;
        }
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        int[] tok = new int[utf8.length + 3];
        int n = 0;
        if (bos && this.bos >= 0) tok[n++] = this.bos;
        // dummy prefix: sentencepiece's add_dummy_prefix, as run.c does for any non-empty text
        if (utf8.length > 0 && dummyPrefix) {
            Integer space = ids.get(" ");
            tok[n++] = space != null ? space : byteTokens[' '];
        }
        // one token per UTF-8 code point, or byte fallback
        int start = 0;
        while (start < utf8.length) {
            int end = start + 1;
            // run.c groups a lead byte with at most 3 continuation bytes (0b10xxxxxx)
            while (end < utf8.length && (utf8[end] & 0xC0) == 0x80 && end - start < 4) end++;
            Integer id = ids.get(new String(utf8, start, end - start, StandardCharsets.ISO_8859_1));
            if (id != null) tok[n++] = id;
            else for (int i = start; i < end; i++) tok[n++] = byteTokens[utf8[i] & 0xFF];
            start = end;
        }
        n = merge(tok, n);
        if (eos && this.eos >= 0) tok[n++] = this.eos;
        return Arrays.copyOf(tok, n);
    }

    // a candidate merge of the pair starting at node `left`, valid while both tokens are unchanged
    private record Pair(float score, int left, int leftTok, int rightTok, int merged) {}

    // greedy BPE: merge the best-scoring pair (leftmost on ties) until no adjacent pair forms a token
    private int merge(int[] tok, int n) {
        if (n < 2) return n;
        int[] next = new int[n], prev = new int[n];
        boolean[] alive = new boolean[n];
        for (int i = 0; i < n; i++) {
            next[i] = i + 1 < n ? i + 1 : -1;
            prev[i] = i - 1;
            alive[i] = true;
        }
        PriorityQueue<Pair> queue = new PriorityQueue<>((a, b) -> a.score != b.score ? Float.compare(b.score, a.score) : Integer.compare(a.left, b.left));
        for (int i = 0; i + 1 < n; i++) offer(queue, tok, i, i + 1);
        while (!queue.isEmpty()) {
            Pair p = queue.poll();
            int l = p.left;
            if (!alive[l] || tok[l] != p.leftTok) continue;
            int r = next[l];
            if (r < 0 || tok[r] != p.rightTok) continue;
            // merge r into l
            tok[l] = p.merged;
            alive[r] = false;
            next[l] = next[r];
            if (next[r] >= 0) prev[next[r]] = l;
            if (prev[l] >= 0) offer(queue, tok, prev[l], l);
            if (next[l] >= 0) offer(queue, tok, l, next[l]);
        }
        int m = 0;
        for (int i = 0; i >= 0 && i < n; i = next[i]) tok[m++] = tok[i];
        return m;
    }

    private void offer(PriorityQueue<Pair> queue, int[] tok, int l, int r) {
        int id = mergeOf(tok[l], tok[r]);
        if (id >= 0 && scores[id] > NO_MERGE) queue.add(new Pair(scores[id], l, tok[l], tok[r], id));
    }

    // memo of pair → token of the concatenated pieces (-1: none), bounded so huge vocabularies cannot exhaust memory
    private final Map<Long, Integer> pairCache = new java.util.concurrent.ConcurrentHashMap<>();
    private static final int PAIR_CACHE_MAX = 1 << 20;

    private int mergeOf(int a, int b) {
        long key = ((long) a << 32) | b;
        Integer cached = pairCache.get(key);
        if (cached != null) return cached;
        Integer id = ids.get(pieces[a].concat(pieces[b]));
        int result = id == null ? -1 : id;
        if (pairCache.size() < PAIR_CACHE_MAX) pairCache.put(key, result);
        return result;
    }

    // ----------------------------------------------------------------------------------------------
    // decode

    /** The bytes token {@code token} prints after {@code prev}: byte tokens become their byte, a leading space after BOS is dropped. */
    public byte[] decodePiece(int prev, int token) {
        // a model vocabulary padded past its tokenizer.json (Qwen3) can sample ids no token has: shown, not dropped
        if (bpe != null && token >= pieces.length) return ("<|unused " + token + "|>").getBytes(StandardCharsets.UTF_8);
        if (token < 0 || token >= pieces.length) throw new IllegalArgumentException(TAG + "token id " + token + " is outside the vocabulary of " + pieces.length);
        if (bpe != null) return bpe.bytes(token);
        String p = pieces[token];
        if (prev == BOS && p.startsWith(" ")) p = p.substring(1);
        if (p.length() == 6 && p.startsWith("<0x") && p.endsWith(">")) {
            try {
                return new byte[]{(byte) Integer.parseInt(p.substring(3, 5), 16)};
            } catch (NumberFormatException ignored) {
                // not a byte token after all: print it as text
            }
        }
        return p.getBytes(StandardCharsets.ISO_8859_1);
    }

    /**
     * Text of a token sequence; llama2.c's BOS and EOS print nothing, a tokenizer.json's added tokens print as their text
     * (Hugging Face's decode without skip_special_tokens). Invalid UTF-8 becomes U+FFFD, as Hugging Face's decode gives it;
     * {@link #decodeVisible} shows such bytes as escapes instead.
     */
    public String decode(int[] tokens) {
        return bytes(tokens).toString(StandardCharsets.UTF_8);
    }

    /** Text of a token sequence for people to read: bytes that are not UTF-8 show as {@code \xNN} escapes, as ane4j generate prints them. */
    public String decodeVisible(int[] tokens) {
        Utf8Stream text = new Utf8Stream();
        return text.push(bytes(tokens).toByteArray()) + text.finish();
    }

    private ByteArrayOutputStream bytes(int[] tokens) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int prev = -1;
        for (int t : tokens) {
            if (t < 0 || (bpe == null && t >= pieces.length)) throw new IllegalArgumentException(TAG + "token id " + t + " is outside the vocabulary of " + pieces.length);
            if (bpe != null || (t != bos && t != eos)) out.writeBytes(decodePiece(prev, t));
            prev = t;
        }
        return out;
    }

    // ----------------------------------------------------------------------------------------------
    // tokenizer.bin

    /**
     * Reads a tokenizer: a Hugging Face {@code tokenizer.json} (a file whose name ends in .json) or a llama2.c
     * tokenizer.bin, whose vocabulary size is the number of entries in the file.
     */
    public static Tokenizer read(Path file) {
        if (file.getFileName().toString().toLowerCase(java.util.Locale.ROOT).endsWith(".json")) return readJson(file);
        if (file.getFileName().toString().toLowerCase(java.util.Locale.ROOT).endsWith(".gguf")) return Gguf.tokenizer(file);
        try (LeFiles.Mapped m = LeFiles.map(file, "tokenizer")) {
            String name = file.getFileName().toString();
            long size = m.size();
            if (size < 4) throw new ModelFormatException(TAG + name + ": " + size + " bytes, too short for a tokenizer.bin header");
            int maxLen = m.segment().get(LeFiles.INT, 0);
            if (maxLen <= 0 || maxLen > 1 << 16)
                throw new ModelFormatException(TAG + name + ": max_token_length " + maxLen + " is not plausible; not a llama2.c tokenizer.bin");
            List<byte[]> pieces = new ArrayList<>();
            List<Float> scores = new ArrayList<>();
            long pos = 4;
            while (pos < size) {
                int id = pieces.size();
                if (pos + 8 > size)
                    throw new ModelFormatException(TAG + name + ": token " + id + " header at byte " + pos + " runs past the end (" + size + " bytes); truncated file?");
                float score = m.segment().get(LeFiles.FLOAT, pos);
                int len = m.segment().get(LeFiles.INT, pos + 4);
                if (len < 0 || len > maxLen)
                    throw new ModelFormatException(TAG + name + ": token " + id + " has length " + len + " (max_token_length " + maxLen + "); corrupt file?");
                if (pos + 8 + len > size)
                    throw new ModelFormatException(TAG + name + ": token " + id + " of " + len + " bytes runs past the end (" + size + " bytes); truncated file?");
                byte[] b = new byte[len];
                java.lang.foreign.MemorySegment.copy(m.segment(), java.lang.foreign.ValueLayout.JAVA_BYTE, pos + 8, b, 0, len);
                pieces.add(b);
                scores.add(score);
                pos += 8 + len;
            }
            float[] s = new float[scores.size()];
            for (int i = 0; i < s.length; i++) s[i] = scores.get(i);
            try {
                return new Tokenizer(pieces, s);
            } catch (IllegalArgumentException e) {
                throw new ModelFormatException(e.getMessage().replace(TAG, TAG + name + ": "), e);
            }
        }
    }

    /** Reads a tokenizer.bin and checks it has the model's vocabulary size. */
    public static Tokenizer read(Path file, int vocabSize) {
        Tokenizer t = read(file);
        if (t.vocabSize() != vocabSize)
            throw new ModelFormatException(TAG + file.getFileName() + " has " + t.vocabSize() + " tokens but the model's vocabSize is " + vocabSize
                    + "; use the tokenizer the model was trained with");
        return t;
    }

    /** Reads a Hugging Face tokenizer.json (byte-level BPE); the vocabulary size is its largest id + 1. */
    public static Tokenizer readJson(Path file) {
        String name = file.getFileName().toString();
        String json;
        try {
            if (java.nio.file.Files.isDirectory(file)) throw new ModelFormatException(TAG + file + " is a folder, not a file");
            InputFile.requireRegular(file, "tokenizer");
            json = java.nio.file.Files.readString(file, StandardCharsets.UTF_8);
        } catch (java.nio.file.NoSuchFileException e) {
            throw new ModelFormatException(TAG + file + ": no such file");
        } catch (java.nio.charset.CharacterCodingException e) {
            throw new ModelFormatException(TAG + name + ": not UTF-8 text; tokenizer.json is UTF-8: re-save it as UTF-8");
        } catch (java.io.IOException | java.io.UncheckedIOException e) {
            throw new ModelFormatException(TAG + "cannot read " + file + ": " + e.getMessage());
        }
        ByteLevelBpe bpe = ByteLevelBpe.parse(json, name);
        List<byte[]> pieces = new ArrayList<>(bpe.vocabSize());
        for (int i = 0; i < bpe.vocabSize(); i++) pieces.add(bpe.bytes(i));
        if (pieces.size() < 3) throw new ModelFormatException(TAG + name + ": a vocabulary of " + pieces.size() + " tokens");
        return new Tokenizer(pieces, new float[pieces.size()], bpe, json, bpe.bos(), bpe.eos()).withChatTemplate(TokenizerConfig.read(file));
    }

    /** The file name this tokenizer is written under: tokenizer.json or tokenizer.bin. */
    public String fileName() { return bpe != null ? "tokenizer.json" : "tokenizer.bin"; }

    /** Writes the tokenizer in its own format: the tokenizer.json it was read from, or a llama2.c tokenizer.bin. */
    public void write(Path file) {
        if (json != null) {
            try (LeFiles.Writer w = new LeFiles.Writer(file, "tokenizer")) {
                w.bytes(json.getBytes(StandardCharsets.UTF_8));
                w.commit();
            }
            return;
        }
        try (LeFiles.Writer w = new LeFiles.Writer(file, "tokenizer")) {
            w.i32(Math.max(1, maxTokenLength));
            for (int i = 0; i < pieces.length; i++) {
                byte[] b = pieceBytes(i);
                w.f32(scores[i]).i32(b.length).bytes(b);
            }
            w.commit();
        }
    }
}
