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
        assertTrue(e.getMessage().startsWith("grad.wq: 2 of 4 elements"), e.getMessage());
        assertTrue(e.getMessage().contains("first bad [1]") && e.getMessage().contains("at [3]"), e.getMessage());
    }

    @Test
    void nanAndLengthMismatchFail() {
        assertThrows(AssertionError.class, () -> TensorCheck.checkTensor("t", new float[] {1f}, new float[] {Float.NaN}, 1, 1));
        assertThrows(AssertionError.class, () -> TensorCheck.checkTensor("t", new float[] {1f}, new float[] {1f, 2f}, 1, 1));
        assertTrue(Double.isNaN(TensorCheck.maxAbsDiff(new float[] {1f}, new float[] {Float.NaN})));
        assertEquals(0.5, TensorCheck.maxAbsDiff(new float[] {1f, 2f}, new float[] {1.5f, 2f}), 0);
    }
}
