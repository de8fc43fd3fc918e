package ane4j.run;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * An ordered table of {@link Key}s with the one key normaliser and the one reader of given values: every face (CLI
 * flags, {@code key = value} cell text, a Java map, a run record) reads its settings through {@link #resolve}.
 */
public final class KeyTable {
    private final String tag;
    private final List<Key> keys;
    private final Map<String, Key> bySpelling = new LinkedHashMap<>();

    /** @param tag the message tag ({@code train} gives {@code [train] …}) */
    public KeyTable(String tag, List<Key> keys) {
        this.tag = tag;
        this.keys = List.copyOf(keys);
        for (Key k : this.keys) {
            spell(k.name(), k);
            for (String a : k.aliases()) spell(a, k);
        }
    }

    private void spell(String spelling, Key k) {
        if (bySpelling.put(fold(spelling), k) != null) throw new IllegalStateException("[" + tag + "] key " + spelling + " is in the table twice");
    }

    /** This table followed by {@code more} keys. */
    public KeyTable plus(String newTag, List<Key> more) {
        List<Key> all = new ArrayList<>(keys);
        all.addAll(more);
        return new KeyTable(newTag, all);
    }

    public List<Key> keys() { return keys; }

    public List<String> names() { return keys.stream().map(Key::name).toList(); }

    public Key key(String canonicalName) {
        Key k = bySpelling.get(fold(canonicalName));
        if (k == null || !k.name().equals(canonicalName)) throw new IllegalArgumentException("[" + tag + "] no key " + canonicalName + " in the table");
        return k;
    }

    /**
     * The canonical name of a spelling, or null: case and {@code -}/{@code _} do not matter ({@code weight-decay},
     * {@code weight_decay}, {@code WeightDecay}), a leading {@code --} and a section prefix ({@code model.dim}, as
     * {@code %train record} prints the run record) are dropped, and aliases ({@code seq}) count.
     */
    public String canonical(String spelling) {
        String s = spelling.strip();
        if (s.startsWith("--")) s = s.substring(2);
        Key k = bySpelling.get(fold(s));
        if (k == null && s.indexOf('.') > 0) k = bySpelling.get(fold(s.substring(s.lastIndexOf('.') + 1)));
        return k == null ? null : k.name();
    }

    private static String fold(String s) {
        return s.replace("-", "").replace("_", "").toLowerCase(Locale.ROOT);
    }

    /** The one message for a key the table does not have: the spelling given and every valid key. */
    public IllegalArgumentException unknown(String spelling) {
        return new IllegalArgumentException("[" + tag + "] unknown option '" + spelling.strip() + "' (options: " + String.join(", ", names()) + ")");
    }

    /**
     * Every key of the table → its checked value in canonical form: the given values (any spelling) over the
     * defaults. An unknown key, a key given twice in two spellings, or a bad value is a one-line message.
     */
    public Map<String, String> resolve(Map<String, String> given) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Key k : keys) out.put(k.name(), k.defaultValue().isEmpty() ? "" : k.check(k.defaultValue(), tag));
        Map<String, String> spelledAs = new LinkedHashMap<>();
        for (var e : given.entrySet()) {
            String name = canonical(e.getKey());
            if (name == null) throw unknown(e.getKey());
            String before = spelledAs.put(name, e.getKey());
            if (before != null && !before.equals(e.getKey()))
                throw new IllegalArgumentException("[" + tag + "] " + name + " is given twice ('" + before + "' and '" + e.getKey() + "'); keep one");
            out.put(name, bySpelling.get(fold(name)).check(e.getValue() == null ? "" : e.getValue(), tag));
        }
        return out;
    }

    /** {@code --help}: one line per key. */
    public String usage() {
        StringBuilder b = new StringBuilder();
        for (Key k : keys) b.append(k.usage()).append('\n');
        return b.toString();
    }
}
