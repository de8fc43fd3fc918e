package ane4j.golden;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class TensorCheckTest {

    @Test
    void passesWithinToleranceAndReportsTheFirstAndWorstBadElement() {
        float[] exp = {1f, 2f, 3f, 4f};
        assertDoesNotThrow(() -> TensorCheck.checkTensor("t", exp, new float[] {1f, 2.000001f, 3f, 4f}, 1e-5, 0));
        assertDoesNotThrow(() -> TensorCheck.checkTensor("t", exp, new float[] {1f, 2f, 3.002f, 4f}, 0, 1e-3));
        AssertionError e = assertThrows(AssertionError.class,
                () -> TensorCheck.checkTensor("grad.wq", exp, new float[] {1f, 2.1f, 3f, 5f}, 1e-5, 0));
        assertTrue(e.getMessage().startsWith("grad.wq: TENSOR NOT OK, 4 values, maxdiff 1.000e+00 at [3], relL2 "), e.getMessage());
        assertTrue(e.getMessage().contains("2 of 4 outside") && e.getMessage().contains("first bad [1] expected 2.0000000 got 2.0999999"), e.getMessage());
        assertTrue(!e.getMessage().contains("\n"), "one line");
    }

    @Test
    void nanAndLengthMismatchFail() {
        assertThrows(AssertionError.class, () -> TensorCheck.checkTensor("t", new float[] {1f}, new float[] {Float.NaN}, 1, 1));
        assertThrows(AssertionError.class, () -> TensorCheck.checkTensor("t", new float[] {1f}, new float[] {1f, 2f}, 1, 1));
        assertTrue(Double.isNaN(TensorCheck.maxAbsDiff(new float[] {1f}, new float[] {Float.NaN})));
        assertEquals(0.5, TensorCheck.maxAbsDiff(new float[] {1f, 2f}, new float[] {1.5f, 2f}), 0);
    }

    @Test
    void relativeL2IsTheNormOfTheErrorOverTheNormOfTheReference() {
        // e = (3, 4): ‖e‖ = 5; a − e = (0.3, 0.4): ‖a − e‖ = 0.5
        TensorCheck.Report r = TensorCheck.compare("t", new float[] {3f, 4f}, new float[] {3.3f, 4.4f}, 1, 0, null);
        assertEquals(0.1, r.relL2(), 1e-6);
        assertEquals(0.4, r.maxAbsDiff(), 1e-6);
        assertEquals(1, r.maxAt());
        assertDoesNotThrow(() -> TensorCheck.checkRelL2("t", new float[] {3f, 4f}, new float[] {3.3f, 4.4f}, 0.11));
        AssertionError e = assertThrows(AssertionError.class, () -> TensorCheck.checkRelL2("t", new float[] {3f, 4f}, new float[] {3.3f, 4.4f}, 0.09));
        assertTrue(e.getMessage().endsWith("relL2 above 0.09"), e.getMessage());
        assertThrows(AssertionError.class, () -> TensorCheck.checkRelL2("t", new float[] {3f, 4f}, new float[] {3f, Float.POSITIVE_INFINITY}, 1));
        assertDoesNotThrow(() -> TensorCheck.checkTensor("t", new float[] {Float.NaN, Float.NEGATIVE_INFINITY}, new float[] {Float.NaN, Float.NEGATIVE_INFINITY}, 0, 0));
    }
}
