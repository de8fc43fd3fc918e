package ane4j.blas;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link MatVec} on the Vector API; only loaded (reflectively) when {@code jdk.incubator.vector} is present. Two 4-lane
 * accumulators per row (lanes 0–3 and 4–7 of {@link MatVec#rowScalar}), four rows at a time so each load of x serves
 * four rows: the same operations in the same order as the scalar loop, so both give identical bits. One flat loop
 * body, as {@code VectorMathSimd}.
 */
final class MatVecSimd implements MatVec.Impl {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_128;

    @Override
    public void rows(float[] y, float[] x, float[] w, int wo, int cols, int from, int to) {
        int bound = cols & ~7;
        int r = from;
        for (; r + 3 < to; r += 4) {
            int b0 = wo + r * cols, b1 = b0 + cols, b2 = b1 + cols, b3 = b2 + cols;
            FloatVector a0 = FloatVector.zero(S), c0 = FloatVector.zero(S), a1 = FloatVector.zero(S), c1 = FloatVector.zero(S);
            FloatVector a2 = FloatVector.zero(S), c2 = FloatVector.zero(S), a3 = FloatVector.zero(S), c3 = FloatVector.zero(S);
            for (int c = 0; c < bound; c += 8) {
                FloatVector xa = FloatVector.fromArray(S, x, c), xc = FloatVector.fromArray(S, x, c + 4);
                a0 = FloatVector.fromArray(S, w, b0 + c).fma(xa, a0);
                c0 = FloatVector.fromArray(S, w, b0 + c + 4).fma(xc, c0);
                a1 = FloatVector.fromArray(S, w, b1 + c).fma(xa, a1);
                c1 = FloatVector.fromArray(S, w, b1 + c + 4).fma(xc, c1);
                a2 = FloatVector.fromArray(S, w, b2 + c).fma(xa, a2);
                c2 = FloatVector.fromArray(S, w, b2 + c + 4).fma(xc, c2);
                a3 = FloatVector.fromArray(S, w, b3 + c).fma(xa, a3);
                c3 = FloatVector.fromArray(S, w, b3 + c + 4).fma(xc, c3);
            }
            // s = (l0+l4, l1+l5, l2+l6, l3+l7) → ((s0+s2)+(s1+s3)), then the columns past the last whole 8
            FloatVector s0 = a0.add(c0), s1 = a1.add(c1), s2 = a2.add(c2), s3 = a3.add(c3);
            y[r] = tail((s0.lane(0) + s0.lane(2)) + (s0.lane(1) + s0.lane(3)), x, w, b0, bound, cols);
            y[r + 1] = tail((s1.lane(0) + s1.lane(2)) + (s1.lane(1) + s1.lane(3)), x, w, b1, bound, cols);
            y[r + 2] = tail((s2.lane(0) + s2.lane(2)) + (s2.lane(1) + s2.lane(3)), x, w, b2, bound, cols);
            y[r + 3] = tail((s3.lane(0) + s3.lane(2)) + (s3.lane(1) + s3.lane(3)), x, w, b3, bound, cols);
        }
        for (; r < to; r++) {
            int b0 = wo + r * cols;
            FloatVector a0 = FloatVector.zero(S), c0 = FloatVector.zero(S);
            for (int c = 0; c < bound; c += 8) {
                a0 = FloatVector.fromArray(S, w, b0 + c).fma(FloatVector.fromArray(S, x, c), a0);
                c0 = FloatVector.fromArray(S, w, b0 + c + 4).fma(FloatVector.fromArray(S, x, c + 4), c0);
            }
            FloatVector s0 = a0.add(c0);
            y[r] = tail((s0.lane(0) + s0.lane(2)) + (s0.lane(1) + s0.lane(3)), x, w, b0, bound, cols);
        }
    }

    // the columns past the last whole 8, in order (scalars only: a vector argument boxes when C2 does not inline)
    private static float tail(float sum, float[] x, float[] w, int base, int bound, int cols) {
        for (int c = bound; c < cols; c++) sum = Math.fma(w[base + c], x[c], sum);
        return sum;
    }

    @Override
    public String name() { return "vector"; }
}
