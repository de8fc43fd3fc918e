package ane4j.run;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * An ordered table of {@link Key}s (each key a record below) with the one key normaliser and the one reader of given
 * values: every face (CLI flags, {@code key = value} cell text, a Java map, a run record) reads its settings through
 * {@link #resolve}.
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

    /**
     * One run setting of the table: its canonical name, the spellings it also answers to, its type, default, the
     * values it allows and one line of help. {@link #check} gives a bad value's one-line message; the default {@code ""}
     * means "none" (a path, the backend), "automatic" or "from the preset" (model settings), as the help says.
     */
    public record Key(String name, List<String> aliases, Type type, String defaultValue, List<String> allowed, long min, String help) {

        /** What a value must look like. */
        public enum Type {
            TEXT, PATH, INT, LONG, NUMBER, FRACTION, BOOL, CHOICE, LIST, HEAP;

            /** The picocli-style placeholder in usage lines. */
            public String label() {
                return switch (this) {
                    case TEXT -> "NAME";
                    case PATH -> "FILE";
                    case INT, LONG -> "N";
                    case NUMBER, FRACTION -> "X";
                    case BOOL -> "";
                    case CHOICE -> "WORD";
                    case LIST -> "A,B";
                    case HEAP -> "SIZE";
                };
            }
        }

        public Key {
            aliases = List.copyOf(aliases);
            allowed = List.copyOf(allowed);
        }

        public static Key text(String name, String dflt, String help) { return new Key(name, List.of(), Type.TEXT, dflt, List.of(), 0, help); }

        public static Key path(String name, String help) { return new Key(name, List.of(), Type.PATH, "", List.of(), 0, help); }

        /** A whole number ≥ {@code min}; default {@code ""} means "not set". */
        public static Key integer(String name, long min, String dflt, String help) { return new Key(name, List.of(), Type.INT, dflt, List.of(), min, help); }

        public static Key longInt(String name, long min, String dflt, String help) { return new Key(name, List.of(), Type.LONG, dflt, List.of(), min, help); }

        /** A finite number ≥ 0 ({@code min} 1: > 0). */
        public static Key number(String name, String dflt, String help) { return new Key(name, List.of(), Type.NUMBER, dflt, List.of(), 0, help); }

        public static Key positive(String name, String dflt, String help) { return new Key(name, List.of(), Type.NUMBER, dflt, List.of(), 1, help); }

        /** A number in [0, 1). */
        public static Key fraction(String name, String dflt, String help) { return new Key(name, List.of(), Type.FRACTION, dflt, List.of(), 0, help); }

        public static Key bool(String name, String help) { return new Key(name, List.of(), Type.BOOL, "false", List.of(), 0, help); }

        /** One of {@code allowed} (lower case); default {@code ""} means "automatic". */
        public static Key choice(String name, String dflt, List<String> allowed, String help) { return new Key(name, List.of(), Type.CHOICE, dflt, allowed, 0, help); }

        /** A comma list of {@code allowed} values, none twice (canonical: lower case, no spaces). */
        public static Key list(String name, String dflt, List<String> allowed, String help) { return new Key(name, List.of(), Type.LIST, dflt, allowed, 0, help); }

        public static Key heap(String name, String help) { return new Key(name, List.of(), Type.HEAP, "", List.of(), 0, help); }

        /** The same key, also answering to {@code more} ({@code seq} for {@code seqLen}). */
        public Key alias(String... more) {
            return new Key(name, List.of(more), type, defaultValue, allowed, min, help);
        }

        /** The {@code --kebab-case} spelling of the name: {@code weightDecay} → {@code weight-decay}. */
        public String flag() {
            return "--" + name.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
        }

        /**
         * The value in its canonical form ({@code choice}s lower case, numbers as given), or a one-line message naming the
         * key, the value and what it must be. {@code ""} is accepted where the default is {@code ""}.
         */
        public String check(String value, String tag) {
            String v = value.strip();
            if (v.isEmpty() && defaultValue.isEmpty()) return v;
            String bad = "[" + tag + "] " + name + " = '" + v + "' ";
            switch (type) {
                case TEXT, PATH -> {
                    if (v.isEmpty()) throw new IllegalArgumentException(bad + "is empty");
                    return v;
                }
                case INT, LONG -> {
                    if (!v.matches("[-+]?\\d+")) throw new IllegalArgumentException(bad + "is not " + (min == 1 ? "a whole number ≥ 1" : "an integer"));
                    long max = type == Type.INT ? Integer.MAX_VALUE : Long.MAX_VALUE;
                    long n;
                    try {
                        n = Long.parseLong(v);
                        if (n > max) throw new NumberFormatException();
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException("[" + tag + "] " + name + " = " + v + " is out of range (at most " + max + ")");
                    }
                    if (n < min) throw new IllegalArgumentException("[" + tag + "] " + name + " must be at least " + min + ", got " + n);
                    return Long.toString(n);
                }
                case NUMBER, FRACTION -> {
                    float f;
                    try {
                        f = Float.parseFloat(v);
                    } catch (NumberFormatException e) {
                        f = Float.NaN;
                    }
                    if (!Float.isFinite(f) || f < 0) throw new IllegalArgumentException(bad + "is not a non-negative number");
                    if (min > 0 && f <= 0) throw new IllegalArgumentException("[" + tag + "] " + name + " must be positive, got " + f);
                    if (type == Type.FRACTION && f >= 1) throw new IllegalArgumentException("[" + tag + "] " + name + " must be below 1, got " + f);
                    return Float.toString(f);   // 3e-3 and 0.003 are one setting (a resume compares them as text)
                }
                case BOOL -> {
                    String b = v.toLowerCase(Locale.ROOT);
                    if (b.equals("true") || b.equals("false")) return b;
                    throw new IllegalArgumentException(bad + "is not true or false");
                }
                case CHOICE -> {
                    String c = v.toLowerCase(Locale.ROOT);
                    if (allowed.contains(c)) return c;
                    throw new IllegalArgumentException(bad + "is not one of " + String.join(", ", allowed));
                }
                case LIST -> {
                    List<String> given = new java.util.ArrayList<>();
                    for (String t : v.split(",")) {
                        String item = t.strip().toLowerCase(Locale.ROOT);
                        if (!allowed.contains(item) || given.contains(item))
                            throw new IllegalArgumentException(bad.strip() + ": '" + t.strip() + "' is " + (given.contains(item) ? "given twice" : "not one of " + String.join(",", allowed)));
                        given.add(item);
                    }
                    return String.join(",", given);
                }
                case HEAP -> {
                    if (v.matches("\\d+[kKmMgGtT]?")) return v;
                    throw new IllegalArgumentException(bad + "is not a JVM heap size (e.g. 8g)");
                }
            }
            throw new AssertionError(type);
        }

        /** {@code steps N  micro-steps (one sequence each) [2000]}: one line of {@code --help}. */
        public String usage() {
            String values = type == Type.CHOICE ? String.join("|", allowed) : type == Type.LIST ? String.join(",", allowed) : type.label();
            return String.format(Locale.ROOT, "  %-28s %s%s", flag() + (values.isEmpty() ? "" : " " + values), help,
                    type == Type.BOOL || defaultValue.isEmpty() ? "" : " (default " + defaultValue + ")");
        }
    }
}
