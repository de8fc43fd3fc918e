package ane4j.blas;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class VectorMathTest {

    @Test
    void theTestJvmUsesTheVectorImplementation() {
        assertEquals("vector", VectorMath.implementation());
    }

    @Test
    void expIsWithinTwoUlpOfMathExpAboveTheFlushThreshold() {
        // 1M points over [-104, 89]: underflow, subnormal results, normal range, overflow; odd length for the tail
        int n = 1_000_003;
        float[] x = new float[n], y = new float[n];
        for (int i = 0; i < n; i++) x[i] = -104f + 193f * i / n;
        VectorMath.exp(x, 0, y, 0, n);
        for (int i = 0; i < n; i++) {
            float ref = (float) Math.exp(x[i]);
            // results below 2^-125 are flushed to 0 (no subnormal arithmetic)
            if (ref < 2 * Float.MIN_NORMAL) assertTrue(y[i] == 0f || Math.abs(y[i] - ref) <= 2 * Math.ulp(ref), "exp(" + x[i] + ") = " + y[i] + ", not ≈ " + ref);
            else if (ref < 4 * Float.MIN_NORMAL) assertTrue(Math.abs(y[i] - ref) <= 2 * Math.ulp(ref), "exp(" + x[i] + ") = " + y[i] + ", not ≈ " + ref);
            else if (Float.isInfinite(ref)) assertEquals(ref, y[i], "exp(" + x[i] + ")");
            else assertTrue(Math.abs(y[i] - ref) <= 2 * Math.ulp(ref), "exp(" + x[i] + ") = " + y[i] + ", Math.exp gives " + ref);
        }
    }

    @Test
    void vectorAndScalarExpGiveIdenticalBits() {
        // bit-identical resume and the worker/in-process comparisons depend on exp being the same function whether C2
        // has compiled the vector loop or not, and on machines without the Vector API
        int n = 200_017;
        float[] x = new float[n], y = new float[n];
        java.util.Random r = new java.util.Random(3);
        for (int i = 0; i < n; i++) x[i] = (float) (r.nextGaussian() * 30);
        for (int rep = 0; rep < 50; rep++) {
            VectorMath.exp(x, 0, y, 0, n);
            for (int i = 0; i < n; i += 1 + rep) assertEquals(Float.floatToRawIntBits(VectorMath.expScalar(x[i])), Float.floatToRawIntBits(y[i]), "exp(" + x[i] + ")");
        }
    }

    @Test
    void expHandlesSpecialValuesAndOffsets() {
        float[] a = {99f, 0f, -65504f, Float.NEGATIVE_INFINITY, Float.POSITIVE_INFINITY, Float.NaN, 1f, 99f};
        VectorMath.exp(a, 1, a, 1, 6);
        assertEquals(99f, a[0]);
        assertEquals(1f, a[1]);
        assertEquals(0f, a[2]);
        assertEquals(0f, a[3]);
        assertEquals(Float.POSITIVE_INFINITY, a[4]);
        assertTrue(Float.isNaN(a[5]));
        assertEquals((float) Math.E, a[6], 2 * Math.ulp((float) Math.E));
        assertEquals(99f, a[7]);
        assertThrows(IllegalArgumentException.class, () -> VectorMath.exp(a, 4, a, 0, 5));
    }

    @Test
    void maxIsMathMaxOverTheRunWithItsNanAndSignedZeroRules() {
        java.util.Random r = new java.util.Random(5);
        for (int n : new int[] {0, 1, 7, 16, 17, 255, 256, 1001}) {
            float[] a = new float[n + 3];
            for (int i = 0; i < a.length; i++) a[i] = (float) r.nextGaussian();
            float ref = Float.NEGATIVE_INFINITY;
            for (int i = 0; i < n; i++) ref = Math.max(ref, a[2 + i]);
            assertEquals(Float.floatToRawIntBits(ref), Float.floatToRawIntBits(VectorMath.max(a, 2, n)), "n = " + n);
        }
        float[] zeros = new float[40];
        java.util.Arrays.fill(zeros, -0f);
        assertEquals(Float.floatToRawIntBits(-0f), Float.floatToRawIntBits(VectorMath.max(zeros, 0, 40)));
        zeros[33] = 0f;
        assertEquals(Float.floatToRawIntBits(0f), Float.floatToRawIntBits(VectorMath.max(zeros, 0, 40)), "+0 is above −0 in any lane");
        float[] nan = new float[40];
        nan[5] = Float.NaN;
        nan[30] = Float.POSITIVE_INFINITY;
        assertTrue(Float.isNaN(VectorMath.max(nan, 0, 40)));
        assertTrue(Float.isNaN(VectorMath.max(nan, 5, 1)));
        assertEquals(Float.POSITIVE_INFINITY, VectorMath.max(nan, 6, 34));
        assertThrows(IllegalArgumentException.class, () -> VectorMath.max(nan, 30, 11));
    }

    @Test
    void sumOfSquaresGivesTheScalarLoopsBitsAtAnyOffsetAndLength() {
        // the gradient norm decides clipping: a resumed run, a run without the Vector API and this one must agree
        java.util.Random r = new java.util.Random(7);
        float[] a = new float[5000];
        for (int i = 0; i < a.length; i++) a[i] = (float) (r.nextGaussian() * Math.exp(r.nextGaussian() * 4));
        for (int from : new int[] {0, 1, 7, 1023})
            for (int n : new int[] {0, 1, 7, 8, 9, 1024, 1031, 2048 + 5, 3900})
                for (float k : new float[] {1f, 0.25f, 3e-5f})
                    assertEquals(Double.doubleToRawLongBits(VectorMath.sumOfSquaresScalar(a, from, from + n, k)),
                            Double.doubleToRawLongBits(VectorMath.sumOfSquares(a, from, from + n, k)), "from " + from + ", n " + n + ", k " + k);
        // the sums are lane by lane (j, j+8, …), as AdamW's clipping has always summed them
        float[] lanes = new float[8];
        for (int i = 0; i < 1024; i++) lanes[i % 8] += a[i] * a[i];
        double byLane = ((double) lanes[0] + lanes[1] + lanes[2] + lanes[3]) + ((double) lanes[4] + lanes[5] + lanes[6] + lanes[7]);
        assertEquals(Double.doubleToRawLongBits(byLane), Double.doubleToRawLongBits(VectorMath.sumOfSquares(a, 0, 1024, 1f)));
        a[4000] = Float.POSITIVE_INFINITY;
        assertEquals(Double.POSITIVE_INFINITY, VectorMath.sumOfSquares(a, 3990, 4010, 1f));
        a[4001] = Float.NaN;
        assertTrue(Double.isNaN(VectorMath.sumOfSquares(a, 3990, 4010, 1f)));
        assertThrows(IllegalArgumentException.class, () -> VectorMath.sumOfSquares(a, 10, 9, 1f));
        assertThrows(IllegalArgumentException.class, () -> VectorMath.sumOfSquares(a, 0, 5001, 1f));
    }
}
