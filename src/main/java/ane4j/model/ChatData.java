package ane4j.model;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One conversation as training tokens: the messages rendered by the model's chat template, tokenized as
 * {@code apply_chat_template(tokenize=True)} tokenizes (the whole text at once, special tokens in it recognised, no
 * BOS/EOS added beyond what the template writes), and a mask with the loss on the assistant turns only, as mlx-lm's
 * {@code --mask-prompt} and TRL's assistant-only loss train.
 *
 * <p>An assistant turn i spans from the end of {@code render(messages[:i], add_generation_prompt=True)} — the prompt a
 * model answering it would have seen — to the end of {@code render(messages[:i+1])}: its content and the template's
 * end-of-turn text (Qwen3's {@code <|im_end|>}, Llama 3's {@code <|eot_id|>}, Mistral's {@code </s>}). Both must be
 * prefixes of the whole conversation's text, and are for every template whose rendering of a turn does not depend on
 * the turns after it. Where it does (Qwen3 puts an empty think block only into the last turn; Mistral's v0.3 template
 * writes the system message into the last user turn only), the turn is the text that changes when only its content
 * changes, plus the template's eos_token when that follows. A turn neither finds (a content that is not a string) has
 * no loss, which {@link Encoded#unmasked()} counts.
 */
public final class ChatData {
    private static final String TAG = "[chat] ";

    private ChatData() {}

    /** tokens, mask (1: counts in the loss), the rendered text, and how many assistant turns got no loss. */
    public record Encoded(int[] tokens, byte[] mask, String text, int unmasked) {}

    public static Encoded encode(Tokenizer tok, List<? extends Map<String, ?>> messages, String at) {
        ChatTemplate t = tok.chatTemplate();
        if (t == null) throw new ModelFormatException(at + "chat messages need the model's chat template, and this tokenizer has none (no tokenizer_config.json with a chat_template "
                + "or chat_template.jinja beside its tokenizer.json, no tokenizer.chat_template in its GGUF file); give the model's tokenizer with --tokenizer");
        if (!tok.isTokenizerJson())
            throw new ModelFormatException(at + "chat templates write special tokens as text, which ane4j's SentencePiece (llama2.c-style) tokenizer does not recognise; use a byte-level BPE tokenizer.json model");
        if (messages.isEmpty()) throw new ModelFormatException(at + "\"messages\" is empty");
        for (int i = 0; i < messages.size(); i++) {
            Map<String, ?> m = messages.get(i);
            if (!(m.get("role") instanceof String))
                throw new ModelFormatException(at + "message " + i + " has no string \"role\"; each message is {\"role\": …, \"content\": …}");
        }
        String full = t.render(messages, false, null);
        List<int[]> spans = new ArrayList<>(); // char ranges of the assistant turns
        int unmasked = 0;
        for (int i = 0; i < messages.size(); i++) {
            if (!"assistant".equals(messages.get(i).get("role"))) continue;
            String before = t.render(messages.subList(0, i), true, null);
            int end = -1;
            if (full.startsWith(before)) {
                if (i == messages.size() - 1) end = full.length();
                else {
                    String through = t.render(messages.subList(0, i + 1), false, null);
                    if (full.startsWith(through)) end = through.length();
                }
            }
            if (end >= 0) { spans.add(new int[]{before.length(), end}); continue; }
            int[] diff = byContent(t, messages, i, full);
            if (diff == null) unmasked++;
            else spans.add(diff);
        }
        if (spans.isEmpty() && unmasked > 0)
            throw new ModelFormatException(at + "the chat template renders every assistant turn's prompt differently from the whole conversation, so no turn can be masked; "
                    + "ane4j cannot train on this template's conversations");
        int[] ids = tok.encode(full, false, false);
        // each token's byte range in the text (byte-level BPE is lossless, so the pieces' bytes are the text's UTF-8)
        byte[] utf8 = full.getBytes(StandardCharsets.UTF_8);
        String basis = full;
        long total = 0;
        for (int id : ids) total += tok.pieceBytes(id).length;
        if (total != utf8.length) {
            basis = java.text.Normalizer.normalize(full, java.text.Normalizer.Form.NFC); // Qwen's normalizer
            if (total != basis.getBytes(StandardCharsets.UTF_8).length)
                throw new ModelFormatException(at + "the tokens of the rendered chat do not spell its text (" + total + " bytes for " + utf8.length + "); the tokenizer is not lossless");
        }
        long[][] byteSpans = new long[spans.size()][];
        for (int s = 0; s < spans.size(); s++) {
            int[] sp = spans.get(s);
            byteSpans[s] = new long[]{bytesOf(full, basis, sp[0]), bytesOf(full, basis, sp[1])};
        }
        byte[] mask = new byte[ids.length];
        long pos = 0;
        for (int k = 0; k < ids.length; k++) {
            long next = pos + tok.pieceBytes(ids[k]).length;
            // a token counts when it overlaps a turn (a span boundary inside a token, as " Bye" after Mistral's [/INST], takes the token)
            for (long[] sp : byteSpans) if (pos < sp[1] && next > sp[0]) { mask[k] = 1; break; }
            pos = next;
        }
        return new Encoded(ids, mask, full, unmasked);
    }

    private static final String SENTINEL = "ane4j-sentinel-\u2042";

    /**
     * The fallback for a turn whose prompt or text the template renders differently within the whole conversation: the
     * text that changes when only this message's content changes is the turn's, followed by the template's eos_token
     * when it comes next (Qwen3's earlier turns: the answer and {@code <|im_end|>}; Mistral's with a system message). Null
     * when the content is not a string.
     */
    private static int[] byContent(ChatTemplate t, List<? extends Map<String, ?>> messages, int i, String full) {
        if (!(messages.get(i).get("content") instanceof String content) || content.contains(SENTINEL)) return null;
        List<Map<String, Object>> alt = new ArrayList<>();
        for (Map<String, ?> m : messages) alt.add(new java.util.LinkedHashMap<>(m));
        alt.get(i).put("content", SENTINEL);
        String other = t.render(alt, false, null);
        int max = Math.min(full.length(), other.length()), cp = 0, cs = 0;
        while (cp < max && full.charAt(cp) == other.charAt(cp)) cp++;
        while (cs < max - cp && full.charAt(full.length() - 1 - cs) == other.charAt(other.length() - 1 - cs)) cs++;
        int end = full.length() - cs;
        if (end <= cp) return null;
        if (t.specialTokens().get("eos_token") instanceof String eos && !eos.isEmpty() && full.startsWith(eos, end)) end += eos.length();
        return new int[]{cp, end};
    }

    private static long bytesOf(String full, String basis, int chars) {
        String prefix = full.substring(0, chars);
        if (basis != full) prefix = java.text.Normalizer.normalize(prefix, java.text.Normalizer.Form.NFC);
        return prefix.getBytes(StandardCharsets.UTF_8).length;
    }

    /** The prompt of a single user message, ready for the model to answer: {@code add_generation_prompt=True}. */
    public static int[] prompt(Tokenizer tok, String user) {
        ChatTemplate t = tok.chatTemplate();
        if (t == null) throw new ModelFormatException(TAG + "--chat needs the model's chat template, and its tokenizer has none (tokenizer_config.json with a chat_template, "
                + "or a GGUF file's tokenizer.chat_template); give it with --tokenizer");
        if (!tok.isTokenizerJson()) throw new ModelFormatException(TAG + "--chat needs a byte-level BPE tokenizer.json model (chat templates write special tokens as text)");
        return tok.encode(t.render(List.of(Map.of("role", "user", "content", user)), true, null), false, false);
    }
}
