package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The one JSON reader/writer (Gson): round trips, number types, strictness, and safetensors' duplicate-key rule. */
class JsonTest {
    @TempDir Path tmp;

    private static Map<String, Object> sample() {
        Map<String, Object> inner = new LinkedHashMap<>();
        inner.put("ok", true);
        inner.put("none", null);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", "a \"quoted\" <tag> & \\ é\n");
        m.put("count", 42L);
        m.put("big", 1L << 40);
        m.put("ratio", 0.25);
        m.put("list", new ArrayList<>(Arrays.asList(1L, 2.5, "x", null, inner)));
        m.put("empty", new LinkedHashMap<>());
        return m;
    }

    @Test
    void prettyAndCompactTextReadBackAsTheSameValues() {
        Map<String, Object> m = sample();
        assertEquals(m, Json.parse(Json.pretty(m)));
        assertEquals(m, Json.parse(Json.compact(m)));
        assertEquals(m, Json.parseNoDuplicateKeys(Json.pretty(m)));
        assertTrue(Json.pretty(m).endsWith("}\n") && Json.pretty(m).startsWith("{\n  \"name\": "), Json.pretty(m));
        assertFalse(Json.compact(m).contains("\n"));
        assertTrue(Json.compact(m).contains("<tag> &"), "no HTML escaping: " + Json.compact(m));
        // the safetensors header form, byte for byte as the format's writers (and ane4j before Gson) write it
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("dtype", "F32");
        entry.put("shape", List.of(2, 3));
        entry.put("data_offsets", List.of(0L, 24L));
        Map<String, Object> header = new LinkedHashMap<>();
        header.put("__metadata__", Map.of("format", "pt"));
        header.put("w", entry);
        assertEquals("{\"__metadata__\":{\"format\":\"pt\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", Json.compact(header));
    }

    @Test
    void numbersReadAsLongWhenIntegralElseDoubleAndNonFiniteWritesNull() {
        assertEquals(7L, Json.parse("7"));
        assertEquals(-0L, Json.parse("-0"));
        assertEquals(1.5, Json.parse("1.5"));
        assertEquals(1000.0, Json.parse("1e3"));
        assertEquals(12345678901234567890.0, (Double) Json.parse("12345678901234567890"), 1e4);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("nan", Double.NaN);
        m.put("inf", Float.POSITIVE_INFINITY);
        m.put("eps", 1e-5f);
        m.put("path", Path.of("runs", "x"));
        m.put("kind", java.time.DayOfWeek.MONDAY);
        assertEquals("{\"nan\":null,\"inf\":null,\"eps\":1.0E-5,\"path\":\"runs/x\",\"kind\":\"MONDAY\"}", Json.compact(m));
    }

    @Test
    void badTextIsOneLineNamingWhere() {
        for (String bad : new String[] {"{\"a\": 1,}", "{'a': 1}", "{\"a\": NaN}", "// c\n{}", "{\"a\": 1} x", "[1, 2", "{\"a\" 1}", "", "  "}) {
            for (var read : List.<java.util.function.Function<String, Object>>of(Json::parse, Json::parseNoDuplicateKeys)) {
                var e = assertThrows(IllegalArgumentException.class, () -> read.apply(bad), bad);
                assertTrue(e.getMessage().startsWith("JSON: "), bad + " → " + e.getMessage());
                assertFalse(e.getMessage().contains("\n") || e.getMessage().contains("https://"), bad + " → " + e.getMessage());
            }
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Json.parse("{\"a\": 1,\n \"b\" 2}")).getMessage().contains("line 2"));
    }

    @Test
    void deepNestingIsRefusedByEveryReaderInOneLine() {
        String ok = "[".repeat(Json.MAX_DEPTH + 1) + "]".repeat(Json.MAX_DEPTH + 1);
        assertEquals(1, ((List<?>) Json.parse(ok)).size());
        String hostile = "[".repeat(100_000);   // a metrics.jsonl line the fuzz test writes: refused, not 100,000 lists built
        for (var read : List.<java.util.function.Function<String, Object>>of(Json::parse, Json::parseNoDuplicateKeys)) {
            var e = assertThrows(IllegalArgumentException.class, () -> read.apply(hostile));
            assertTrue(e.getMessage().startsWith("JSON: nesting deeper than 64"), e.getMessage());
            assertFalse(e.getMessage().contains("\n"), e.getMessage());
        }
    }

    @Test
    void duplicateKeysAreRefusedOnlyWhereTheFormatSaysSo() {
        assertEquals(Map.of("a", 2L), Json.parse("{\"a\": 1, \"a\": 2}"));   // config.json: the last wins, as Python's json reads it
        var top = assertThrows(IllegalArgumentException.class, () -> Json.parseNoDuplicateKeys("{\"a\": 1, \"a\": 2}"));
        assertEquals("JSON: duplicate key \"a\" at line 1 column 13 path $.a", top.getMessage());
        var nested = assertThrows(IllegalArgumentException.class, () -> Json.parseNoDuplicateKeys("{\"w\": {\"dtype\": \"F32\", \"dtype\": \"F16\"}}"));
        assertTrue(nested.getMessage().startsWith("JSON: duplicate key \"dtype\""), nested.getMessage());
        String deep = "[".repeat(70) + "]".repeat(70);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Json.parseNoDuplicateKeys(deep)).getMessage().startsWith("JSON: nesting deeper than 64"));
        assertNull(Json.parseNoDuplicateKeys("null"));
    }

    /** Two tensors of one name: a reader keeping the first and one keeping the last would load different weights. */
    @Test
    void aSafetensorsHeaderWithATensorTwiceIsRefused() throws IOException {
        String header = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + 8).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h).putFloat(1f).putFloat(2f);
        Path f = tmp.resolve("dup.safetensors");
        Files.write(f, b.array());
        var e = assertThrows(ModelFormatException.class, () -> Safetensors.readTensors(f));
        assertTrue(e.getMessage().startsWith("[safetensors] ") && e.getMessage().contains("duplicate key \"w\""), e.getMessage());
        assertEquals(1, e.getMessage().lines().count());
    }
}
