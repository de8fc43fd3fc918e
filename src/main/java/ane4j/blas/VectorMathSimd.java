package ane4j.blas;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/** {@link VectorMath} on the Vector API; only loaded (reflectively) when {@code jdk.incubator.vector} is present. */
final class VectorMathSimd implements VectorMath.Impl {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    @Override
    public void exp(float[] src, int srcOff, float[] dst, int dstOff, int n) {
        int i = 0;
        for (int bound = S.loopBound(n); i < bound; i += S.length())
            FloatVector.fromArray(S, src, srcOff + i).lanewise(VectorOperators.EXP).intoArray(dst, dstOff + i);
        if (i < n) {
            var m = S.indexInRange(i, n);
            FloatVector.fromArray(S, src, srcOff + i, m).lanewise(VectorOperators.EXP, m).intoArray(dst, dstOff + i, m);
        }
    }

    @Override public String name() { return "vector"; }
}
