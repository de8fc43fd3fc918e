package ane4j.mil;

/** Small shape helpers shared by the op definitions, the writer and the interpreter. */
public final class Shapes {
    private Shapes() {}

    /** {@code [1,12,256,64]} */
    public static String str(int[] shape) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < shape.length; i++) sb.append(i == 0 ? "" : ",").append(shape[i]);
        return sb.append(']').toString();
    }

    public static long count(int[] shape) {
        long n = 1;
        for (int d : shape) n *= d;
        return n;
    }

    /** Row-major strides in elements. */
    public static long[] strides(int[] shape) {
        long[] s = new long[shape.length];
        long acc = 1;
        for (int i = shape.length - 1; i >= 0; i--) { s[i] = acc; acc *= shape[i]; }
        return s;
    }

    /** Resolves a possibly negative axis against {@code rank}; null when out of range. */
    public static Integer axis(int axis, int rank) {
        int a = axis < 0 ? axis + rank : axis;
        return a < 0 || a >= rank ? null : a;
    }

    /** numpy broadcasting of two shapes, or null when they do not broadcast. */
    public static int[] broadcast(int[] a, int[] b) {
        int rank = Math.max(a.length, b.length);
        int[] out = new int[rank];
        for (int i = 0; i < rank; i++) {
            int da = i < rank - a.length ? 1 : a[i - (rank - a.length)];
            int db = i < rank - b.length ? 1 : b[i - (rank - b.length)];
            if (da != db && da != 1 && db != 1) return null;
            out[i] = da == 1 ? db : da;
        }
        return out;
    }

    /**
     * The padding of a conv or pool per spatial dim as {before₀, after₀, before₁, …}: valid 0; custom as given; same and
     * same_lower pad to ceil(in / stride) outputs, the odd element at the end (same) or at the start (same_lower).
     * {@code kernel} is the dilated kernel extent d·(k − 1) + 1.
     */
    public static int[] pads(String padType, int[] pad, int[] in, int[] kernel, int[] strides) {
        int n = in.length;
        int[] p = new int[2 * n];
        for (int i = 0; i < n; i++) {
            switch (padType) {
                case "custom" -> { p[2 * i] = pad[2 * i]; p[2 * i + 1] = pad[2 * i + 1]; }
                case "same", "same_lower" -> {
                    int out = (in[i] + strides[i] - 1) / strides[i];
                    int total = Math.max(0, (out - 1) * strides[i] + kernel[i] - in[i]);
                    p[2 * i] = padType.equals("same") ? total / 2 : total - total / 2;
                    p[2 * i + 1] = total - p[2 * i];
                }
                default -> { }
            }
        }
        return p;
    }
}
