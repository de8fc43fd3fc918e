package ane4j.model;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small strict JSON reader (RFC 8259) for safetensors headers, config.json and golden files.
 * Objects become {@code LinkedHashMap<String, Object>}, arrays {@code List<Object>}, numbers {@code Double}
 * (or {@code Long} when integral without exponent or fraction), and null becomes {@link #NULL}.
 * Errors are {@link IllegalArgumentException}s naming the character offset. {@link #quote} is the one JSON string
 * writer of the project (bench results, doctor reports).
 */
public final class Json {
    /** JSON null (so a map can tell a null value from a missing key). */
    public static final Object NULL = new Object() {
        @Override
        public String toString() { return "null"; }
    };

    private final String s;
    private int pos;

    private Json(String s) { this.s = s; }

    public static Object parse(String text) {
        Json j = new Json(text);
        j.ws();
        Object v = j.value(0);
        j.ws();
        if (j.pos != text.length()) throw j.error("unexpected '" + text.charAt(j.pos) + "' after the value");
        return v;
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("JSON at offset " + pos + ": " + what);
    }

    private void ws() {
        while (pos < s.length() && (s.charAt(pos) == ' ' || s.charAt(pos) == '\n' || s.charAt(pos) == '\r' || s.charAt(pos) == '\t')) pos++;
    }

    private Object value(int depth) {
        if (depth > 64) throw error("nesting deeper than 64");
        if (pos >= s.length()) throw error("unexpected end of text");
        char c = s.charAt(pos);
        return switch (c) {
            case '{' -> object(depth);
            case '[' -> array(depth);
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", NULL);
            default -> {
                if (c == '-' || (c >= '0' && c <= '9')) yield number();
                throw error("unexpected '" + c + "'");
            }
        };
    }

    private Object literal(String word, Object v) {
        if (!s.startsWith(word, pos)) throw error("expected " + word);
        pos += word.length();
        return v;
    }

    private Map<String, Object> object(int depth) {
        Map<String, Object> m = new LinkedHashMap<>();
        pos++;
        ws();
        if (peek() == '}') {
            pos++;
            return m;
        }
        while (true) {
            ws();
            if (peek() != '"') throw error("expected a string key");
            String key = string();
            if (m.containsKey(key)) throw error("duplicate key \"" + key + "\"");
            ws();
            expect(':');
            ws();
            m.put(key, value(depth + 1));
            ws();
            char c = next();
            if (c == '}') return m;
            if (c != ',') { pos--; throw error("expected ',' or '}'"); }
        }
    }

    private List<Object> array(int depth) {
        List<Object> list = new ArrayList<>();
        pos++;
        ws();
        if (peek() == ']') {
            pos++;
            return list;
        }
        while (true) {
            ws();
            list.add(value(depth + 1));
            ws();
            char c = next();
            if (c == ']') return list;
            if (c != ',') { pos--; throw error("expected ',' or ']'"); }
        }
    }

    private String string() {
        expect('"');
        StringBuilder b = new StringBuilder();
        while (true) {
            if (pos >= s.length()) throw error("unterminated string");
            char c = s.charAt(pos++);
            if (c == '"') return b.toString();
            if (c < 0x20) { pos--; throw error("control character in string"); }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = next();
            switch (e) {
                case '"', '\\', '/' -> b.append(e);
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> {
                    if (pos + 4 > s.length()) throw error("short \\u escape");
                    try {
                        b.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
                    } catch (NumberFormatException ex) {
                        throw error("bad \\u escape");
                    }
                    pos += 4;
                }
                default -> { pos--; throw error("bad escape \\" + e); }
            }
        }
    }

    private Object number() {
        int start = pos;
        if (peek() == '-') pos++;
        if (peek() == '0') pos++;
        else if (Character.isDigit(peek())) while (Character.isDigit(peek())) pos++;
        else throw error("bad number");
        boolean integral = true;
        if (peek() == '.') {
            integral = false;
            pos++;
            if (!Character.isDigit(peek())) throw error("bad number");
            while (Character.isDigit(peek())) pos++;
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            pos++;
            if (peek() == '+' || peek() == '-') pos++;
            if (!Character.isDigit(peek())) throw error("bad number");
            while (Character.isDigit(peek())) pos++;
        }
        String t = s.substring(start, pos);
        if (integral && t.length() < 19) return Long.parseLong(t);
        return Double.parseDouble(t);
    }

    private char peek() { return pos < s.length() ? s.charAt(pos) : '\0'; }

    private char next() {
        if (pos >= s.length()) throw error("unexpected end of text");
        return s.charAt(pos++);
    }

    private void expect(char c) {
        if (peek() != c) throw error("expected '" + c + "'");
        pos++;
    }

    /** A JSON string literal for {@code v} (quote, backslash and control characters escaped). */
    public static String quote(String v) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : v.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) b.append(String.format(java.util.Locale.ROOT, "\\u%04x", (int) c));
                    else b.append(c);
                }
            }
        }
        return b.append('"').toString();
    }
}
