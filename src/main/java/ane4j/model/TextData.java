package ane4j.model;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Text tokenized as it is opened, in the layouts {@code mlx_lm.lora} reads (mlx_lm/tuner/datasets.py):
 * <ul>
 *   <li>{@code .jsonl}: one JSON object per line, {@code {"text": …}} (TextDataset: the text's tokens, EOS appended) or
 *       {@code {"prompt": …, "completion": …}} (CompletionsDataset with mask_prompt: only the completion's tokens and its
 *       EOS count in the loss). Without a chat template the prompt is encoded as text (with BOS when the tokenizer has
 *       one), the completion is encoded on its own and follows it directly; with one (the tokenizer's
 *       {@link Tokenizer#chatTemplate()}) the pair is a user and an assistant message;</li>
 *   <li>{@code .jsonl} with {@code {"messages": [{"role", "content"}…]}} (ChatDataset): the conversation rendered by the
 *       model's chat template, the loss on the assistant turns only ({@link ChatData});</li>
 *   <li>{@code .txt}: plain UTF-8 text; a line that is exactly {@code <|endoftext|>} (TinyStories V2's separator) ends a
 *       document, else the file is one document.</li>
 * </ul>
 * Each document starts with the tokenizer's BOS (if any) and ends with its EOS; documents follow each other in one
 * sequence that training windows cross, as in llama2.c's pretokenized shards.
 */
public final class TextData implements TokenData {
    private static final String TAG = "[data] ";
    private static final String TXT_SEPARATOR = "<|endoftext|>";

    private final String name;
    private final int[] tokens;
    private final byte[] mask;        // null: every token counts
    private final int[] documentStarts;
    private final int from, to;
    private final int maxToken;

    private TextData(String name, int[] tokens, byte[] mask, int[] documentStarts, int from, int to, int maxToken) {
        this.name = name;
        this.tokens = tokens;
        this.mask = mask;
        this.documentStarts = documentStarts;
        this.from = from;
        this.to = to;
        this.maxToken = maxToken;
    }

    static boolean isText(Path file) {
        String n = file.getFileName().toString().toLowerCase(Locale.ROOT);
        return n.endsWith(".txt") || n.endsWith(".jsonl") || n.endsWith(".json");
    }

    /** Reads and tokenizes {@code file}; every id must be below {@code vocabSize}, and there must be one window of {@code seqLen + 1}. */
    public static TextData open(Path file, Tokenizer tokenizer, int vocabSize, int seqLen) {
        String name = file.getFileName().toString();
        if (tokenizer.vocabSize() > vocabSize)
            throw new ModelFormatException(TAG + name + ": the tokenizer has " + tokenizer.vocabSize() + " tokens but the model's vocabSize is " + vocabSize
                    + "; give the model's own tokenizer with --tokenizer FILE");
        Builder b = new Builder(tokenizer);
        if (Files.isDirectory(file)) throw new ModelFormatException(TAG + file + " is a folder, not a text or JSON-lines file");
        InputFile.requireRegular(file, "data");
        try (BufferedReader in = new BufferedReader(new java.io.InputStreamReader(Files.newInputStream(file),
                StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)))) {
            if (name.toLowerCase(Locale.ROOT).endsWith(".txt")) readText(in, b);
            else readJsonLines(in, b, name);
        } catch (java.nio.file.NoSuchFileException e) {
            throw new ModelFormatException(TAG + file + ": no such file");
        } catch (CharacterCodingException e) {
            throw new ModelFormatException(TAG + name + ": not UTF-8 text (" + e.getMessage() + "); convert it to UTF-8 (iconv -t UTF-8)");
        } catch (IOException e) {
            throw new ModelFormatException(TAG + "cannot read " + file + ": " + LeFiles.reason(e));
        }
        TextData d = b.build(name);
        if (d.size() < (long) seqLen + 1)
            throw new ModelFormatException(TAG + name + ": " + d.size() + " tokens, need at least seqLen+1 = " + (seqLen + 1) + " for one training window; give more text");
        return d;
    }

    private static void readText(BufferedReader in, Builder b) throws IOException {
        StringBuilder doc = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.strip().equals(TXT_SEPARATOR)) {
                b.text(doc.toString());
                doc.setLength(0);
            } else doc.append(line).append('\n');
        }
        b.text(doc.toString());
    }

    private static void readJsonLines(BufferedReader in, Builder b, String name) throws IOException {
        int lineNo = 0;
        for (String line; (line = in.readLine()) != null; ) {
            lineNo++;
            if (line.isBlank()) continue;
            String at = TAG + name + " line " + lineNo + ": ";
            Object v;
            try {
                v = Json.parse(line);
            } catch (IllegalArgumentException e) {
                throw new ModelFormatException(at + "not JSON (" + e.getMessage() + "); each line must be one object, {\"text\": …} or {\"prompt\": …, \"completion\": …}");
            }
            if (!(v instanceof Map<?, ?> m))
                throw new ModelFormatException(at + "not a JSON object; each line must be {\"text\": …} or {\"prompt\": …, \"completion\": …}");
            if (m.get("prompt") instanceof String prompt && m.get("completion") instanceof String completion) {
                // with a chat model, as mlx-lm's CompletionsDataset: a user turn and the assistant's answer, rendered by its template
                if (b.tok.chatTemplate() != null) b.chat(List.of(Map.of("role", "user", "content", prompt), Map.of("role", "assistant", "content", completion)), at);
                else b.completion(prompt, completion);
            } else if (m.get("text") instanceof String text) b.text(text);
            else if (m.get("messages") instanceof List<?> msgs) {
                List<Map<String, ?>> list = new java.util.ArrayList<>();
                for (Object o : msgs) {
                    if (!(o instanceof Map<?, ?> mm)) throw new ModelFormatException(at + "\"messages\" holds " + o + ", not a {\"role\": …, \"content\": …} object");
                    @SuppressWarnings("unchecked") Map<String, ?> typed = (Map<String, ?>) mm;
                    list.add(typed);
                }
                b.chat(list, at);
            } else if (m.containsKey("messages"))
                throw new ModelFormatException(at + "\"messages\" is not a list of {\"role\": …, \"content\": …} objects");
            else throw new ModelFormatException(at + "no string \"text\", nor \"prompt\" and \"completion\" (keys: " + String.join(", ", m.keySet().stream().map(Object::toString).toList())
                    + "); write {\"text\": …} or {\"prompt\": …, \"completion\": …}");
        }
    }

    // tokens, mask and document starts as they are appended
    private static final class Builder {
        private final Tokenizer tok;
        private int[] tokens = new int[1 << 12];
        private byte[] mask = new byte[1 << 12];
        private int[] starts = new int[64];
        private int n, docs, max = -1;
        private boolean masked;

        Builder(Tokenizer tok) { this.tok = tok; }

        void text(String text) {
            if (text.isBlank()) return;
            start();
            add(tok.encode(text, tok.bosId() >= 0, false), (byte) 1);
            end();
        }

        // a conversation rendered by the model's chat template; the loss on the assistant turns (ChatData)
        void chat(List<? extends Map<String, ?>> messages, String at) {
            ChatData.Encoded e = ChatData.encode(tok, messages, at);
            start();
            for (int i = 0; i < e.tokens().length; i++) add(new int[]{e.tokens()[i]}, e.mask()[i]);
            masked = true;
        }

        void completion(String prompt, String completion) {
            start();
            add(tok.encode(prompt, tok.bosId() >= 0, false), (byte) 0);
            add(tok.encodeContinuation(completion), (byte) 1);
            end();
            masked = true;
        }

        private void start() {
            if (docs == starts.length) starts = Arrays.copyOf(starts, docs * 2);
            starts[docs++] = n;
        }

        private void end() {
            int eos = tok.eosId();
            if (eos >= 0 && (n == 0 || tokens[n - 1] != eos)) add(new int[]{eos}, (byte) 1);
        }

        private void add(int[] ids, byte counts) {
            if ((long) n + ids.length > Integer.MAX_VALUE - 16)
                throw new ModelFormatException(TAG + "more than 2^31 tokens of text; split the data into token files (uint16/uint32)");
            if (n + ids.length > tokens.length) {
                int cap = (int) Math.min(Integer.MAX_VALUE - 16, Math.max((long) tokens.length * 2, n + ids.length));
                tokens = Arrays.copyOf(tokens, cap);
                mask = Arrays.copyOf(mask, cap);
            }
            for (int id : ids) {
                max = Math.max(max, id);
                mask[n] = counts;
                tokens[n++] = id;
            }
        }

        TextData build(String name) {
            return new TextData(name, Arrays.copyOf(tokens, n), masked ? Arrays.copyOf(mask, n) : null, Arrays.copyOf(starts, docs), 0, n, max);
        }
    }

    @Override public String name() { return name; }

    @Override public long size() { return to - from; }

    @Override public int maxToken() { return maxToken; }

    /** The number of documents (lines, or text between separators) that start in this data. */
    public int documents() {
        int c = 0;
        for (int s : documentStarts) if (s >= from && s < to) c++;
        return c;
    }

    @Override public void read(long pos, int[] dst, int dstIndex, int n) {
        check(pos, n);
        System.arraycopy(tokens, from + (int) pos, dst, dstIndex, n);
    }

    @Override public boolean masked() { return mask != null; }

    @Override public void readMask(long pos, byte[] dst, int dstIndex, int n) {
        check(pos, n);
        if (mask == null) TokenData.fillAll(dst, dstIndex, n);
        else System.arraycopy(mask, from + (int) pos, dst, dstIndex, n);
    }

    private void check(long pos, int n) {
        if (pos < 0 || n < 0 || pos + n > size()) throw new IndexOutOfBoundsException(TAG + name + ": window [" + pos + ", " + (pos + n) + ") of " + size() + " tokens");
    }

    @Override public TokenData range(long a, long b) {
        if (a < 0 || b > size() || a > b) throw new IndexOutOfBoundsException(TAG + name + ": range [" + a + ", " + b + ") of " + size() + " tokens");
        return new TextData(name, tokens, mask, documentStarts, from + (int) a, from + (int) b, maxToken);
    }

    /** The held-out tail starts at a document: the first document start at or after the plain cut, else the last one before it. */
    @Override public long splitPoint(double fraction) {
        long cut = size() - (long) Math.floor(size() * fraction) + from;
        int after = -1, before = -1;
        for (int s : documentStarts) {
            if (s <= from || s >= to) continue;
            if (s >= cut) { after = s; break; }
            before = s;
        }
        long chosen = after >= 0 && (before < 0 || after - cut <= cut - before) ? after : before >= 0 ? before : cut;
        return chosen - from;
    }

    @Override public void close() {}
}
