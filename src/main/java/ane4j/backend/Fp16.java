package ane4j.backend;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * fp16 ↔ fp32 conversion of runs of elements (round to nearest even), through heap chunks: C2 vectorises the array
 * loop (F16C / AVX-512), not the equivalent segment loop, which is 4–20× slower. Indices count elements.
 */
public final class Fp16 {
    private Fp16() {}

    private static final ValueLayout.OfShort H = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final int CHUNK = 4096;
    private static final ThreadLocal<short[]> HALVES = ThreadLocal.withInitial(() -> new short[CHUNK]);
    private static final ThreadLocal<float[]> FLOATS = ThreadLocal.withInitial(() -> new float[CHUNK]);

    /** {@code dst[dstOffset + i] = src fp16 element (srcIndex + i)}, i < n. */
    public static void toFloats(MemorySegment src, long srcIndex, float[] dst, int dstOffset, int n) {
        short[] h = HALVES.get();
        for (int done = 0; done < n; done += CHUNK) {
            int m = Math.min(CHUNK, n - done);
            MemorySegment.copy(src, H, (srcIndex + done) * 2, h, 0, m);
            for (int i = 0, at = dstOffset + done; i < m; i++) dst[at + i] = Float.float16ToFloat(h[i]);
        }
    }

    /** fp16 element {@code dstIndex + i} of dst = {@code src[srcOffset + i]}, i < n. */
    public static void fromFloats(float[] src, int srcOffset, MemorySegment dst, long dstIndex, int n) {
        short[] h = HALVES.get();
        for (int done = 0; done < n; done += CHUNK) {
            int m = Math.min(CHUNK, n - done);
            for (int i = 0, at = srcOffset + done; i < m; i++) h[i] = Float.floatToFloat16(src[at + i]);
            MemorySegment.copy(h, 0, dst, H, (dstIndex + done) * 2, m);
        }
    }

    /** fp16 elements {@code srcIndex…} of src into fp32 elements {@code dstIndex…} of dst. */
    public static void toFloats(MemorySegment src, long srcIndex, MemorySegment dst, long dstIndex, long n) {
        float[] f = FLOATS.get();
        for (long done = 0; done < n; done += CHUNK) {
            int m = (int) Math.min(CHUNK, n - done);
            toFloats(src, srcIndex + done, f, 0, m);
            MemorySegment.copy(f, 0, dst, F, (dstIndex + done) * 4, m);
        }
    }

    /** fp32 elements {@code srcIndex…} of src into fp16 elements {@code dstIndex…} of dst. */
    public static void fromFloats(MemorySegment src, long srcIndex, MemorySegment dst, long dstIndex, long n) {
        float[] f = FLOATS.get();
        for (long done = 0; done < n; done += CHUNK) {
            int m = (int) Math.min(CHUNK, n - done);
            MemorySegment.copy(src, F, (srcIndex + done) * 4, f, 0, m);
            fromFloats(f, 0, dst, dstIndex + done, m);
        }
    }

    /** a[off … off+n) rounded to fp16 and back in place (vectorised: F16C / AVX-512 conversions). */
    public static void round(float[] a, int off, int n) {
        for (int i = off, end = off + n; i < end; i++) a[i] = Float.float16ToFloat(Float.floatToFloat16(a[i]));
    }

    /** fp32 elements [from, from + n) of seg rounded to fp16 and back in place, through a heap chunk. */
    public static void round(MemorySegment seg, long from, long n) { roundInto(seg, from, seg, from, n); }

    /** fp32 element {@code dstIndex + i} of dst = {@code src[srcOffset + i]} rounded to fp16 and back, i < n (a float-held fp16 buffer). */
    public static void roundInto(float[] src, int srcOffset, MemorySegment dst, long dstIndex, int n) {
        float[] f = FLOATS.get();
        for (int done = 0; done < n; done += CHUNK) {
            int m = Math.min(CHUNK, n - done);
            // copied first, then rounded in place: C2 vectorises the one-array loop, not the two-array one (2× slower)
            System.arraycopy(src, srcOffset + done, f, 0, m);
            round(f, 0, m);
            MemorySegment.copy(f, 0, dst, F, (dstIndex + done) * 4, m);
        }
    }

    /** fp32 elements {@code srcIndex…} of src rounded to fp16 and back into fp32 elements {@code dstIndex…} of dst. */
    public static void roundInto(MemorySegment src, long srcIndex, MemorySegment dst, long dstIndex, long n) {
        float[] f = FLOATS.get();
        for (long done = 0; done < n; done += CHUNK) {
            int m = (int) Math.min(CHUNK, n - done);
            MemorySegment.copy(src, F, (srcIndex + done) * 4, f, 0, m);
            round(f, 0, m);
            MemorySegment.copy(f, 0, dst, F, (dstIndex + done) * 4, m);
        }
    }
}
