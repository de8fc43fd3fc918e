package ane4j.bench;

import ane4j.model.Json;
import java.util.Collection;
import java.util.Locale;
import java.util.Map;

/** JSON for benchmark results: a writer (maps, collections, numbers with non-finite → null, strings, booleans) and a small reader. */
public final class BenchJson {
    private BenchJson() {}

    public static String write(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value, 0);
        return sb.append('\n').toString();
    }

    private static void write(StringBuilder sb, Object v, int indent) {
        switch (v) {
            case null -> sb.append("null");
            case Map<?, ?> m -> {
                if (m.isEmpty()) { sb.append("{}"); return; }
                boolean flat = m.values().stream().noneMatch(x -> x instanceof Map || x instanceof Collection);
                sb.append('{');
                int i = 0;
                for (var e : m.entrySet()) {
                    if (i++ > 0) sb.append(',');
                    if (!flat) newline(sb, indent + 1); else if (i > 1) sb.append(' ');
                    sb.append(Json.quote(String.valueOf(e.getKey())));
                    sb.append(": ");
                    write(sb, e.getValue(), indent + 1);
                }
                if (!flat) newline(sb, indent);
                sb.append('}');
            }
            case Collection<?> c -> {
                boolean nested = c.stream().anyMatch(x -> x instanceof Map || x instanceof Collection);
                sb.append('[');
                int i = 0;
                for (Object x : c) {
                    if (i++ > 0) sb.append(',');
                    if (nested) newline(sb, indent + 1); else if (i > 1) sb.append(' ');
                    write(sb, x, indent + 1);
                }
                if (nested && !c.isEmpty()) newline(sb, indent);
                sb.append(']');
            }
            case Double d -> number(sb, d);
            case Float f -> number(sb, f.doubleValue());
            case Number n -> sb.append(n);
            case Boolean b -> sb.append(b);
            default -> sb.append(Json.quote(v.toString()));
        }
    }

    private static void number(StringBuilder sb, double d) {
        if (!Double.isFinite(d)) { sb.append("null"); return; }
        if (d == Math.rint(d) && Math.abs(d) < 1e15) { sb.append((long) d); return; }
        sb.append(String.format(Locale.ROOT, "%.6g", d).replaceAll("(\\.\\d*?)0+(e|$)", "$1$2").replace(".e", "e").replaceAll("\\.$", ""));
    }

    private static void newline(StringBuilder sb, int indent) { sb.append('\n').append("  ".repeat(indent)); }

    /** Parses JSON text: objects → LinkedHashMap, arrays → ArrayList, integers → Long, other numbers → Double, null → null. */
    public static Object parse(String text) {
        int[] pos = {0};
        Object v = value(text, pos);
        skip(text, pos);
        if (pos[0] != text.length()) throw new IllegalArgumentException("[bench] JSON: unexpected text at offset " + pos[0]);
        return v;
    }

    private static void skip(String s, int[] p) { while (p[0] < s.length() && Character.isWhitespace(s.charAt(p[0]))) p[0]++; }

    private static Object value(String s, int[] p) {
        skip(s, p);
        if (p[0] >= s.length()) throw new IllegalArgumentException("[bench] JSON: unexpected end");
        char ch = s.charAt(p[0]);
        switch (ch) {
            case '{' -> {
                Map<String, Object> m = new java.util.LinkedHashMap<>();
                p[0]++;
                skip(s, p);
                if (s.charAt(p[0]) == '}') { p[0]++; return m; }
                while (true) {
                    skip(s, p);
                    String k = (String) value(s, p);
                    skip(s, p);
                    expect(s, p, ':');
                    m.put(k, value(s, p));
                    skip(s, p);
                    if (s.charAt(p[0]) == ',') { p[0]++; continue; }
                    expect(s, p, '}');
                    return m;
                }
            }
            case '[' -> {
                java.util.List<Object> l = new java.util.ArrayList<>();
                p[0]++;
                skip(s, p);
                if (s.charAt(p[0]) == ']') { p[0]++; return l; }
                while (true) {
                    l.add(value(s, p));
                    skip(s, p);
                    if (s.charAt(p[0]) == ',') { p[0]++; continue; }
                    expect(s, p, ']');
                    return l;
                }
            }
            case '"' -> {
                StringBuilder sb = new StringBuilder();
                p[0]++;
                while (s.charAt(p[0]) != '"') {
                    char c = s.charAt(p[0]++);
                    if (c == '\\') {
                        char e = s.charAt(p[0]++);
                        switch (e) {
                            case 'n' -> sb.append('\n');
                            case 't' -> sb.append('\t');
                            case 'r' -> sb.append('\r');
                            case 'b' -> sb.append('\b');
                            case 'f' -> sb.append('\f');
                            case 'u' -> { sb.append((char) Integer.parseInt(s.substring(p[0], p[0] + 4), 16)); p[0] += 4; }
                            default -> sb.append(e);
                        }
                    } else sb.append(c);
                }
                p[0]++;
                return sb.toString();
            }
            default -> {
                for (String lit : new String[] {"true", "false", "null"})
                    if (s.startsWith(lit, p[0])) { p[0] += lit.length(); return lit.equals("null") ? null : Boolean.valueOf(lit); }
                int start = p[0];
                while (p[0] < s.length() && "+-0123456789.eE".indexOf(s.charAt(p[0])) >= 0) p[0]++;
                String num = s.substring(start, p[0]);
                try {
                    if (num.matches("-?\\d{1,18}")) return Long.parseLong(num);
                    return Double.parseDouble(num);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("[bench] JSON: unexpected '" + ch + "' at offset " + start);
                }
            }
        }
    }

    private static void expect(String s, int[] p, char c) {
        if (p[0] >= s.length() || s.charAt(p[0]) != c) throw new IllegalArgumentException("[bench] JSON: expected '" + c + "' at offset " + p[0]);
        p[0]++;
    }
}
