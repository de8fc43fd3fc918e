package ane4j.mil;

/**
 * A named SSA value in a MIL function: a function input or an op output. {@code constant} is the value of a {@code const}
 * op's output (null otherwise), so shape inference can read shapes, axes and flags.
 */
public record Value(String name, TensorType type, Literal constant) {
    public Value {
        if (name == null || !isIdentifier(name)) throw new MilException("[mil] '" + name + "' is not a valid MIL name (letters, digits, '_'; not starting with a digit)");
        if (type == null) throw new MilException("[mil] value '" + name + "' has no type");
    }

    public Value(String name, TensorType type) { this(name, type, null); }

    public boolean isConst() { return constant != null; }

    public DType dtype() { return type.dtype(); }

    public int[] shape() { return type.shape(); }

    public int rank() { return type.rank(); }

    static boolean isIdentifier(String s) {
        if (s.isEmpty() || Character.isDigit(s.charAt(0))) return false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
        }
        return true;
    }

    @Override public String toString() { return name + ":" + type; }
}
