package ane4j.model;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A GGUF file's {@code tokenizer.ggml.*} metadata as one of ane4j's tokenizers. The keys and token types are those of
 * llama.cpp's gguf-py (constants.py: Keys.Tokenizer, TokenType: 1 normal, 2 unknown, 3 control, 4 user-defined,
 * 5 unused, 6 byte):
 * <ul>
 *   <li>{@code gpt2}: byte-level BPE. The normal tokens and the merges become a Hugging Face tokenizer.json's model,
 *       control and user-defined tokens its {@code added_tokens} (control ones special), unused padding tokens are left
 *       out (convert_hf_to_gguf.py names them {@code [PADn]}); the pre-tokenizer regex comes from {@code tokenizer.ggml.pre}
 *       as llama.cpp's llama-vocab.cpp maps it, written as the model's own tokenizer.json spells it. An ane4j export of
 *       the model carries this tokenizer.json.
 *   <li>{@code llama}: SentencePiece BPE with scores, whose pieces spell a space as U+2581; the pieces with spaces and the
 *       scores are llama2.c's tokenizer (dummy prefix, merges by score, {@code <0xXX>} byte fallback), which is
 *       SentencePiece's BPE encoding. Control, unknown and unused tokens never take part in a merge.
 * </ul>
 */
final class GgufTokenizer {
    private static final String TAG = "[gguf] ";
    private static final int NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6;
    // the pre-tokenizer regexes of the models' own tokenizer.json files (Qwen2/Qwen3, Llama 3); GPT-2's is ByteLevel's own
    static final String QWEN2_REGEX = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    static final String LLAMA3_REGEX = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

    private GgufTokenizer() {}

    static Tokenizer build(Map<String, Object> md, String file) {
        String at = TAG + file + ": ";
        Object model = md.get("tokenizer.ggml.model");
        if (model == null) throw new ModelFormatException(at + "no tokenizer.ggml.model in the metadata; the file carries no tokenizer, give one with --tokenizer FILE");
        if (!(md.get("tokenizer.ggml.tokens") instanceof List<?> tokens) || tokens.isEmpty() || !(tokens.getFirst() instanceof String))
            throw new ModelFormatException(at + "tokenizer.ggml.tokens is missing or not a list of strings; the file is corrupt");
        int n = tokens.size();
        long[] types = md.get("tokenizer.ggml.token_type") instanceof long[] t ? t : null;
        if (types != null && types.length != n)
            throw new ModelFormatException(at + "tokenizer.ggml.token_type has " + types.length + " entries for " + n + " tokens; the file is corrupt");
        int bos = id(md, "tokenizer.ggml.bos_token_id", n, at), eos = id(md, "tokenizer.ggml.eos_token_id", n, at);
        Tokenizer t = switch (String.valueOf(model)) {
            case "gpt2" -> {
                boolean addBos = Boolean.TRUE.equals(md.get("tokenizer.ggml.add_bos_token"));
                String json = tokenizerJson(md, tokens, types, addBos ? bos : -1, at);
                yield Tokenizer.fromJson(json, file, addBos ? bos : -1, eos);
            }
            case "llama" -> sentencePiece(md, tokens, types, bos, eos, at);
            default -> throw new ModelFormatException(at + "tokenizer model '" + model + "' is not read (gpt2 byte-level BPE and llama SentencePiece are); give a tokenizer with --tokenizer FILE");
        };
        // the chat template, which sees the special tokens by their text
        if (md.get("tokenizer.chat_template") instanceof String template) {
            Map<String, Object> special = new LinkedHashMap<>();
            if (bos >= 0) special.put("bos_token", tokens.get(bos));
            if (eos >= 0) special.put("eos_token", tokens.get(eos));
            t.withChatTemplate(new ChatTemplate(template, special, file));
        }
        return t;
    }

    private static int id(Map<String, Object> md, String key, int n, String at) {
        Object v = md.get(key);
        if (v == null) return -1;
        if (!(v instanceof Long l) || l < 0 || l >= n) throw new ModelFormatException(at + key + " = " + v + " is not a token id below " + n + "; the file is corrupt");
        return (int) (long) l;
    }

    private static Tokenizer sentencePiece(Map<String, Object> md, List<?> tokens, long[] types, int bos, int eos, String at) {
        if (!(md.get("tokenizer.ggml.scores") instanceof float[] scores) || scores.length != tokens.size())
            throw new ModelFormatException(at + "a llama (SentencePiece) tokenizer needs tokenizer.ggml.scores, one float per token; the file is corrupt");
        if (Boolean.FALSE.equals(md.get("tokenizer.ggml.add_space_prefix")))
            throw new ModelFormatException(at + "tokenizer.ggml.add_space_prefix is false; ane4j's SentencePiece encoding always adds the dummy prefix, so this tokenizer is not read");
        List<byte[]> pieces = new ArrayList<>(tokens.size());
        float[] s = scores.clone();
        for (int i = 0; i < tokens.size(); i++) {
            if (!(tokens.get(i) instanceof String t)) throw new ModelFormatException(at + "token " + i + " is not a string; the file is corrupt");
            pieces.add(t.replace('\u2581', ' ').getBytes(StandardCharsets.UTF_8));
            int type = types == null ? NORMAL : (int) types[i];
            // control (<s>, </s>), unknown and unused pieces are never the result of a merge, as in SentencePiece
            if (type == CONTROL || type == UNKNOWN || type == UNUSED) s[i] = -Float.MAX_VALUE;
        }
        try {
            return Tokenizer.sentencePiece(pieces, s, bos, eos);
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(at + e.getMessage(), e);
        }
    }

    // a Hugging Face tokenizer.json with the same vocabulary, merges, added tokens and pre-tokenizer
    private static String tokenizerJson(Map<String, Object> md, List<?> tokens, long[] types, int bos, String at) {
        if (!(md.get("tokenizer.ggml.merges") instanceof List<?> merges))
            throw new ModelFormatException(at + "a gpt2 (byte-level BPE) tokenizer needs tokenizer.ggml.merges; the file is corrupt");
        String pre = md.get("tokenizer.ggml.pre") instanceof String p ? p : "default";
        Map<String, Object> vocab = new LinkedHashMap<>();
        List<Object> added = new ArrayList<>();
        for (int i = 0; i < tokens.size(); i++) {
            if (!(tokens.get(i) instanceof String t)) throw new ModelFormatException(at + "token " + i + " is not a string; the file is corrupt");
            int type = types == null ? NORMAL : (int) types[i];
            switch (type) {
                case CONTROL, USER_DEFINED -> {
                    Map<String, Object> a = new LinkedHashMap<>();
                    a.put("id", i);
                    a.put("content", t);
                    a.put("single_word", false);
                    a.put("lstrip", false);
                    a.put("rstrip", false);
                    a.put("normalized", false);
                    a.put("special", type == CONTROL);
                    added.add(a);
                }
                case UNUSED -> { } // padding up to the embedding's rows
                case NORMAL, BYTE, UNKNOWN -> vocab.putIfAbsent(t, i);
                default -> throw new ModelFormatException(at + "token " + i + " has type " + type + " (1-6 exist); the file is corrupt");
            }
        }
        Map<String, Object> byteLevel = new LinkedHashMap<>();
        byteLevel.put("type", "ByteLevel");
        byteLevel.put("add_prefix_space", false);
        byteLevel.put("trim_offsets", false);
        Object preTokenizer, normalizer = null;
        switch (pre) {
            case "default", "gpt2", "gpt-2" -> {
                byteLevel.put("use_regex", true);
                preTokenizer = byteLevel;
            }
            case "qwen2" -> {
                byteLevel.put("use_regex", false);
                preTokenizer = Map.of("type", "Sequence", "pretokenizers", List.of(split(QWEN2_REGEX), byteLevel));
                normalizer = Map.of("type", "NFC");
            }
            case "llama3", "llama-bpe", "llama-v3" -> {
                byteLevel.put("use_regex", false);
                preTokenizer = Map.of("type", "Sequence", "pretokenizers", List.of(split(LLAMA3_REGEX), byteLevel));
            }
            default -> throw new ModelFormatException(at + "tokenizer.ggml.pre '" + pre + "' is not known to ane4j (default, gpt2, qwen2, llama-bpe); give the model's tokenizer.json with --tokenizer FILE");
        }
        Map<String, Object> bpe = new LinkedHashMap<>();
        bpe.put("type", "BPE");
        bpe.put("dropout", null);
        bpe.put("unk_token", null);
        bpe.put("continuing_subword_prefix", null);
        bpe.put("end_of_word_suffix", null);
        bpe.put("fuse_unk", false);
        bpe.put("byte_fallback", false);
        bpe.put("ignore_merges", pre.startsWith("llama"));
        bpe.put("vocab", vocab);
        bpe.put("merges", merges);
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("version", "1.0");
        root.put("truncation", null);
        root.put("padding", null);
        root.put("added_tokens", added);
        root.put("normalizer", normalizer);
        root.put("pre_tokenizer", preTokenizer);
        if (bos >= 0) {
            String bosText = (String) tokens.get(bos);
            root.put("post_processor", Map.of("type", "TemplateProcessing",
                    "single", List.of(Map.of("SpecialToken", Map.of("id", bosText, "type_id", 0)), Map.of("Sequence", Map.of("id", "A", "type_id", 0))),
                    "pair", List.of(Map.of("SpecialToken", Map.of("id", bosText, "type_id", 0)), Map.of("Sequence", Map.of("id", "A", "type_id", 0)),
                            Map.of("SpecialToken", Map.of("id", bosText, "type_id", 1)), Map.of("Sequence", Map.of("id", "B", "type_id", 1))),
                    "special_tokens", Map.of(bosText, Map.of("id", bosText, "ids", List.of(bos), "tokens", List.of(bosText)))));
        } else {
            root.put("post_processor", Map.of("type", "ByteLevel", "add_prefix_space", false, "trim_offsets", false, "use_regex", false));
        }
        root.put("decoder", Map.of("type", "ByteLevel", "add_prefix_space", false, "trim_offsets", false, "use_regex", false));
        root.put("model", bpe);
        return Json.compact(root);
    }

    private static Map<String, Object> split(String regex) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", "Split");
        m.put("pattern", Map.of("Regex", regex));
        m.put("behavior", "Isolated");
        m.put("invert", false);
        return m;
    }
}
