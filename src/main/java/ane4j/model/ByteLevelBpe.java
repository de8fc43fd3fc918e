package ane4j.model;

import java.nio.charset.StandardCharsets;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Hugging Face {@code tokenizer.json} with a byte-level BPE model, as GPT-2, Qwen2/3 and Llama 3 ship it, encoded the
 * way the tokenizers library does (tokenizers/src: added_vocabulary.rs, normalizers, pre_tokenizers/split.rs and
 * byte_level.rs, models/bpe):
 * <ol>
 *   <li>added tokens ({@code added_tokens}: {@code <|endoftext|>} …) are cut out of the text first, leftmost-longest;
 *   <li>the rest is normalized (NFC/NFD/NFKC/NFKD or none);
 *   <li>pre-tokenized: {@code Split} by the file's regex (Isolated: matches and the gaps between them are pieces), then
 *       {@code ByteLevel}: a piece's UTF-8 bytes as GPT-2's printable byte characters (bytes_to_unicode), with GPT-2's own
 *       regex first when {@code use_regex};
 *   <li>each piece is merged by BPE: the adjacent pair with the lowest merge rank, leftmost on ties, until none merges
 *       ({@code ignore_merges}: a piece that is itself in the vocabulary is one token); a character outside the
 *       vocabulary becomes its {@code <0xXX>} byte tokens with {@code byte_fallback}, else {@code unk_token}, else nothing.
 * </ol>
 * Decoding maps byte characters back to bytes; added tokens decode to their text.
 */
final class ByteLevelBpe {
    private static final String TAG = "[tokenizer] ";
    // GPT-2's pre-tokenizer regex (tokenizers pre_tokenizers/byte_level.rs, used when use_regex is true)
    private static final String GPT2_REGEX = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
    private static final char[] BYTE_CHAR = new char[256];
    private static final Map<Character, Integer> CHAR_BYTE = new HashMap<>();

    static {
        // GPT-2 bytes_to_unicode: printable bytes map to themselves, the other 68 to U+0100 onwards in byte order
        int n = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            BYTE_CHAR[b] = printable ? (char) b : (char) (256 + n++);
            CHAR_BYTE.put(BYTE_CHAR[b], b);
        }
    }

    record Added(int id, String content, boolean special, boolean lstrip, boolean rstrip) {}

    enum Behavior { ISOLATED, REMOVED, MERGED_WITH_PREVIOUS, MERGED_WITH_NEXT }

    record Split(Pattern pattern, Behavior behavior, boolean invert) {}

    private final Map<String, Integer> vocab;
    private final String[] tokens;                  // id → piece as in the file (byte characters), null for holes
    private final Map<Long, Long> merges;           // (left id, right id) → rank << 32 | merged id
    private final List<Added> added;
    private final Map<Integer, Added> addedById = new HashMap<>();
    private final Normalizer.Form normalization;    // null: none
    private final List<Split> splits;               // in order; ByteLevel's own regex is one of them when use_regex
    private final boolean addPrefixSpace, byteFallback, ignoreMerges;
    private final int unk;
    private final int[] byteTokens = new int[256];  // <0xXX> ids for byte_fallback, -1 when absent
    private final int bos, eos;
    private final Map<String, int[]> cache = new ConcurrentHashMap<>();

    private ByteLevelBpe(Map<String, Integer> vocab, String[] tokens, Map<Long, Long> merges, List<Added> added, Normalizer.Form normalization,
                         List<Split> splits, boolean addPrefixSpace, boolean byteFallback, boolean ignoreMerges, int unk, int bos, int eos) {
        this.vocab = vocab;
        this.tokens = tokens;
        this.merges = merges;
        this.added = added;
        this.normalization = normalization;
        this.splits = splits;
        this.addPrefixSpace = addPrefixSpace;
        this.byteFallback = byteFallback;
        this.ignoreMerges = ignoreMerges;
        this.unk = unk;
        this.bos = bos;
        this.eos = eos;
        for (Added a : added) addedById.put(a.id, a);
        for (int b = 0; b < 256; b++) byteTokens[b] = vocab.getOrDefault(String.format("<0x%02X>", b), -1);
    }

    int vocabSize() { return tokens.length; }

    int bos() { return bos; }

    int eos() { return eos; }

    /** The token's text as the file spells it (byte characters for BPE tokens). */
    String token(int id) { return id >= 0 && id < tokens.length ? tokens[id] : null; }

    boolean isAdded(int id) { return addedById.containsKey(id); }

    // ----------------------------------------------------------------------------------------------
    // reading tokenizer.json

    static ByteLevelBpe parse(String json, String file) {
        Object root;
        try {
            root = Json.parse(json);
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(TAG + file + ": not JSON (" + e.getMessage() + "); give a Hugging Face tokenizer.json or a llama2.c tokenizer.bin");
        }
        if (!(root instanceof Map<?, ?> top) || !(top.get("model") instanceof Map<?, ?> model))
            throw new ModelFormatException(TAG + file + ": no \"model\" object; not a Hugging Face tokenizer.json");
        String at = TAG + file + ": ";
        Object type = model.get("type");
        if (!"BPE".equals(type))
            throw new ModelFormatException(at + "model type " + type + " is not read; ane4j reads byte-level BPE tokenizer.json files (GPT-2, Qwen, Llama 3) and llama2.c tokenizer.bin");
        for (String k : new String[]{"continuing_subword_prefix", "end_of_word_suffix"})
            if (model.get(k) instanceof String s && !s.isEmpty())
                throw new ModelFormatException(at + "BPE " + k + " '" + s + "' is not supported (byte-level BPE has none)");
        if (!(model.get("vocab") instanceof Map<?, ?> v)) throw new ModelFormatException(at + "model.vocab is not an object");
        Map<String, Integer> vocab = HashMap.newHashMap(v.size());
        int maxId = -1;
        Map<Integer, String> tokenOf = HashMap.newHashMap(v.size());
        for (var e : v.entrySet()) {
            if (!(e.getValue() instanceof Long id) || id < 0 || id > 1 << 28) throw new ModelFormatException(at + "vocab entry '" + e.getKey() + "' has id " + e.getValue() + ", not an id");
            String other = tokenOf.putIfAbsent((int) (long) id, (String) e.getKey());
            if (other != null)
                throw new ModelFormatException(at + "vocab entries '" + other + "' and '" + e.getKey() + "' share id " + id
                        + "; each id must name one token (decoding it would be ambiguous): fix model.vocab");
            vocab.put((String) e.getKey(), (int) (long) id);
            maxId = Math.max(maxId, (int) (long) id);
        }
        List<Added> added = new ArrayList<>();
        if (top.get("added_tokens") instanceof List<?> list) {
            for (Object o : list) {
                if (!(o instanceof Map<?, ?> a) || !(a.get("id") instanceof Long id) || !(a.get("content") instanceof String content) || content.isEmpty())
                    throw new ModelFormatException(at + "an added_tokens entry lacks id or content: " + o);
                added.add(new Added((int) (long) id, content, Boolean.TRUE.equals(a.get("special")), Boolean.TRUE.equals(a.get("lstrip")), Boolean.TRUE.equals(a.get("rstrip"))));
                maxId = Math.max(maxId, (int) (long) id);
            }
        }
        String[] tokens = new String[maxId + 1];
        vocab.forEach((t, id) -> tokens[id] = t);
        for (Added a : added) tokens[a.id] = a.content;
        Map<Long, Long> merges = HashMap.newHashMap(model.get("merges") instanceof List<?> ml ? ml.size() : 0);
        if (model.get("merges") instanceof List<?> ml) {
            int rank = 0;
            for (Object m : ml) {
                String a, b;
                if (m instanceof String s && s.indexOf(' ') > 0) { a = s.substring(0, s.indexOf(' ')); b = s.substring(s.indexOf(' ') + 1); }
                else if (m instanceof List<?> pair && pair.size() == 2 && pair.get(0) instanceof String x && pair.get(1) instanceof String y) { a = x; b = y; }
                else throw new ModelFormatException(at + "merge " + rank + " is " + m + ", not \"a b\" or [\"a\", \"b\"]");
                Integer ia = vocab.get(a), ib = vocab.get(b), im = vocab.get(a + b);
                if (ia == null || ib == null || im == null)
                    throw new ModelFormatException(at + "merge " + rank + " (" + a + " " + b + ") names a token missing from the vocabulary; the file is corrupt");
                merges.putIfAbsent(((long) ia << 32) | ib, ((long) rank << 32) | im);
                rank++;
            }
        }
        Normalizer.Form form = normalizer(top.get("normalizer"), at);
        List<Split> splits = new ArrayList<>();
        boolean[] byteLevel = new boolean[2]; // [seen, add_prefix_space]
        preTokenizer(top.get("pre_tokenizer"), splits, byteLevel, at);
        if (!byteLevel[0])
            throw new ModelFormatException(at + "the pre_tokenizer has no ByteLevel step, so this is not a byte-level BPE (SentencePiece-style tokenizer.json "
                    + "files are not read); use the model's llama2.c tokenizer.bin");
        Integer unk = model.get("unk_token") instanceof String u ? vocab.get(u) : null;
        return new ByteLevelBpe(vocab, tokens, merges, added, form, splits, byteLevel[1], Boolean.TRUE.equals(model.get("byte_fallback")),
                Boolean.TRUE.equals(model.get("ignore_merges")), unk == null ? -1 : unk, bosOf(top.get("post_processor"), vocab, added), eosOf(added));
    }

    private static Normalizer.Form normalizer(Object n, String at) {
        if (n == null) return null;
        if (!(n instanceof Map<?, ?> m)) throw new ModelFormatException(at + "normalizer is not an object");
        Object type = m.get("type");
        if ("Sequence".equals(type) && m.get("normalizers") instanceof List<?> l) {
            Normalizer.Form f = null;
            for (Object o : l) {
                Normalizer.Form g = normalizer(o, at);
                if (g != null) {
                    if (f != null && f != g) throw new ModelFormatException(at + "normalizers " + f + " then " + g + " are not supported");
                    f = g;
                }
            }
            return f;
        }
        return switch (String.valueOf(type)) {
            case "NFC" -> Normalizer.Form.NFC;
            case "NFD" -> Normalizer.Form.NFD;
            case "NFKC" -> Normalizer.Form.NFKC;
            case "NFKD" -> Normalizer.Form.NFKD;
            default -> throw new ModelFormatException(at + "normalizer " + type + " is not supported (NFC, NFD, NFKC, NFKD or none)");
        };
    }

    private static void preTokenizer(Object p, List<Split> splits, boolean[] byteLevel, String at) {
        if (p == null) return;
        if (!(p instanceof Map<?, ?> m)) throw new ModelFormatException(at + "pre_tokenizer is not an object");
        Object type = m.get("type");
        switch (String.valueOf(type)) {
            case "Sequence" -> {
                if (!(m.get("pretokenizers") instanceof List<?> l)) throw new ModelFormatException(at + "pre_tokenizer Sequence has no pretokenizers list");
                for (Object o : l) preTokenizer(o, splits, byteLevel, at);
            }
            case "ByteLevel" -> {
                byteLevel[0] = true;
                byteLevel[1] = Boolean.TRUE.equals(m.get("add_prefix_space"));
                if (!Boolean.FALSE.equals(m.get("use_regex"))) splits.add(new Split(regex(GPT2_REGEX, at), Behavior.ISOLATED, false));
            }
            case "Split" -> {
                Pattern pattern;
                if (m.get("pattern") instanceof Map<?, ?> pm && pm.get("Regex") instanceof String r) pattern = regex(r, at);
                else if (m.get("pattern") instanceof Map<?, ?> pm && pm.get("String") instanceof String s) pattern = Pattern.compile(Pattern.quote(s));
                else throw new ModelFormatException(at + "Split pre_tokenizer has no pattern {\"Regex\": …} or {\"String\": …}");
                Behavior b = switch (String.valueOf(m.get("behavior"))) {
                    case "Isolated" -> Behavior.ISOLATED;
                    case "Removed" -> Behavior.REMOVED;
                    case "MergedWithPrevious" -> Behavior.MERGED_WITH_PREVIOUS;
                    case "MergedWithNext" -> Behavior.MERGED_WITH_NEXT;
                    default -> throw new ModelFormatException(at + "Split behavior " + m.get("behavior") + " is not supported (Isolated, Removed, MergedWithPrevious, MergedWithNext)");
                };
                splits.add(new Split(pattern, b, Boolean.TRUE.equals(m.get("invert"))));
            }
            default -> throw new ModelFormatException(at + "pre_tokenizer " + type + " is not supported (Sequence, Split, ByteLevel)");
        }
    }

    // Rust's regex crate: \s, \d, \w and case folding are Unicode-aware; Java's are ASCII unless asked
    private static Pattern regex(String r, String at) {
        try {
            return Pattern.compile(r, Pattern.UNICODE_CHARACTER_CLASS | Pattern.UNICODE_CASE);
        } catch (java.util.regex.PatternSyntaxException e) {
            throw new ModelFormatException(at + "pre_tokenizer regex does not compile in Java: " + e.getDescription() + " in " + r);
        }
    }

    // BOS: the special token a TemplateProcessing post-processor puts first (Llama 3's <|begin_of_text|>); GPT-2 and Qwen have none
    private static int bosOf(Object post, Map<String, Integer> vocab, List<Added> added) {
        if (!(post instanceof Map<?, ?> m)) return -1;
        if ("Sequence".equals(m.get("type")) && m.get("processors") instanceof List<?> l) {
            for (Object o : l) {
                int b = bosOf(o, vocab, added);
                if (b >= 0) return b;
            }
            return -1;
        }
        if (!"TemplateProcessing".equals(m.get("type")) || !(m.get("single") instanceof List<?> single) || single.isEmpty()) return -1;
        if (single.getFirst() instanceof Map<?, ?> first && first.get("SpecialToken") instanceof Map<?, ?> st && st.get("id") instanceof String name) {
            for (Added a : added) if (a.content.equals(name)) return a.id;
            return vocab.getOrDefault(name, -1);
        }
        return -1;
    }

    // EOS: the end-of-text token documents end with (GPT-2 and Qwen base models: <|endoftext|>)
    private static int eosOf(List<Added> added) {
        for (String name : new String[]{"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"})
            for (Added a : added) if (a.content.equals(name)) return a.id;
        return -1;
    }

    // ----------------------------------------------------------------------------------------------
    // encode

    int[] encode(String text) {
        List<Integer> out = new ArrayList<>();
        int start = 0, i = 0;
        while (i < text.length()) {
            Added a = addedAt(text, i);
            if (a == null) { i++; continue; }
            int segEnd = i, next = i + a.content.length();
            if (a.lstrip) while (segEnd > start && Character.isWhitespace(text.charAt(segEnd - 1))) segEnd--;
            if (a.rstrip) while (next < text.length() && Character.isWhitespace(text.charAt(next))) next++;
            encodeSegment(text.substring(start, segEnd), out);
            out.add(a.id);
            start = i = next;
        }
        encodeSegment(text.substring(start), out);
        int[] r = new int[out.size()];
        for (int k = 0; k < r.length; k++) r[k] = out.get(k);
        return r;
    }

    // the longest added token starting at i
    private Added addedAt(String text, int i) {
        Added best = null;
        for (Added a : added)
            if ((best == null || a.content.length() > best.content.length()) && text.startsWith(a.content, i)) best = a;
        return best;
    }

    private void encodeSegment(String segment, List<Integer> out) {
        if (segment.isEmpty()) return;
        String s = normalization == null ? segment : Normalizer.normalize(segment, normalization);
        if (addPrefixSpace && !s.startsWith(" ")) s = " " + s;
        List<String> pieces = List.of(s);
        for (Split sp : splits) {
            List<String> next = new ArrayList<>();
            for (String p : pieces) split(p, sp, next);
            pieces = next;
        }
        for (String p : pieces) {
            if (p.isEmpty()) continue;
            for (int id : word(p)) out.add(id);
        }
    }

    private static void split(String s, Split sp, List<String> out) {
        // (match start, match end) of every match; with invert the matches are the gaps
        List<int[]> parts = new ArrayList<>();
        Matcher m = sp.pattern.matcher(s);
        int at = 0;
        while (m.find()) {
            if (m.end() == m.start()) continue;
            if (m.start() > at) parts.add(new int[]{at, m.start(), sp.invert ? 1 : 0});
            parts.add(new int[]{m.start(), m.end(), sp.invert ? 0 : 1});
            at = m.end();
        }
        if (at < s.length()) parts.add(new int[]{at, s.length(), sp.invert ? 1 : 0});
        String pending = null;
        for (int[] p : parts) {
            String t = s.substring(p[0], p[1]);
            boolean match = p[2] == 1;
            switch (sp.behavior) {
                case ISOLATED -> out.add(t);
                case REMOVED -> { if (!match) out.add(t); }
                case MERGED_WITH_PREVIOUS -> {
                    if (match && !out.isEmpty() && pending == null) out.set(out.size() - 1, out.getLast() + t);
                    else out.add(t);
                }
                case MERGED_WITH_NEXT -> {
                    if (match) pending = pending == null ? t : pending + t;
                    else { out.add(pending == null ? t : pending + t); pending = null; }
                }
            }
        }
        if (pending != null) out.add(pending);
    }

    // one pre-token: its bytes as byte characters, then BPE
    private int[] word(String piece) {
        int[] cached = cache.get(piece);
        if (cached != null) return cached;
        byte[] utf8 = piece.getBytes(StandardCharsets.UTF_8);
        StringBuilder chars = new StringBuilder(utf8.length);
        for (byte b : utf8) chars.append(BYTE_CHAR[b & 0xFF]);
        String w = chars.toString();
        int[] ids;
        Integer whole = vocab.get(w);
        if (ignoreMerges && whole != null) ids = new int[]{whole};
        else ids = bpe(w);
        if (cache.size() < 1 << 18) cache.put(piece, ids);
        return ids;
    }

    private int[] bpe(String w) {
        // symbols: one per character (each is one byte here), as ids
        List<Integer> sym = new ArrayList<>(w.length());
        for (int i = 0; i < w.length(); i++) {
            Integer id = vocab.get(String.valueOf(w.charAt(i)));
            if (id != null) sym.add(id);
            else if (byteFallback && byteTokens[CHAR_BYTE.get(w.charAt(i))] >= 0) sym.add(byteTokens[CHAR_BYTE.get(w.charAt(i))]);
            else if (unk >= 0) sym.add(unk);
        }
        // merge the lowest-ranked adjacent pair (leftmost on ties) until no pair is a merge
        while (sym.size() > 1) {
            long best = Long.MAX_VALUE;
            int at = -1;
            for (int i = 0; i + 1 < sym.size(); i++) {
                Long m = merges.get(((long) sym.get(i) << 32) | sym.get(i + 1));
                if (m != null && m < best) { best = m; at = i; }
            }
            if (at < 0) break;
            sym.set(at, (int) (best & 0xFFFFFFFFL));
            sym.remove(at + 1);
        }
        int[] r = new int[sym.size()];
        for (int i = 0; i < r.length; i++) r[i] = sym.get(i);
        return r;
    }

    // ----------------------------------------------------------------------------------------------
    // decode

    /** The bytes a token stands for: byte characters back to bytes, {@code <0xXX>} to its byte, added tokens as their text. */
    byte[] bytes(int id) {
        String t = token(id);
        if (t == null) return new byte[0];
        if (addedById.containsKey(id)) return t.getBytes(StandardCharsets.UTF_8);
        if (byteFallback && t.length() == 6 && t.startsWith("<0x") && t.endsWith(">")) {
            for (int b = 0; b < 256; b++) if (byteTokens[b] == id) return new byte[]{(byte) b};
        }
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(t.length());
        for (int i = 0; i < t.length(); i++) {
            Integer b = CHAR_BYTE.get(t.charAt(i));
            if (b != null) out.write(b);
            else out.writeBytes(String.valueOf(t.charAt(i)).getBytes(StandardCharsets.UTF_8));
        }
        return out.toByteArray();
    }
}
