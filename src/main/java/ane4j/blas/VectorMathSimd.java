package ane4j.blas;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link VectorMath} on the Vector API; only loaded (reflectively) when {@code jdk.incubator.vector} is present. The
 * same steps as {@link VectorMath#expScalar}, lane by lane, so both give identical bits.
 */
final class VectorMathSimd implements VectorMath.Impl {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> I = S.withLanes(int.class);

    @Override
    public void exp(float[] src, int srcOff, float[] dst, int dstOff, int n) {
        int i = 0;
        for (int bound = S.loopBound(n); i < bound; i += S.length()) exp(FloatVector.fromArray(S, src, srcOff + i)).intoArray(dst, dstOff + i);
        for (; i < n; i++) dst[dstOff + i] = VectorMath.expScalar(src[srcOff + i]);
    }

    private static FloatVector exp(FloatVector x) {
        // x = n·ln2 + r, |r| ≤ ln2/2: n by the round-to-nearest of adding 1.5·2^23, r in two fma steps (Cody–Waite)
        x = x.max(VectorMath.EXP_LO).min(VectorMath.EXP_HI);
        FloatVector t = x.fma(VectorMath.LOG2E, VectorMath.ROUND);
        FloatVector k = t.sub(VectorMath.ROUND);
        IntVector n = t.reinterpretAsInts().sub(VectorMath.ROUND_BITS);
        FloatVector r = k.neg().fma(FloatVector.broadcast(S, VectorMath.LN2_HI), x);
        r = k.neg().fma(FloatVector.broadcast(S, VectorMath.LN2_LO), r);
        // exp(r) ≈ 1 + r + r²·P(r) (Cephes expf coefficients)
        FloatVector p = r.fma(VectorMath.P0, VectorMath.P1);
        p = p.fma(r, FloatVector.broadcast(S, VectorMath.P2));
        p = p.fma(r, FloatVector.broadcast(S, VectorMath.P3));
        p = p.fma(r, FloatVector.broadcast(S, VectorMath.P4));
        p = p.fma(r, FloatVector.broadcast(S, VectorMath.P5));
        p = p.mul(r.mul(r)).add(r).add(1f);
        // · 2^n1 · 2^n2 with n1 = n >> 1, n2 = n − n1: both normal for n in [−160, 128], so subnormal results round
        // correctly and x ≤ −110 gives exactly 0
        IntVector n1 = n.lanewise(VectorOperators.ASHR, 1), n2 = n.sub(n1);
        FloatVector s1 = n1.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
        FloatVector s2 = n2.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
        return p.mul(s1).mul(s2);
    }

    @Override public String name() { return "vector"; }
}
