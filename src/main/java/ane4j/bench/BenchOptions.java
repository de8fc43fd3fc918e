package ane4j.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Options of a benchmark, from a command line ({@code --quick --model tiny --steps 3}) or a notebook's {@code %bench}
 * line. Flags take no value; every other option takes one. Unknown options are refused with the list of known ones.
 */
public final class BenchOptions {
    /** Options without a value. */
    static final Set<String> FLAGS = Set.of("quick", "compare-torch", "no-save");

    private final Map<String, String> values;
    private final List<String> args;

    private BenchOptions(Map<String, String> values, List<String> args) {
        this.values = values;
        this.args = args;
    }

    public static BenchOptions defaults() { return new BenchOptions(new LinkedHashMap<>(), List.of()); }

    /** From whitespace-separated words, e.g. {@code "--quick --steps 3"}. */
    public static BenchOptions of(String line) {
        String s = line == null ? "" : line.strip();
        return parse(s.isEmpty() ? new String[0] : s.split("\\s+"));
    }

    public static BenchOptions parse(String... args) {
        Map<String, String> v = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--") || a.length() < 3) throw new IllegalArgumentException("[bench] unexpected argument '" + a + "'; options look like --steps 10 or --quick");
            String key = a.substring(2), value;
            int eq = key.indexOf('=');
            if (eq > 0) { value = key.substring(eq + 1); key = key.substring(0, eq); }
            else if (FLAGS.contains(key)) value = "true";
            else {
                if (i + 1 >= args.length) throw new IllegalArgumentException("[bench] option --" + key + " needs a value");
                value = args[++i];
            }
            v.put(key, value);
        }
        return new BenchOptions(v, List.of(args));
    }

    /** A copy with one more option (a flag: value "true"). */
    public BenchOptions with(String key, String value) {
        Map<String, String> v = new LinkedHashMap<>(values);
        v.put(key, value);
        List<String> a = new ArrayList<>(args);
        a.add("--" + key);
        if (!FLAGS.contains(key)) a.add(value);
        return new BenchOptions(v, a);
    }

    /** Refuses options that {@code bench} does not know. */
    void check(String bench, Set<String> known) {
        for (String k : values.keySet())
            if (!known.contains(k) && !FLAGS.contains(k) && !k.equals("json") && !k.equals("backend"))
                throw new IllegalArgumentException("[bench] unknown option --" + k + " for bench " + bench + "; options: "
                        + String.join(", ", new TreeSet<>(known).stream().map(x -> "--" + x).toList()) + ", --json FILE, --backend ane|ref, --quick, --no-save");
    }

    public boolean quick() { return flag("quick"); }

    public boolean flag(String key) {
        String v = values.get(key);
        return v != null && !v.equalsIgnoreCase("false");
    }

    public String get(String key, String dflt) { return values.getOrDefault(key, dflt); }

    public boolean has(String key) { return values.containsKey(key); }

    public int getInt(String key, int dflt) {
        String v = values.get(key);
        if (v == null) return dflt;
        try {
            return Integer.parseInt(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("[bench] --" + key + " " + v + " is not an integer");
        }
    }

    public double getDouble(String key, double dflt) {
        String v = values.get(key);
        if (v == null) return dflt;
        try {
            return Double.parseDouble(v.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("[bench] --" + key + " " + v + " is not a number");
        }
    }

    /** A comma-separated list of integers, e.g. {@code --sizes 256,512}. */
    public int[] getInts(String key, int[] dflt) {
        String v = values.get(key);
        if (v == null) return dflt;
        try {
            return Arrays.stream(v.split(",")).map(String::strip).mapToInt(Integer::parseInt).toArray();
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("[bench] --" + key + " " + v + " is not a comma-separated list of integers");
        }
    }

    /** Pairs {@code AxB,CxD} (e.g. channels×layers), or the default. */
    public int[][] getPairs(String key, int[][] dflt) {
        String v = values.get(key);
        if (v == null) return dflt;
        String[] parts = v.split(",");
        int[][] out = new int[parts.length][];
        for (int i = 0; i < parts.length; i++) {
            String[] ab = parts[i].strip().toLowerCase(java.util.Locale.ROOT).split("x");
            try {
                if (ab.length != 2) throw new NumberFormatException();
                out[i] = new int[] {Integer.parseInt(ab[0]), Integer.parseInt(ab[1])};
                if (out[i][0] <= 0 || out[i][1] <= 0) throw new NumberFormatException();
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("[bench] --" + key + " '" + parts[i] + "' is not AxB with positive integers (e.g. 512x128)");
            }
        }
        return out;
    }

    /** The options as given (for the JSON record). */
    public Map<String, String> values() { return values; }

    public List<String> args() { return args; }
}
