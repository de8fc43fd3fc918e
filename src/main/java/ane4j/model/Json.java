package ane4j.model;

import com.google.gson.FormattingStyle;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonParseException;
import com.google.gson.Strictness;
import com.google.gson.ToNumberPolicy;
import com.google.gson.TypeAdapter;
import com.google.gson.TypeAdapterFactory;
import com.google.gson.reflect.TypeToken;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import com.google.gson.stream.JsonWriter;
import java.io.IOException;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every JSON file of the project (config.json, safetensors headers, metrics.jsonl, run records, bench results, doctor
 * reports) is read and written here, through Gson, which the Jupyter protocol (jjava) already puts on the classpath.
 * Reading is strict RFC 8259: objects become {@code Map<String, Object>} in file order, arrays {@code List<Object>},
 * numbers {@code Long} when they fit, else {@code Double}, and null {@code null}. Writing takes maps, collections,
 * arrays, numbers (NaN and ±∞ become null), booleans and strings; any other value is written as its {@code toString()}.
 * A bad text is an {@link IllegalArgumentException} "JSON: … at line L column C path $.key".
 */
public final class Json {
    private Json() {}

    /**
     * Numbers with NaN/±∞ as null (JSON has neither), values JSON knows as they are, anything else (a path, an enum, a
     * record) as its {@code toString()}: nothing is written by reflection.
     */
    private static final TypeAdapterFactory PLAIN_VALUES = new TypeAdapterFactory() {
        @Override
        @SuppressWarnings("unchecked")
        public <T> TypeAdapter<T> create(Gson gson, TypeToken<T> type) {
            Class<?> raw = type.getRawType();
            if (raw == Double.class || raw == double.class || raw == Float.class || raw == float.class)
                return (TypeAdapter<T>) new TypeAdapter<Number>() {
                    @Override public void write(JsonWriter out, Number v) throws IOException {
                        if (v == null || !Double.isFinite(v.doubleValue())) out.nullValue();
                        else out.value(v);
                    }

                    @Override public Number read(JsonReader in) { throw new UnsupportedOperationException(); }
                };
            if (raw == Object.class || Map.class.isAssignableFrom(raw) || Collection.class.isAssignableFrom(raw) || raw.isArray() || raw.isPrimitive()
                    || Number.class.isAssignableFrom(raw) || raw == String.class || raw == Boolean.class || raw == Character.class
                    || com.google.gson.JsonElement.class.isAssignableFrom(raw))
                return null;
            return (TypeAdapter<T>) new TypeAdapter<Object>() {
                @Override public void write(JsonWriter out, Object v) throws IOException {
                    if (v == null) out.nullValue();
                    else out.value(v.toString());
                }

                @Override public Object read(JsonReader in) { throw new UnsupportedOperationException(); }
            };
        }
    };

    private static final Gson COMPACT = writer().create();
    private static final Gson PRETTY = writer().setFormattingStyle(FormattingStyle.PRETTY.withIndent("  ")).create();

    private static GsonBuilder writer() {
        return new GsonBuilder().serializeNulls().disableHtmlEscaping().registerTypeAdapterFactory(PLAIN_VALUES);
    }

    /**
     * The value of a JSON text; duplicate keys: the last one wins (as Python's json and Gson read them). Nesting is limited
     * to {@value #MAX_DEPTH} levels, so a hostile line of 100,000 brackets is refused instead of building 100,000 lists
     * (Gson 2.11's own reader has no nesting limit).
     */
    public static Object parse(String text) {
        if (text.strip().isEmpty()) throw new IllegalArgumentException("JSON: no value (the text is empty)");
        return read(text, false);
    }

    /**
     * The value of a JSON text in which no object has the same key twice (at any depth): the safetensors format requires
     * it ("Duplicate keys are disallowed", huggingface/safetensors README, Format), since readers that keep the first and
     * readers that keep the last would see different tensors. Nesting is limited as in {@link #parse}.
     */
    public static Object parseNoDuplicateKeys(String text) { return read(text, true); }

    static final int MAX_DEPTH = 64;

    private static Object read(String text, boolean refuseDuplicates) {
        try (JsonReader in = new JsonReader(new StringReader(text))) {
            in.setStrictness(Strictness.STRICT);
            Object v = readValue(in, 0, refuseDuplicates);
            if (in.peek() != JsonToken.END_DOCUMENT) throw new IllegalArgumentException("JSON: text after the value " + where(in));
            return v;
        } catch (JsonParseException | IOException e) {
            throw new IllegalArgumentException(message(e, text), e);
        }
    }

    private static Object readValue(JsonReader in, int depth, boolean refuseDuplicates) throws IOException {
        if (depth > MAX_DEPTH) throw new IllegalArgumentException("JSON: nesting deeper than " + MAX_DEPTH + " " + where(in));
        switch (in.peek()) {
            case BEGIN_OBJECT -> {
                Map<String, Object> m = new LinkedHashMap<>();
                in.beginObject();
                while (in.hasNext()) {
                    String key = in.nextName();
                    if (refuseDuplicates && m.containsKey(key)) throw new IllegalArgumentException("JSON: duplicate key \"" + key + "\" " + where(in));
                    m.put(key, readValue(in, depth + 1, refuseDuplicates));
                }
                in.endObject();
                return m;
            }
            case BEGIN_ARRAY -> {
                List<Object> l = new ArrayList<>();
                in.beginArray();
                while (in.hasNext()) l.add(readValue(in, depth + 1, refuseDuplicates));
                in.endArray();
                return l;
            }
            case STRING -> { return in.nextString(); }
            case NUMBER -> { return ToNumberPolicy.LONG_OR_DOUBLE.readNumber(in); }
            case BOOLEAN -> { return in.nextBoolean(); }
            case NULL -> {
                in.nextNull();
                return null;
            }
            default -> throw new IllegalArgumentException("JSON: no value " + where(in));
        }
    }

    /** One line of JSON (metrics.jsonl records, safetensors headers). */
    public static String compact(Object value) { return COMPACT.toJson(value); }

    /** Indented by two spaces, one member per line, ending with a newline (files people read: config.json, reports). */
    public static String pretty(Object value) { return PRETTY.toJson(value) + "\n"; }

    /** A JSON string literal (for writers that still assemble their text; new code writes maps with {@link #compact}/{@link #pretty}). */
    public static String quote(String s) { return COMPACT.toJson(s); }

    private static final java.util.regex.Pattern AT = java.util.regex.Pattern.compile("at line (\\d+) column (\\d+)");

    /**
     * Gson's message on one line, without its pointer to the troubleshooting guide and without its advice to the
     * programmer ("Use JsonReader.setStrictness(Strictness.LENIENT) to accept malformed JSON", which a user cannot act on:
     * the 2026-12-05 reliability report, H-d); a NaN or Infinity where the text went wrong is named.
     */
    static String message(Exception e, String text) {
        String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        if (m.startsWith("JSON: ")) return m;
        m = m.replaceFirst("\\s*See https://github\\.com/google/gson/\\S*", "").replaceFirst("^com\\.google\\.gson\\.stream\\.MalformedJsonException: ", "");
        m = m.replaceFirst("Use JsonReader\\.setStrictness\\(Strictness\\.LENIENT\\) to accept malformed JSON ", "not valid JSON ")
                .replaceFirst("Use JsonReader\\.setLenient\\(true\\) to accept malformed JSON ", "not valid JSON ");
        String bad = tokenAt(m, text);
        if (bad != null) m += " (" + bad + " is not JSON: write a number, or null)";
        return "JSON: " + m.strip().replace('\n', ' ');
    }

    /** "NaN", "Infinity" or "-Infinity" when the text holds one at Gson's reported line and column, else null. */
    private static String tokenAt(String message, String text) {
        java.util.regex.Matcher at = AT.matcher(message);
        if (text == null || !at.find()) return null;
        try {
            int line = Integer.parseInt(at.group(1)), col = Integer.parseInt(at.group(2));
            int pos = 0;
            for (int l = 1; l < line; l++) {
                int nl = text.indexOf('\n', pos);
                if (nl < 0) return null;
                pos = nl + 1;
            }
            // Gson reports the column just past the token it refused; look around it
            String around = text.substring(Math.max(0, pos + col - 12), Math.min(text.length(), pos + col + 10));
            for (String t : new String[] {"-Infinity", "Infinity", "NaN"}) if (around.contains(t)) return t;
        } catch (RuntimeException ignored) {
            // a message without a usable position
        }
        return null;
    }

    private static String where(JsonReader in) { return in.toString().replaceFirst("^JsonReader", "").strip(); }
}
