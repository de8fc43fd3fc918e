package ane4j.model;

import java.util.Arrays;

/**
 * One named tensor inside the flat parameter buffer: elements {@code [offset, offset + size)}, row-major.
 * Matrices are {@code [out, in]} (rows = output features), vectors have a one-element shape.
 *
 * @param decay whether AdamW weight decay applies (matrices and embeddings yes, norm weights no)
 */
public record ParameterView(String name, int offset, int[] shape, boolean decay) {
    public ParameterView {
        shape = shape.clone();
        if (shape.length < 1 || shape.length > 2) throw new IllegalArgumentException("[layout] " + name + ": rank must be 1 or 2");
    }

    @Override
    public int[] shape() { return shape.clone(); }

    public int size() { return shape.length == 1 ? shape[0] : shape[0] * shape[1]; }

    /** Rows of a matrix (output features); the length of a vector. */
    public int rows() { return shape[0]; }

    /** Columns of a matrix (input features); 1 for a vector. */
    public int cols() { return shape.length == 1 ? 1 : shape[1]; }

    public int end() { return offset + size(); }

    public boolean isMatrix() { return shape.length == 2; }

    @Override
    public boolean equals(Object o) {
        return o instanceof ParameterView v && v.name.equals(name) && v.offset == offset && Arrays.equals(v.shape, shape) && v.decay == decay;
    }

    @Override
    public int hashCode() { return name.hashCode() * 31 + offset; }

    @Override
    public String toString() { return name + Arrays.toString(shape) + "@" + offset; }
}
