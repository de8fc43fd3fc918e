package ane4j.blas;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link VectorMath} on the Vector API; only loaded (reflectively) when {@code jdk.incubator.vector} is present. The
 * same steps as {@link VectorMath#expScalar}, lane by lane, so both give identical bits. One flat loop body: a helper
 * method taking and returning vectors would box them when C2 does not inline it.
 */
final class VectorMathSimd implements VectorMath.Impl {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    @Override
    public void exp(float[] src, int srcOff, float[] dst, int dstOff, int n) {
        FloatVector lo = FloatVector.broadcast(S, VectorMath.EXP_LO), hi = FloatVector.broadcast(S, VectorMath.EXP_HI);
        FloatVector log2e = FloatVector.broadcast(S, VectorMath.LOG2E), round = FloatVector.broadcast(S, VectorMath.ROUND);
        FloatVector ln2Hi = FloatVector.broadcast(S, VectorMath.LN2_HI), ln2Lo = FloatVector.broadcast(S, VectorMath.LN2_LO);
        FloatVector p0 = FloatVector.broadcast(S, VectorMath.P0), p1 = FloatVector.broadcast(S, VectorMath.P1);
        FloatVector p2 = FloatVector.broadcast(S, VectorMath.P2), p3 = FloatVector.broadcast(S, VectorMath.P3);
        FloatVector p4 = FloatVector.broadcast(S, VectorMath.P4), p5 = FloatVector.broadcast(S, VectorMath.P5);
        FloatVector one = FloatVector.broadcast(S, 1f), two = FloatVector.broadcast(S, 2f);
        int i = 0;
        for (int bound = S.loopBound(n); i < bound; i += S.length()) {
            FloatVector x = FloatVector.fromArray(S, src, srcOff + i).max(lo).min(hi);
            // x = n·ln2 + r, |r| ≤ ln2/2: n by the round-to-nearest of adding 1.5·2^23, r in two fma steps (Cody–Waite)
            FloatVector t = x.fma(log2e, round);
            FloatVector k = t.sub(round);
            IntVector e = t.reinterpretAsInts().sub(VectorMath.ROUND_BITS).max(-126);
            FloatVector r = k.neg().fma(ln2Hi, x);
            r = k.neg().fma(ln2Lo, r);
            // exp(r) ≈ 1 + r + r²·P(r) (Cephes expf coefficients)
            FloatVector p = r.fma(p0, p1).fma(r, p2).fma(r, p3).fma(r, p4).fma(r, p5);
            p = p.mul(r.mul(r)).add(r).add(one);
            // · 2^(e−1) · 2: the exponent field e + 126 stays in [0, 254]; e ≤ −126 gives the field 0, a scale of exactly
            // 0, so results below ~1.7e-38 are 0 without subnormal arithmetic (an x86 microcode assist per element)
            FloatVector scale = e.add(126).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
            p.mul(scale).mul(two).intoArray(dst, dstOff + i);
        }
        for (; i < n; i++) dst[dstOff + i] = VectorMath.expScalar(src[srcOff + i]);
    }

    @Override
    public float max(float[] a, int off, int n) {
        FloatVector acc = FloatVector.broadcast(S, Float.NEGATIVE_INFINITY);
        int i = 0;
        for (int bound = S.loopBound(n); i < bound; i += S.length()) acc = acc.max(FloatVector.fromArray(S, a, off + i));
        float m = acc.reduceLanes(VectorOperators.MAX);
        for (; i < n; i++) m = Math.max(m, a[off + i]);
        return m;
    }

    /** Eight lanes: the eight sums of {@link VectorMath#sumOfSquaresScalar}. */
    private static final VectorSpecies<Float> EIGHT = FloatVector.SPECIES_256;
    private static final boolean EIGHT_NATIVE = S.vectorBitSize() >= 256;

    @Override
    public double sumOfSquares(float[] a, int from, int end, float k) {
        if (!EIGHT_NATIVE) return VectorMath.sumOfSquaresScalar(a, from, end, k);
        double ss = 0;
        for (int b = from; b < end; b += VectorMath.SQUARES_BLOCK) {
            int be = Math.min(end, b + VectorMath.SQUARES_BLOCK), i = b;
            FloatVector acc = FloatVector.zero(EIGHT);
            for (; i + 8 <= be; i += 8) {
                FloatVector g = FloatVector.fromArray(EIGHT, a, i).mul(k);
                acc = acc.add(g.mul(g));
            }
            float a0 = acc.lane(0);
            for (; i < be; i++) { float g = k * a[i]; a0 += g * g; }
            ss += ((double) a0 + acc.lane(1) + acc.lane(2) + acc.lane(3)) + ((double) acc.lane(4) + acc.lane(5) + acc.lane(6) + acc.lane(7));
        }
        return ss;
    }

    @Override public String name() { return "vector"; }
}
