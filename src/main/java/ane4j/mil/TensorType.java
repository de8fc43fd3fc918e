package ane4j.mil;

import java.util.Arrays;

/**
 * A MIL value type: element type and static shape. Rank 0 is a scalar ({@code fp16} in the short dialect,
 * {@code tensor<fp16, []>} in the verbose one). Ranks 0..5 are allowed, every dimension ≥ 1 (0 only for empty tuples of data).
 */
public record TensorType(DType dtype, int[] shape) {
    public static final int MAX_RANK = 5;

    public TensorType {
        if (dtype == null) throw new MilException("[type] dtype is null");
        if (shape.length > MAX_RANK) throw new MilException("[type] rank " + shape.length + " > " + MAX_RANK + " is not supported: " + Arrays.toString(shape));
        for (int d : shape) if (d < 0) throw new MilException("[type] negative dimension in " + Shapes.str(shape));
        shape = shape.clone();
    }

    public static TensorType scalar(DType dtype) { return new TensorType(dtype, new int[0]); }

    public static TensorType of(DType dtype, int... shape) { return new TensorType(dtype, shape); }

    @Override public int[] shape() { return shape.clone(); }

    public int rank() { return shape.length; }

    public int dim(int axis) { return shape[axis < 0 ? axis + shape.length : axis]; }

    public boolean isScalar() { return shape.length == 0; }

    /** Number of elements (1 for a scalar). */
    public long count() {
        long n = 1;
        for (int d : shape) n *= d;
        return n;
    }

    public long byteSize() { return count() * dtype.byteSize(); }

    public TensorType withShape(int... newShape) { return new TensorType(dtype, newShape); }

    public TensorType withDType(DType newType) { return new TensorType(newType, shape); }

    @Override public boolean equals(Object o) {
        return o instanceof TensorType t && t.dtype == dtype && Arrays.equals(t.shape, shape);
    }

    @Override public int hashCode() { return dtype.hashCode() * 31 + Arrays.hashCode(shape); }

    /** {@code fp16[1,768,1,256]} (for messages; MIL text is written by {@link MilWriter}). */
    @Override public String toString() { return dtype.milName() + Shapes.str(shape); }
}
