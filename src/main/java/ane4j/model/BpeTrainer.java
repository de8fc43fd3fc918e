package ane4j.model;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Fits a byte-pair-encoding vocabulary to some text and returns it as a llama2.c {@link Tokenizer}, so the
 * same encode/decode code serves it and {@code tokenizer.bin} files. Vocabulary: {@code <unk> <s> </s>}, the
 * 256 byte tokens {@code <0x00>…<0xFF>} (fallback for anything unseen), every code point of the text, then merges.
 * Merges are learned inside words (" word", a digit run, a punctuation run or whitespace), most frequent pair
 * first, ties broken by the pieces' byte order; a merge's score is its priority (earlier = higher), which is what
 * llama2.c's encoder ranks by. Deterministic for the same text.
 */
public final class BpeTrainer {
    private BpeTrainer() {}

    private static final Pattern WORD = Pattern.compile(" ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+");

    public static Tokenizer train(List<String> texts, int vocabSize) {
        // base vocabulary
        List<String> pieces = new ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        for (int b = 0; b < 256; b++) pieces.add(String.format("<0x%02X>", b));
        TreeSet<String> chars = new TreeSet<>();
        Map<String, Integer> wordCounts = new TreeMap<>();
        for (String t : texts) {
            String text = " " + t; // the encoder's dummy prefix
            text.codePoints().forEach(cp -> chars.add(new String(Character.toChars(cp))));
            Matcher m = WORD.matcher(text);
            while (m.find()) wordCounts.merge(m.group(), 1, Integer::sum);
        }
        if (pieces.size() + chars.size() > vocabSize)
            throw new IllegalArgumentException("[bpe] vocabSize " + vocabSize + " is smaller than the " + (pieces.size() + chars.size())
                    + " special, byte and character tokens this text needs");
        pieces.addAll(chars);
        Map<String, Integer> ids = new HashMap<>();
        for (int i = 0; i < pieces.size(); i++) ids.putIfAbsent(pieces.get(i), i);
        int nBase = pieces.size();

        // words as symbol sequences with counts
        List<int[]> words = new ArrayList<>();
        List<Integer> counts = new ArrayList<>();
        for (var e : wordCounts.entrySet()) {
            words.add(e.getKey().codePoints().map(cp -> ids.get(new String(Character.toChars(cp)))).toArray());
            counts.add(e.getValue());
        }

        // merge the most frequent adjacent pair until the vocabulary is full or no pair repeats
        while (pieces.size() < vocabSize) {
            Map<Long, Integer> pairCounts = new HashMap<>();
            for (int w = 0; w < words.size(); w++) {
                int[] s = words.get(w);
                for (int i = 0; i + 1 < s.length; i++) pairCounts.merge(((long) s[i] << 32) | s[i + 1], counts.get(w), Integer::sum);
            }
            long best = -1;
            int bestCount = 1;
            String bestPiece = null;
            for (var e : pairCounts.entrySet()) {
                int cnt = e.getValue();
                if (cnt < bestCount) continue;
                String piece = pieces.get((int) (e.getKey() >>> 32)) + pieces.get((int) (long) e.getKey());
                if (cnt > bestCount || bestPiece == null || piece.compareTo(bestPiece) < 0) {
                    best = e.getKey();
                    bestCount = cnt;
                    bestPiece = piece;
                }
            }
            if (best < 0 || bestCount < 2) break;
            int a = (int) (best >>> 32), b = (int) best;
            Integer existing = ids.get(bestPiece);
            int merged;
            if (existing != null) {
                merged = existing; // the same string from a different split: reuse it
            } else {
                merged = pieces.size();
                pieces.add(bestPiece);
                ids.put(bestPiece, merged);
            }
            for (int w = 0; w < words.size(); w++) words.set(w, replace(words.get(w), a, b, merged));
        }

        // scores: merges by priority (first merge highest), everything else 0
        float[] scores = new float[pieces.size()];
        int nMerges = pieces.size() - nBase;
        for (int i = nBase; i < pieces.size(); i++) scores[i] = nMerges - (i - nBase);
        List<byte[]> bytes = new ArrayList<>();
        for (String p : pieces) bytes.add(p.getBytes(StandardCharsets.UTF_8));
        return new Tokenizer(bytes, scores);
    }

    private static int[] replace(int[] s, int a, int b, int merged) {
        int[] out = null;
        int n = 0;
        for (int i = 0; i < s.length; i++) {
            if (i + 1 < s.length && s[i] == a && s[i + 1] == b) {
                if (out == null) {
                    out = new int[s.length - 1];
                    System.arraycopy(s, 0, out, 0, i);
                    n = i;
                }
                out[n++] = merged;
                i++;
            } else if (out != null) {
                out[n++] = s[i];
            }
        }
        return out == null ? s : java.util.Arrays.copyOf(out, n);
    }
}
