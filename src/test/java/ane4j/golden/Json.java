package ane4j.golden;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A minimal JSON reader for test resources: objects become {@link LinkedHashMap} (key order kept), arrays
 * {@link ArrayList}, numbers {@link Long} (integers that fit) or {@link Double}, plus String, Boolean and null.
 * Errors are {@link IllegalArgumentException}s tagged {@code [json]} with line:column.
 */
public final class Json {
    private final String text;
    private int pos;

    private Json(String text) { this.text = text; }

    public static Object parse(String text) {
        Json p = new Json(text);
        p.skipWhitespace();
        Object value = p.value();
        p.skipWhitespace();
        if (p.pos < text.length()) throw p.error("expected end of input, found '" + text.charAt(p.pos) + "'");
        return value;
    }

    private Object value() {
        if (pos >= text.length()) throw error("expected a value, found end of input");
        char ch = text.charAt(pos);
        return switch (ch) {
            case '{' -> object();
            case '[' -> array();
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", null);
            default -> {
                if (ch == '-' || (ch >= '0' && ch <= '9')) yield number();
                throw error("expected a value, found '" + ch + "'");
            }
        };
    }

    private Map<String, Object> object() {
        Map<String, Object> map = new LinkedHashMap<>();
        pos++;
        skipWhitespace();
        if (peek() == '}') { pos++; return map; }
        while (true) {
            skipWhitespace();
            if (peek() != '"') throw error("expected a string key");
            String key = string();
            skipWhitespace();
            expect(':');
            skipWhitespace();
            if (map.containsKey(key)) throw error("duplicate key \"" + key + "\"");
            map.put(key, value());
            skipWhitespace();
            char ch = peek();
            pos++;
            if (ch == '}') return map;
            if (ch != ',') { pos--; throw error("expected ',' or '}' in object"); }
        }
    }

    private List<Object> array() {
        List<Object> list = new ArrayList<>();
        pos++;
        skipWhitespace();
        if (peek() == ']') { pos++; return list; }
        while (true) {
            skipWhitespace();
            list.add(value());
            skipWhitespace();
            char ch = peek();
            pos++;
            if (ch == ']') return list;
            if (ch != ',') { pos--; throw error("expected ',' or ']' in array"); }
        }
    }

    private String string() {
        pos++;
        StringBuilder sb = new StringBuilder();
        while (true) {
            if (pos >= text.length()) throw error("unterminated string");
            char ch = text.charAt(pos++);
            if (ch == '"') return sb.toString();
            if (ch < 0x20) { pos--; throw error("control character in string"); }
            if (ch != '\\') { sb.append(ch); continue; }
            if (pos >= text.length()) throw error("unterminated escape");
            char esc = text.charAt(pos++);
            switch (esc) {
                case '"', '\\', '/' -> sb.append(esc);
                case 'b' -> sb.append('\b');
                case 'f' -> sb.append('\f');
                case 'n' -> sb.append('\n');
                case 'r' -> sb.append('\r');
                case 't' -> sb.append('\t');
                case 'u' -> {
                    if (pos + 4 > text.length()) throw error("truncated \\u escape");
                    int code = 0;
                    for (int i = 0; i < 4; i++) {
                        int d = Character.digit(text.charAt(pos + i), 16);
                        if (d < 0) throw error("bad hex digit in \\u escape");
                        code = code * 16 + d;
                    }
                    pos += 4;
                    sb.append((char) code);
                }
                default -> { pos--; throw error("unknown escape '\\" + esc + "'"); }
            }
        }
    }

    private Object number() {
        int start = pos;
        if (peek() == '-') pos++;
        int intStart = pos;
        while (pos < text.length() && Character.isDigit(text.charAt(pos))) pos++;
        if (pos == intStart) throw error("expected a digit");
        if (pos - intStart > 1 && text.charAt(intStart) == '0') { pos = intStart + 1; throw error("leading zero in number"); }
        boolean integral = true;
        if (pos < text.length() && text.charAt(pos) == '.') {
            integral = false;
            pos++;
            int fracStart = pos;
            while (pos < text.length() && Character.isDigit(text.charAt(pos))) pos++;
            if (pos == fracStart) throw error("expected a digit after '.'");
        }
        if (pos < text.length() && (text.charAt(pos) == 'e' || text.charAt(pos) == 'E')) {
            integral = false;
            pos++;
            if (pos < text.length() && (text.charAt(pos) == '+' || text.charAt(pos) == '-')) pos++;
            int expStart = pos;
            while (pos < text.length() && Character.isDigit(text.charAt(pos))) pos++;
            if (pos == expStart) throw error("expected a digit in exponent");
        }
        String s = text.substring(start, pos);
        if (integral && pos - intStart <= 18) return Long.parseLong(s);
        return Double.parseDouble(s);
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, pos)) throw error("expected '" + word + "'");
        pos += word.length();
        return value;
    }

    private void expect(char ch) {
        if (peek() != ch) throw error("expected '" + ch + "'");
        pos++;
    }

    private char peek() {
        if (pos >= text.length()) throw error("unexpected end of input");
        return text.charAt(pos);
    }

    private void skipWhitespace() {
        while (pos < text.length()) {
            char ch = text.charAt(pos);
            if (ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t') return;
            pos++;
        }
    }

    private IllegalArgumentException error(String what) {
        int line = 1, col = 1;
        for (int i = 0; i < Math.min(pos, text.length()); i++) {
            if (text.charAt(i) == '\n') { line++; col = 1; } else col++;
        }
        return new IllegalArgumentException("[json] " + line + ":" + col + ": " + what);
    }
}
