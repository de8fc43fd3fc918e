package ane4j.mil;

/** IEEE 754 binary16 conversions: round-to-nearest-even, overflow to ±inf, subnormals kept (as on the ANE). */
public final class Fp16 {
    private Fp16() {}

    public static final float MAX = 65504f;

    public static short fromFloat(float f) { return Float.floatToFloat16(f); }

    public static float toFloat(short h) { return Float.float16ToFloat(h); }

    /** Rounds {@code f} to the nearest fp16 value and back. */
    public static float round(float f) { return Float.float16ToFloat(Float.floatToFloat16(f)); }

    public static short[] fromFloats(float[] src) {
        short[] out = new short[src.length];
        for (int i = 0; i < src.length; i++) out[i] = Float.floatToFloat16(src[i]);
        return out;
    }

    public static float[] toFloats(short[] src) {
        float[] out = new float[src.length];
        for (int i = 0; i < src.length; i++) out[i] = Float.float16ToFloat(src[i]);
        return out;
    }
}
