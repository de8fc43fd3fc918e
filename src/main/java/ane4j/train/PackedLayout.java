package ane4j.train;

import ane4j.backend.TensorBuffer;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Where things sit in a packed {@code [1, C, 1, W]} kernel tensor: named column ranges (the dynamic-weights input, with
 * activations in the first SEQ columns and weight rows after them) or named channel ranges (concatenated outputs).
 * <p>
 * A segment may be head-padded: blocks of {@code block} values every {@code stride} positions, the {@code stride − block}
 * positions after each block zero (head dims that are not a multiple of 32, padded to one, ane-audit-2 R4). The kernel
 * reads such a segment as whole padded heads; the caller writes only the blocks ({@link Range#at}), and the zeros are
 * written once per input set with the constants ({@link TrainingKernels.Spec#writeConstants}).
 */
public record PackedLayout(int channels, int width, Map<String, Range> segments) {
    /**
     * {@code [start, start + size)} along columns or channels; logical element i of the segment sits at {@link #at(int)
     * at(i)}: {@code start + (i / block)·stride + i % block}. A plain segment has {@code block == stride == size}.
     */
    public record Range(int start, int size, int block, int stride) {
        public Range(int start, int size) { this(start, size, size, size); }

        public Range {
            if (block != stride && (block <= 0 || stride < block || size % stride != 0))
                throw new IllegalArgumentException("[layout] a segment of " + size + " in blocks of " + block + " every " + stride + " does not tile");
        }

        public int end() { return start + size; }

        /** Whether zero positions follow each block (a head-padded segment). */
        public boolean padded() { return block != stride; }

        /** The number of blocks (heads, for a head-padded segment). */
        public int blocks() { return stride == 0 ? 0 : size / stride; }

        /** The values the segment holds, without its pads. */
        public int logicalSize() { return blocks() * block; }

        /** The position of logical element {@code i}. */
        public int at(int i) { return start + i / block * stride + i % block; }
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

    /**
     * Writes {@code src} (the segment's logical channels × width, row-major from {@code srcOffset}) into channel segment
     * {@code name} of {@code dst}, block by block where the segment is head-padded (its pad channels are not touched).
     */
    public void writeChannels(TensorBuffer dst, String name, float[] src, int srcOffset) {
        Range r = get(name);
        for (int b = 0; b < r.blocks(); b++)
            dst.copyFrom(src, srcOffset + b * r.block() * width, (long) (r.start() + b * r.stride()) * width, r.block() * width);
    }

    /**
     * Zeros the pad positions of every head-padded segment of {@code buf}, laid out by this: pad columns of every channel
     * in a column layout (the segments tile the width), pad channels in a channel layout (they tile the channels).
     */
    void zeroPads(TensorBuffer buf) {
        if (segments.values().stream().noneMatch(Range::padded)) return;
        int end = segments.values().stream().mapToInt(Range::end).max().orElse(0);
        if (end == width && end == channels) throw new IllegalStateException("[layout] " + channels + " channels and columns: cannot tell which the segments tile");
        boolean columns = end == width;
        for (Range r : segments.values()) {
            if (!r.padded()) continue;
            int pad = r.stride() - r.block();
            for (int b = 0; b < r.blocks(); b++) {
                int from = r.start() + b * r.stride() + r.block();
                if (columns) buf.writeColumns(0, channels, from, pad, new float[channels * pad], 0, pad);
                else buf.copyFrom(new float[pad * width], 0, (long) from * width, pad * width);
            }
        }
    }

    /** Accumulates segments along one axis. */
    static final class Builder {
        private final Map<String, Range> segments = new LinkedHashMap<>();
        private int next;

        Builder add(String name, int size) {
            segments.put(name, new Range(next, size));
            next += size;
            return this;
        }

        /** {@code blocks} blocks of {@code block} values, each followed by zeros up to {@code stride}. */
        Builder addPadded(String name, int blocks, int block, int stride) {
            segments.put(name, new Range(next, blocks * stride, block, stride));
            next += blocks * stride;
            return this;
        }

        int size() { return next; }

        PackedLayout columns(int channels) { return new PackedLayout(channels, next, segments); }

        PackedLayout channels(int width) { return new PackedLayout(next, width, segments); }
    }
}
