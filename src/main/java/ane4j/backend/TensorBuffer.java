package ane4j.backend;

import ane4j.mil.DType;
import ane4j.mil.Shapes;
import ane4j.mil.TensorType;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A dense row-major tensor in the ANE layout, backed by a {@link MemorySegment}: {@code [1,C,H,W]} has element
 * (c, h, w) at {@code (c*H + h)*W + w}; any other rank is laid out the same way. Element types: fp16 and fp32 (the
 * kernels' I/O types) and int32, int8, uint8, bool. Values go in and out as floats; fp16 is written with
 * round-to-nearest-even ({@link Float#floatToFloat16}), overflow to ±inf, subnormals kept.
 *
 * <p>An fp16 buffer is normally 2 bytes per element; one {@link #allocateFloatHeld held as floats} keeps each fp16
 * value as the fp32 float equal to it (4 bytes per element, every write rounded to fp16 exactly as above), so a backend
 * that computes in fp32 reads it in place instead of converting it at every evaluation. It behaves as any fp16 buffer
 * through this class's methods; only its raw {@link #segment()} differs (see {@link #floatHeld()}).
 *
 * <p>For the {@code [1,C,H,W]} layout, {@link #channels(int, int)} is a view sharing memory, {@link #copyChannels} moves
 * channel ranges between buffers, and {@link #writeColumns}/{@link #readColumns} write and read a column range of every
 * channel in place (the dynamic-weights layout: activations in the first SEQ columns, weight rows after them).
 */
public final class TensorBuffer {
    private static final ValueLayout.OfShort F16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;

    private final MemorySegment segment;
    private final TensorType type;
    private final long count;
    private final boolean floatHeld;

    private TensorBuffer(MemorySegment segment, TensorType type) { this(segment, type, false); }

    private TensorBuffer(MemorySegment segment, TensorType type, boolean floatHeld) {
        this.segment = segment;
        this.type = type;
        this.count = type.count();
        this.floatHeld = floatHeld;
    }

    /** A zeroed buffer of {@code type} in native memory (freed when unreachable). */
    public static TensorBuffer allocate(TensorType type) {
        check(type);
        return new TensorBuffer(Arena.ofAuto().allocate(Math.max(1, type.byteSize()), 64), type);
    }

    public static TensorBuffer allocate(DType dtype, int... shape) { return allocate(TensorType.of(dtype, shape)); }

    /** A zeroed fp16 buffer of {@code type} whose values are held as fp32 floats (see the class comment). */
    public static TensorBuffer allocateFloatHeld(TensorType type) {
        if (type.dtype() != DType.FP16) throw new IllegalArgumentException("[tensor] only fp16 buffers can be held as floats, not " + type);
        return new TensorBuffer(Arena.ofAuto().allocate(Math.max(1, type.count() * 4), 64), type, true);
    }

    /** A buffer over existing memory (e.g. an IOSurface's base address) of at least {@code type.byteSize()} bytes. */
    public static TensorBuffer wrap(MemorySegment segment, TensorType type) {
        check(type);
        if (segment.byteSize() < type.byteSize())
            throw new IllegalArgumentException("[tensor] segment of " + segment.byteSize() + " bytes is too small for " + type + " (" + type.byteSize() + " bytes)");
        return new TensorBuffer(segment.asSlice(0, type.byteSize()), type);
    }

    /** A buffer of {@code type} filled from {@code values}. */
    /** A buffer of uniform values in ±scale from a seed (probe and test inputs). */
    public static TensorBuffer random(TensorType type, long seed, float scale) {
        java.util.SplittableRandom r = new java.util.SplittableRandom(seed);
        TensorBuffer b = allocate(type);
        for (long i = 0; i < b.count(); i++) b.set(i, (float) ((r.nextDouble() * 2 - 1) * scale));
        return b;
    }

    public static TensorBuffer of(TensorType type, float... values) {
        TensorBuffer b = allocate(type);
        b.copyFrom(values);
        return b;
    }

    private static void check(TensorType type) {
        switch (type.dtype()) {
            case FP16, FP32, INT32, INT8, UINT8, BOOL -> {}
            default -> throw new IllegalArgumentException("[tensor] " + type.dtype() + " tensors are not supported (fp16, fp32, int32, int8, uint8, bool)");
        }
    }

    /** The memory: elements of the element type, except in a {@link #floatHeld()} buffer, where they are fp32 floats. */
    public MemorySegment segment() { return segment; }

    /** Whether this fp16 buffer holds its values as fp32 floats, 4 bytes each (see the class comment). */
    public boolean floatHeld() { return floatHeld; }

    /** This buffer if its segment holds elements of its type, else a copy that does (for code that reads the raw bytes). */
    public TensorBuffer packed() {
        if (!floatHeld) return this;
        TensorBuffer p = allocate(type);
        p.copyFrom(this);
        return p;
    }

    /** Bytes per element in {@link #segment()}. */
    private long elementBytes() { return floatHeld ? 4 : dtype().byteSize(); }

    public TensorType type() { return type; }

    public DType dtype() { return type.dtype(); }

    public int[] shape() { return type.shape(); }

    /** Number of elements. */
    public long count() { return count; }

    public long byteSize() { return segment.byteSize(); }

    // ---------------------------------------------------------------------------------------------------------------
    // elements

    public float get(long i) {
        checkIndex(i);
        return load(i);
    }

    private float load(long i) {
        return switch (type.dtype()) {
            case FP16 -> floatHeld ? segment.getAtIndex(F32, i) : Float.float16ToFloat(segment.getAtIndex(F16, i));
            case FP32 -> segment.getAtIndex(F32, i);
            case INT32 -> segment.getAtIndex(I32, i);
            case INT8 -> segment.get(ValueLayout.JAVA_BYTE, i);
            case UINT8, BOOL -> segment.get(ValueLayout.JAVA_BYTE, i) & 0xFF;
            default -> throw new AssertionError(type);
        };
    }

    /** Stores {@code v} converted to the element type (fp16: nearest even; integers: truncated toward zero, saturated; bool: v != 0). */
    public void set(long i, float v) {
        checkIndex(i);
        put(i, v);
    }

    private void put(long i, float v) {
        switch (type.dtype()) {
            case FP16 -> {
                if (floatHeld) segment.setAtIndex(F32, i, ane4j.mil.Fp16.round(v));
                else segment.setAtIndex(F16, i, Float.floatToFloat16(v));
            }
            case FP32 -> segment.setAtIndex(F32, i, v);
            case INT32 -> segment.setAtIndex(I32, i, (int) v);
            case INT8 -> segment.set(ValueLayout.JAVA_BYTE, i, (byte) Math.max(-128, Math.min(127, (int) v)));
            case UINT8 -> segment.set(ValueLayout.JAVA_BYTE, i, (byte) Math.max(0, Math.min(255, (int) v)));
            case BOOL -> segment.set(ValueLayout.JAVA_BYTE, i, (byte) (v != 0 ? 1 : 0));
            default -> throw new AssertionError(type);
        }
    }

    private void checkIndex(long i) {
        if (i < 0 || i >= count) throw new IndexOutOfBoundsException("[tensor] index " + i + " outside " + type + " (" + count + " elements)");
    }

    public void fill(float v) {
        switch (type.dtype()) {
            case FP16 -> {
                short h = Float.floatToFloat16(v);
                if (floatHeld) for (long i = 0; i < count; i++) segment.setAtIndex(F32, i, Float.float16ToFloat(h));
                else for (long i = 0; i < count; i++) segment.setAtIndex(F16, i, h);
            }
            case FP32 -> { for (long i = 0; i < count; i++) segment.setAtIndex(F32, i, v); }
            default -> { for (long i = 0; i < count; i++) put(i, v); }
        }
    }

    /** Copies all elements from {@code src} (length = count). */
    public void copyFrom(float[] src) {
        if (src.length != count) throw new IllegalArgumentException("[tensor] " + src.length + " values for " + type + " (" + count + " elements)");
        copyFrom(src, 0, 0, src.length);
    }

    /** Copies {@code length} values from {@code src[srcOffset…]} to elements {@code dstIndex…}. */
    public void copyFrom(float[] src, int srcOffset, long dstIndex, int length) {
        java.util.Objects.checkFromIndexSize(srcOffset, length, src.length);
        java.util.Objects.checkFromIndexSize(dstIndex, length, count);
        switch (type.dtype()) {
            case FP16 -> {
                if (floatHeld) Fp16.roundInto(src, srcOffset, segment, dstIndex, length);
                else Fp16.fromFloats(src, srcOffset, segment, dstIndex, length);
            }
            case FP32 -> MemorySegment.copy(src, srcOffset, segment, F32, dstIndex * 4, length);
            default -> { for (int i = 0; i < length; i++) put(dstIndex + i, src[srcOffset + i]); }
        }
    }

    /** Copies elements {@code srcIndex…} into {@code dst[dstOffset…]}. */
    public void copyTo(long srcIndex, float[] dst, int dstOffset, int length) {
        java.util.Objects.checkFromIndexSize(dstOffset, length, dst.length);
        java.util.Objects.checkFromIndexSize(srcIndex, length, count);
        switch (type.dtype()) {
            case FP16 -> {
                if (floatHeld) MemorySegment.copy(segment, F32, srcIndex * 4, dst, dstOffset, length);
                else Fp16.toFloats(segment, srcIndex, dst, dstOffset, length);
            }
            case FP32 -> MemorySegment.copy(segment, F32, srcIndex * 4, dst, dstOffset, length);
            default -> { for (int i = 0; i < length; i++) dst[dstOffset + i] = load(srcIndex + i); }
        }
    }

    public float[] toFloatArray() {
        if (count > Integer.MAX_VALUE - 8) throw new IllegalStateException("[tensor] " + type + " is too large for a float[]");
        float[] out = new float[(int) count];
        copyTo(0, out, 0, out.length);
        return out;
    }

    /** Copies every element of {@code src} (same element count), converting the element type if needed. */
    public void copyFrom(TensorBuffer src) {
        if (src.count != count) throw new IllegalArgumentException("[tensor] cannot copy " + src.type + " into " + type + ": element counts differ");
        transfer(src, 0, 0, count);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // the [1,C,H,W] layout: channel ranges and column ranges

    /** Elements per channel (the product of the dimensions after axis 1). */
    public int channelSize() {
        int[] s = type.shape();
        requireChannels();
        long n = 1;
        for (int i = 2; i < s.length; i++) n *= s[i];
        return Math.toIntExact(n);
    }

    public int channelCount() {
        requireChannels();
        return type.shape()[1];
    }

    private void requireChannels() {
        int[] s = type.shape();
        if (s.length < 2 || s[0] != 1) throw new IllegalStateException("[tensor] channel access needs a [1,C,…] tensor, this is " + type);
    }

    private void checkChannels(int from, int n) {
        int c = channelCount();
        if (from < 0 || n < 0 || from + n > c)
            throw new IndexOutOfBoundsException("[tensor] channels " + from + ".." + (from + n) + " outside " + type + " (" + c + " channels)");
    }

    /** Channels {@code from … from+count-1} as a {@code [1,count,…]} buffer sharing this buffer's memory. */
    public TensorBuffer channels(int from, int count) {
        checkChannels(from, count);
        int[] s = type.shape();
        s[1] = count;
        long bytesPerChannel = channelSize() * elementBytes();
        return new TensorBuffer(segment.asSlice(from * bytesPerChannel, count * bytesPerChannel), type.withShape(s), floatHeld);
    }

    /** Copies channels {@code srcFrom…} of {@code src} into channels {@code dstFrom…} of this buffer (same channel size; dtypes converted). */
    public void copyChannels(TensorBuffer src, int srcFrom, int dstFrom, int count) {
        if (src.channelSize() != channelSize())
            throw new IllegalArgumentException("[tensor] channel sizes differ: " + src.type + " vs " + type);
        src.checkChannels(srcFrom, count);
        checkChannels(dstFrom, count);
        long cs = channelSize();
        transfer(src, srcFrom * cs, dstFrom * cs, count * cs);
    }

    /** Elements {@code srcIndex…} of src into elements {@code dstIndex…} here: bytes copied where both hold them alike, else converted. */
    private void transfer(TensorBuffer src, long srcIndex, long dstIndex, long n) {
        if (src.dtype() == dtype() && src.floatHeld == floatHeld) {
            long es = elementBytes();
            MemorySegment.copy(src.segment, srcIndex * es, segment, dstIndex * es, n * es);
        } else if (src.dtype().isFloat() && dtype().isFloat()) {
            float[] f = TRANSFER.get();
            for (long done = 0; done < n; done += f.length) {
                int m = (int) Math.min(f.length, n - done);
                src.copyTo(srcIndex + done, f, 0, m);
                copyFrom(f, 0, dstIndex + done, m);
            }
        } else {
            for (long i = 0; i < n; i++) put(dstIndex + i, src.load(srcIndex + i));
        }
    }

    private static final ThreadLocal<float[]> TRANSFER = ThreadLocal.withInitial(() -> new float[4096]);

    /**
     * Writes columns {@code column … column+width-1} of channels {@code channelFrom … channelFrom+channels-1}: row r of
     * {@code src} (at {@code srcOffset + r*srcStride}, {@code width} values) goes into channel {@code channelFrom + r}. A
     * column is a position inside a channel ({@code h*W + w}). No temporary arrays.
     */
    public void writeColumns(int channelFrom, int channels, int column, int width, float[] src, int srcOffset, int srcStride) {
        checkColumns(channelFrom, channels, column, width);
        if (channels > 0) java.util.Objects.checkFromIndexSize(srcOffset, (long) (channels - 1) * srcStride + width, src.length);
        long cs = channelSize();
        for (int r = 0; r < channels; r++) copyFrom(src, srcOffset + r * srcStride, (channelFrom + r) * cs + column, width);
    }

    /** Writes a dense {@code [channelCount][width]} block at {@code column} of every channel. */
    public void writeColumns(int column, int width, float[] src) {
        writeColumns(0, channelCount(), column, width, src, 0, width);
    }

    /** The inverse of {@link #writeColumns(int, int, int, int, float[], int, int)}. */
    public void readColumns(int channelFrom, int channels, int column, int width, float[] dst, int dstOffset, int dstStride) {
        checkColumns(channelFrom, channels, column, width);
        if (channels > 0) java.util.Objects.checkFromIndexSize(dstOffset, (long) (channels - 1) * dstStride + width, dst.length);
        long cs = channelSize();
        for (int r = 0; r < channels; r++) copyTo((channelFrom + r) * cs + column, dst, dstOffset + r * dstStride, width);
    }

    /** Copies columns {@code srcColumn…} of every channel of {@code src} into columns {@code dstColumn…} of the same channels here. */
    public void copyColumns(TensorBuffer src, int srcColumn, int dstColumn, int width) {
        if (src.channelCount() != channelCount()) throw new IllegalArgumentException("[tensor] channel counts differ: " + src.type + " vs " + type);
        src.checkColumns(0, channelCount(), srcColumn, width);
        checkColumns(0, channelCount(), dstColumn, width);
        long scs = src.channelSize(), dcs = channelSize();
        for (long c = 0; c < channelCount(); c++) transfer(src, c * scs + srcColumn, c * dcs + dstColumn, width);
    }

    private void checkColumns(int channelFrom, int channels, int column, int width) {
        checkChannels(channelFrom, channels);
        int cs = channelSize();
        if (column < 0 || width < 0 || column + width > cs)
            throw new IndexOutOfBoundsException("[tensor] columns " + column + ".." + (column + width) + " outside channels of " + cs + " elements in " + type);
    }

    @Override public String toString() { return "TensorBuffer" + type.dtype().milName() + Shapes.str(type.shape()) + (floatHeld ? " (held as floats)" : ""); }
}
