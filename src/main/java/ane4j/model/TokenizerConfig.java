package ane4j.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The chat template and special tokens of a Hugging Face model folder: {@code chat_template.jinja} (where transformers
 * 4.43+ saves it) or {@code tokenizer_config.json}'s {@code chat_template} (a string, or a list of named templates of
 * which "default" is used), and its {@code bos_token}, {@code eos_token}, … (strings or {"content": …} objects), which the
 * template sees by name. Written back with an export, so transformers, mlx-lm and ane4j render chats alike from it.
 */
public final class TokenizerConfig {
    public static final String FILE = "tokenizer_config.json", JINJA = "chat_template.jinja";
    private static final String TAG = "[tokenizer] ";
    static final List<String> SPECIAL = List.of("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token");

    private TokenizerConfig() {}

    /** The chat template beside a tokenizer.json, or null when the folder has none. */
    public static ChatTemplate read(Path tokenizerJson) {
        Path dir = tokenizerJson.toAbsolutePath().getParent();
        if (dir == null) return null;
        Path cfg = dir.resolve(FILE), jinja = dir.resolve(JINJA);
        Map<String, Object> tokens = new LinkedHashMap<>();
        String template = null;
        try {
            if (Files.isRegularFile(cfg)) {
                if (Files.size(cfg) > 64L << 20) throw new ModelFormatException(TAG + cfg + ": " + Files.size(cfg) + " bytes is not a tokenizer_config.json");
                Object root;
                try {
                    root = Json.parse(Files.readString(cfg));
                } catch (IllegalArgumentException e) {
                    throw new ModelFormatException(TAG + cfg + ": not JSON (" + e.getMessage() + ")");
                }
                if (!(root instanceof Map<?, ?> m)) throw new ModelFormatException(TAG + cfg + ": not a JSON object");
                for (String k : SPECIAL) {
                    Object v = m.get(k);
                    if (v instanceof Map<?, ?> o) v = o.get("content");
                    if (v instanceof String s) tokens.put(k, s);
                }
                Object t = m.get("chat_template");
                if (t instanceof String s) template = s;
                else if (t instanceof List<?> l) {
                    for (Object o : l)
                        if (o instanceof Map<?, ?> named && "default".equals(named.get("name")) && named.get("template") instanceof String s) template = s;
                    if (template == null) throw new ModelFormatException(TAG + cfg + ": chat_template is a list without a \"default\" template");
                } else if (t != null) throw new ModelFormatException(TAG + cfg + ": chat_template is neither a string nor a list of named templates");
            }
            if (Files.isRegularFile(jinja)) template = Files.readString(jinja);
        } catch (IOException e) {
            throw new ModelFormatException(TAG + "cannot read " + dir + "'s " + FILE + ": " + LeFiles.reason(e));
        }
        return template == null ? null : new ChatTemplate(template, tokens, dir.getFileName() + "/" + (Files.isRegularFile(jinja) ? JINJA : FILE));
    }

    /** Writes {@code dir/tokenizer_config.json} with the template and its special tokens (nothing when there is no template). */
    public static boolean write(Path dir, ChatTemplate t) {
        if (t == null) return false;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("tokenizer_class", "PreTrainedTokenizerFast");
        m.put("clean_up_tokenization_spaces", false);
        m.putAll(t.specialTokens());
        m.put("chat_template", t.source());
        try (LeFiles.Writer w = new LeFiles.Writer(dir.resolve(FILE), "export")) {
            w.bytes(Json.pretty(m).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            w.commit();
        }
        return true;
    }
}
