package ane4j.golden;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads a golden file in the safetensors format (test scope): u64 little-endian header length, a JSON header
 * ({@code __metadata__} string map, then per tensor {@code dtype} F32|I32, {@code shape}, {@code data_offsets}
 * relative to the end of the header), then the raw little-endian data. Files are written by
 * {@code tools/gen_golden.py}; every problem is reported as {@code [golden] ...} with the regenerate command.
 */
public final class GoldenSafetensors {

    static final String REGENERATE = "regenerate with: /usr/bin/python3 tools/gen_golden.py";
    private static final long MAX_HEADER = 16L << 20;

    private record Entry(String dtype, int[] shape, int begin, int end) {}

    private final String source;
    private final Map<String, String> metadata;
    private final Map<String, Entry> entries;
    private final ByteBuffer data;

    private GoldenSafetensors(String source, Map<String, String> metadata, Map<String, Entry> entries, ByteBuffer data) {
        this.source = source;
        this.metadata = metadata;
        this.entries = entries;
        this.data = data;
    }

    /** Loads a classpath resource, e.g. {@code golden/train/llama.safetensors}. */
    public static GoldenSafetensors load(String resource) {
        try (InputStream in = GoldenSafetensors.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalArgumentException("[golden] resource '" + resource + "' not found on the test classpath; " + REGENERATE);
            }
            return parse(in.readAllBytes(), resource);
        } catch (IOException e) {
            throw new IllegalStateException("[golden] cannot read resource '" + resource + "': " + e.getMessage(), e);
        }
    }

    /** Reads a file from disk. */
    public static GoldenSafetensors read(Path path) {
        try {
            return parse(Files.readAllBytes(path), path.toString());
        } catch (IOException e) {
            throw new IllegalArgumentException("[golden] cannot read '" + path + "': " + e.getMessage(), e);
        }
    }

    /** Parses the bytes of a whole file; {@code source} names it in error messages. */
    public static GoldenSafetensors parse(byte[] bytes, String source) {
        ByteBuffer buf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (bytes.length < 8) {
            throw bad(source, "file is " + bytes.length + " bytes, shorter than the 8-byte header length");
        }
        long headerLen = buf.getLong(0);
        if (headerLen < 2 || headerLen > MAX_HEADER || headerLen > bytes.length - 8L) {
            throw bad(source, "header length " + headerLen + " is impossible for a file of " + bytes.length + " bytes");
        }
        String json = new String(bytes, 8, (int) headerLen, java.nio.charset.StandardCharsets.UTF_8);
        Object parsed;
        try {
            parsed = Json.parse(json);
        } catch (IllegalArgumentException e) {
            throw bad(source, "bad JSON header: " + e.getMessage());
        }
        if (!(parsed instanceof Map<?, ?> header)) {
            throw bad(source, "header is not a JSON object");
        }
        int dataStart = 8 + (int) headerLen;
        int dataLen = bytes.length - dataStart;
        Map<String, String> metadata = new LinkedHashMap<>();
        Map<String, Entry> entries = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : header.entrySet()) {
            String name = (String) e.getKey();
            if (name.equals("__metadata__")) {
                if (!(e.getValue() instanceof Map<?, ?> m)) throw bad(source, "__metadata__ is not an object");
                for (Map.Entry<?, ?> me : m.entrySet()) {
                    if (!(me.getValue() instanceof String s)) throw bad(source, "__metadata__." + me.getKey() + " is not a string");
                    metadata.put((String) me.getKey(), s);
                }
                continue;
            }
            entries.put(name, entry(source, name, e.getValue(), dataLen));
        }
        // the tensors must tile the data section exactly, in some order, without overlap
        List<Entry> sorted = new ArrayList<>(entries.values());
        sorted.sort((a, b) -> Integer.compare(a.begin, b.begin));
        int pos = 0;
        for (Entry en : sorted) {
            if (en.begin != pos) throw bad(source, "tensor data is not contiguous at byte " + pos + " of the data section");
            pos = en.end;
        }
        if (pos != dataLen) throw bad(source, "data section is " + dataLen + " bytes but the tensors cover " + pos);
        ByteBuffer data = ByteBuffer.wrap(bytes, dataStart, dataLen).slice().order(ByteOrder.LITTLE_ENDIAN);
        return new GoldenSafetensors(source, Collections.unmodifiableMap(metadata), Collections.unmodifiableMap(entries), data);
    }

    private static Entry entry(String source, String name, Object value, int dataLen) {
        if (!(value instanceof Map<?, ?> m)) throw bad(source, "entry '" + name + "' is not an object");
        if (!(m.get("dtype") instanceof String dtype) || !(dtype.equals("F32") || dtype.equals("I32"))) {
            throw bad(source, "tensor '" + name + "' has dtype " + m.get("dtype") + "; only F32 and I32 are supported");
        }
        if (!(m.get("shape") instanceof List<?> shapeList)) throw bad(source, "tensor '" + name + "' has no shape");
        int[] shape = new int[shapeList.size()];
        long count = 1;
        for (int i = 0; i < shape.length; i++) {
            if (!(shapeList.get(i) instanceof Long d) || d < 0 || d > Integer.MAX_VALUE) {
                throw bad(source, "tensor '" + name + "' has a bad shape " + shapeList);
            }
            shape[i] = (int) (long) d;
            count *= d;
        }
        if (!(m.get("data_offsets") instanceof List<?> off) || off.size() != 2
                || !(off.get(0) instanceof Long b) || !(off.get(1) instanceof Long e)) {
            throw bad(source, "tensor '" + name + "' has bad data_offsets " + m.get("data_offsets"));
        }
        if (b < 0 || e < b || e > dataLen || e - b != 4 * count) {
            throw bad(source, "tensor '" + name + "' data_offsets [" + b + ", " + e + "] do not match shape "
                    + shapeList + " (4-byte elements) in a data section of " + dataLen + " bytes");
        }
        return new Entry(dtype, shape, (int) (long) b, (int) (long) e);
    }

    private static IllegalArgumentException bad(String source, String what) {
        return new IllegalArgumentException("[golden] " + source + ": " + what + "; " + REGENERATE);
    }

    public Map<String, String> metadata() {
        return metadata;
    }

    /** Tensor names in file order. */
    public Set<String> names() {
        return entries.keySet();
    }

    public int[] shape(String name) {
        return get(name).shape.clone();
    }

    public String dtype(String name) {
        return get(name).dtype;
    }

    public float[] f32(String name) {
        Entry e = get(name, "F32");
        float[] out = new float[(e.end - e.begin) / 4];
        data.slice(e.begin, e.end - e.begin).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(out);
        return out;
    }

    public int[] i32(String name) {
        Entry e = get(name, "I32");
        int[] out = new int[(e.end - e.begin) / 4];
        data.slice(e.begin, e.end - e.begin).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(out);
        return out;
    }

    /** A metadata value that must be present. */
    public String meta(String key) {
        String v = metadata.get(key);
        if (v == null) throw bad(source, "__metadata__ has no '" + key + "'");
        return v;
    }

    public int metaInt(String key) {
        try {
            return Integer.parseInt(meta(key));
        } catch (NumberFormatException e) {
            throw bad(source, "__metadata__." + key + " = '" + metadata.get(key) + "' is not an integer");
        }
    }

    private Entry get(String name) {
        Entry e = entries.get(name);
        if (e == null) throw bad(source, "no tensor '" + name + "' (the file has " + entries.size() + " tensors)");
        return e;
    }

    private Entry get(String name, String dtype) {
        Entry e = get(name);
        if (!e.dtype.equals(dtype)) throw bad(source, "tensor '" + name + "' is " + e.dtype + ", not " + dtype);
        return e;
    }
}
