package ane4j.train;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Where things sit in a packed {@code [1, C, 1, W]} kernel tensor: named column ranges (the dynamic-weights input, with
 * activations in the first SEQ columns and weight rows after them) or named channel ranges (concatenated outputs).
 */
public record PackedLayout(int channels, int width, Map<String, Range> segments) {
    /** {@code [start, start + size)} along columns or channels. */
    public record Range(int start, int size) {
        public int end() { return start + size; }
    }

    public PackedLayout {
        segments = Collections.unmodifiableMap(new LinkedHashMap<>(segments));
    }

    public Range get(String name) {
        Range r = segments.get(name);
        if (r == null) throw new IllegalArgumentException("[layout] no segment '" + name + "' (segments: " + segments.keySet() + ")");
        return r;
    }

    public int start(String name) { return get(name).start(); }

    /** Accumulates segments along one axis. */
    static final class Builder {
        private final Map<String, Range> segments = new LinkedHashMap<>();
        private int next;

        Builder add(String name, int size) {
            segments.put(name, new Range(next, size));
            next += size;
            return this;
        }

        int size() { return next; }

        PackedLayout columns(int channels) { return new PackedLayout(channels, next, segments); }

        PackedLayout channels(int width) { return new PackedLayout(next, width, segments); }
    }
}
