package ane4j.blas;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** y = W·x for generation: one summation order with or without the Vector API, however the rows are split, close to exact. */
class MatVecTest {
    private static float[] random(int n, long seed) {
        Random r = new Random(seed);
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = (float) r.nextGaussian();
        return a;
    }

    @Test
    void theTestJvmUsesTheVectorImplementation() {
        assertEquals("vector", MatVec.implementation());
    }

    @Test
    void vectorRowsEqualTheScalarOrderBitForBitAtEverySize() {
        // cols not a multiple of 8 (the tail), rows not a multiple of 4, W at an offset; repeated so C2's code is checked too
        int[][] shapes = {{1, 1}, {3, 7}, {5, 8}, {4, 9}, {13, 64}, {7, 100}, {33, 288}, {96, 768}, {130, 2049}};
        for (int rep = 0; rep < 20; rep++) {
            for (int[] s : shapes) {
                int rows = s[0], cols = s[1], wo = 5;
                float[] w = random(wo + rows * cols + 3, rows * 31L + cols), x = random(cols, cols), y = new float[rows];
                MatVec.IMPL.rows(y, x, w, wo, cols, 0, rows);
                for (int r = 0; r < rows; r++)
                    assertEquals(Float.floatToRawIntBits(MatVec.rowScalar(x, w, wo + (long) r * cols, cols)), Float.floatToRawIntBits(y[r]), rows + "×" + cols + " row " + r);
            }
        }
    }

    @Test
    void largeMatricesSplitAcrossCoresGiveTheSequentialResultCloseToExact() {
        int rows = 2051, cols = 768;
        float[] w = random(rows * cols, 1), x = random(cols, 2), y = new float[rows];
        MatVec.multiply(y, x, w, 0, rows, cols);
        for (int r = 0; r < rows; r++) {
            double exact = 0, abs = 0;
            for (int c = 0; c < cols; c++) {
                exact += (double) w[r * cols + c] * x[c];
                abs += Math.abs((double) w[r * cols + c] * x[c]);
            }
            assertEquals(Float.floatToRawIntBits(MatVec.rowScalar(x, w, (long) r * cols, cols)), Float.floatToRawIntBits(y[r]), "row " + r);
            assertTrue(Math.abs(y[r] - exact) <= 1e-6 * abs + 1e-30, "row " + r + ": " + y[r] + " vs " + exact);
        }
    }

    @Test
    void shapesThatDoNotFitAreRefused() {
        var e = assertThrows(IllegalArgumentException.class, () -> MatVec.multiply(new float[2], new float[3], new float[5], 0, 2, 3));
        assertTrue(e.getMessage().startsWith("[matvec] W of 2×3 at 0 (of 5)"), e.getMessage());
    }
}
