package ane4j.model;

/**
 * Finds NaN and ±Inf in weights where they enter (an imported model file, a checkpoint), so the error names the file,
 * the tensor and the first index at load: without this check a NaN weight surfaced as {@code <unk>} tokens, as an
 * index -1 in the sampler, or as a "diverged" run blamed on the learning rate (the 2026-12-05 reliability report, H-a to
 * H-c). One pass over the floats, about 40 ms for stories110m's 110 M.
 */
public final class NonFinite {
    private NonFinite() {}

    /** The index of the first NaN or ±Inf in {@code a[from, from + n)}, or -1. */
    public static int first(float[] a, int from, int n) {
        for (int i = from, end = from + n; i < end; i++) {
            // NaN and ±Inf are the floats whose exponent bits are all ones
            if ((Float.floatToRawIntBits(a[i]) & 0x7f800000) == 0x7f800000) return i;
        }
        return -1;
    }

    /** "NaN", "+Inf" or "-Inf". */
    public static String name(float v) {
        return Float.isNaN(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
    }

    /**
     * Null when every weight of {@code data} laid out as {@code layout} is finite, else one line naming {@code file},
     * the tensor (its name in that file, given by {@code tensorName}) and the element index within it.
     */
    public static String check(float[] data, ParameterLayout layout, String file, java.util.function.Function<String, String> tensorName) {
        int i = first(data, 0, data.length);
        if (i < 0) return null;
        for (ParameterView v : layout.views()) {
            if (i >= v.offset() && i < v.offset() + v.size())
                return file + ": tensor '" + tensorName.apply(v.name()) + "' holds " + name(data[i]) + " at index " + (i - v.offset())
                        + " (of " + v.size() + "); the file is damaged, or was saved from a run that diverged:"
                        + " use another copy or an earlier checkpoint";
        }
        return file + ": holds " + name(data[i]) + " at parameter " + i + "; the file is damaged: use another copy";
    }
}
