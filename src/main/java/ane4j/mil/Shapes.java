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
}
