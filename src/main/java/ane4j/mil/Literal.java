package ane4j.mil;

import java.util.Arrays;
import java.util.Objects;

/**
 * A constant MIL value: a scalar, an inline tensor, or a BLOBFILE reference into a weight file.
 * Element storage by dtype: fp16 → {@code short[]} bit patterns (exact), fp32 → {@code float[]}, int8/uint8 → {@code byte[]},
 * int16 → {@code short[]}, int32 → {@code int[]}, uint64 → {@code long[]}, bool → {@code boolean[]}, string → {@code String[]}.
 */
public final class Literal {
    /** {@code BLOBFILE(path=…, offset=…)}: the offset points at the blob's 64-byte metadata header (MILBlob v2). */
    public record BlobRef(String path, long offset) {
        public BlobRef {
            Objects.requireNonNull(path);
            if (offset < 0) throw new MilException("[const] negative BLOBFILE offset " + offset);
        }
    }

    private final TensorType type;
    private final Object data;

    private Literal(TensorType type, Object data) {
        this.type = type;
        this.data = data;
    }

    /** A literal of {@code type} over {@code data} (the array type listed in the class comment, length = element count). */
    public static Literal of(TensorType type, Object data) {
        Objects.requireNonNull(data, "data");
        int len = switch (data) {
            case short[] a when type.dtype() == DType.FP16 || type.dtype() == DType.INT16 -> a.length;
            case float[] a when type.dtype() == DType.FP32 -> a.length;
            case byte[] a when type.dtype() == DType.INT8 || type.dtype() == DType.UINT8 -> a.length;
            case int[] a when type.dtype() == DType.INT32 -> a.length;
            case long[] a when type.dtype() == DType.UINT64 -> a.length;
            case boolean[] a when type.dtype() == DType.BOOL -> a.length;
            case String[] a when type.dtype() == DType.STRING -> a.length;
            default -> throw new MilException("[const] " + data.getClass().getSimpleName() + " data cannot hold " + type.dtype());
        };
        if (len != type.count())
            throw new MilException("[const] " + type + " needs " + type.count() + " values, got " + len);
        return new Literal(type, cloneArray(data));
    }

    public static Literal blob(TensorType type, String path, long offset) {
        if (type.dtype().blobCode() == 0) throw new MilException("[const] BLOBFILE cannot hold " + type.dtype());
        return new Literal(type, new BlobRef(path, offset));
    }

    /** A tensor literal from floats, rounded to fp16 when {@code type} is fp16. */
    public static Literal ofFloats(TensorType type, float... values) {
        return switch (type.dtype()) {
            case FP16 -> of(type, Fp16.fromFloats(values));
            case FP32 -> of(type, values.clone());
            default -> throw new MilException("[const] float values for a " + type.dtype() + " tensor");
        };
    }

    public static Literal fp16(float v) { return of(TensorType.scalar(DType.FP16), new short[] {Fp16.fromFloat(v)}); }
    public static Literal fp32(float v) { return of(TensorType.scalar(DType.FP32), new float[] {v}); }
    public static Literal int32(int v) { return of(TensorType.scalar(DType.INT32), new int[] {v}); }
    public static Literal int8(int v) { return of(TensorType.scalar(DType.INT8), new byte[] {(byte) v}); }
    public static Literal uint8(int v) { return of(TensorType.scalar(DType.UINT8), new byte[] {(byte) v}); }
    public static Literal uint64(long v) { return of(TensorType.scalar(DType.UINT64), new long[] {v}); }
    public static Literal bool(boolean v) { return of(TensorType.scalar(DType.BOOL), new boolean[] {v}); }
    public static Literal string(String v) { return of(TensorType.scalar(DType.STRING), new String[] {v}); }

    /** A rank-1 int32 tensor: shapes, axes, permutations, begins and sizes. */
    public static Literal int32s(int... v) { return of(TensorType.of(DType.INT32, v.length), v.clone()); }

    public TensorType type() { return type; }

    public DType dtype() { return type.dtype(); }

    public boolean isBlob() { return data instanceof BlobRef; }

    public BlobRef blobRef() {
        if (data instanceof BlobRef b) return b;
        throw new MilException("[const] not a BLOBFILE literal");
    }

    /** The backing array (a copy); see the class comment for its type. */
    public Object data() {
        if (isBlob()) throw new MilException("[const] the value of a BLOBFILE literal lives in its weight file");
        return cloneArray(data);
    }

    public int size() { return isBlob() ? (int) type.count() : java.lang.reflect.Array.getLength(data); }

    /** Element i as a float (numeric and bool types). */
    public float floatAt(int i) {
        return switch (data) {
            case short[] a when type.dtype() == DType.FP16 -> Fp16.toFloat(a[i]);
            case short[] a -> a[i];
            case float[] a -> a[i];
            case byte[] a when type.dtype() == DType.UINT8 -> a[i] & 0xFF;
            case byte[] a -> a[i];
            case int[] a -> a[i];
            case long[] a -> a[i];
            case boolean[] a -> a[i] ? 1f : 0f;
            default -> throw new MilException("[const] " + type + " is not numeric");
        };
    }

    /** Element i as a long (integer and bool types). */
    public long longAt(int i) {
        return switch (data) {
            case short[] a when type.dtype() == DType.INT16 -> a[i];
            case byte[] a when type.dtype() == DType.UINT8 -> a[i] & 0xFF;
            case byte[] a -> a[i];
            case int[] a -> a[i];
            case long[] a -> a[i];
            case boolean[] a -> a[i] ? 1 : 0;
            default -> throw new MilException("[const] " + type + " is not an integer");
        };
    }

    public float[] toFloats() {
        float[] out = new float[size()];
        for (int i = 0; i < out.length; i++) out[i] = floatAt(i);
        return out;
    }

    public int[] toInts() {
        int[] out = new int[size()];
        for (int i = 0; i < out.length; i++) out[i] = Math.toIntExact(longAt(i));
        return out;
    }

    public boolean boolValue() {
        if (data instanceof boolean[] a && a.length == 1) return a[0];
        throw new MilException("[const] expected a bool scalar, found " + type);
    }

    public int intValue() {
        if (type.count() != 1 || !(type.dtype().isInteger())) throw new MilException("[const] expected an integer scalar, found " + type);
        return Math.toIntExact(longAt(0));
    }

    public float floatValue() {
        if (type.count() != 1) throw new MilException("[const] expected a scalar, found " + type);
        return floatAt(0);
    }

    public String stringValue() {
        if (data instanceof String[] a && a.length == 1) return a[0];
        throw new MilException("[const] expected a string scalar, found " + type);
    }

    @Override public boolean equals(Object o) {
        return o instanceof Literal l && l.type.equals(type) && Objects.deepEquals(l.data, data);
    }

    @Override public int hashCode() {
        return type.hashCode() * 31 + (data instanceof BlobRef b ? b.hashCode() : Arrays.deepHashCode(new Object[] {data}));
    }

    @Override public String toString() {
        if (data instanceof BlobRef b) return type + " BLOBFILE(" + b.path() + "@" + b.offset() + ")";
        String s = switch (data) {
            case short[] a when type.dtype() == DType.FP16 -> Arrays.toString(Fp16.toFloats(a));
            case short[] a -> Arrays.toString(a);
            case float[] a -> Arrays.toString(a);
            case byte[] a -> Arrays.toString(a);
            case int[] a -> Arrays.toString(a);
            case long[] a -> Arrays.toString(a);
            case boolean[] a -> Arrays.toString(a);
            case String[] a -> Arrays.toString(a);
            default -> String.valueOf(data);
        };
        if (s.length() > 80) s = s.substring(0, 77) + "...";
        return type + " " + s;
    }

    private static Object cloneArray(Object a) {
        return switch (a) {
            case short[] x -> x.clone();
            case float[] x -> x.clone();
            case byte[] x -> x.clone();
            case int[] x -> x.clone();
            case long[] x -> x.clone();
            case boolean[] x -> x.clone();
            case String[] x -> x.clone();
            default -> a;
        };
    }
}
