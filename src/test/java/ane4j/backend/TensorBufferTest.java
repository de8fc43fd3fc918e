package ane4j.backend;

import ane4j.mil.DType;
import ane4j.mil.TensorType;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

class TensorBufferTest {
    @Test
    void channelViewSharesMemoryAndWritesThrough() {
        TensorBuffer b = TensorBuffer.allocate(DType.FP16, 1, 8, 1, 4);
        TensorBuffer v = b.channels(2, 3);
        assertEquals(TensorType.of(DType.FP16, 1, 3, 1, 4), v.type());
        // same memory: the view's address is the parent's plus 2 channels of 4 fp16
        assertEquals(b.segment().address() + 2 * 4 * 2, v.segment().address());
        v.set(0, 1.5f);
        v.set(11, -2f);
        assertEquals(1.5f, b.get(8));
        assertEquals(-2f, b.get(19));
    }

    @Test
    void fp16RoundsToNearestEvenOverflowsAndKeepsSubnormals() {
        TensorBuffer b = TensorBuffer.allocate(DType.FP16, 4);
        b.copyFrom(new float[] {1f + 1f / 2048, 70000f, 1e-7f, 1f + 3f / 2048});
        assertEquals(1f, b.get(0));                 // halfway between 1 and 1+2^-10 → even (1)
        assertEquals(Float.POSITIVE_INFINITY, b.get(1));
        assertEquals(Float.float16ToFloat((short) 2), b.get(2)); // 1e-7 ≈ 1.68 · 2^-24 → subnormal 2·2^-24
        assertEquals(1f + 4f / 2048, b.get(3));     // halfway → even (1+2^-9)
    }

    @Test
    void writeColumnsPlacesRowsAfterTheActivations() {
        int c = 3, seq = 2, oc = 4;
        TensorBuffer x = TensorBuffer.allocate(DType.FP32, 1, c, 1, seq + oc);
        float[] w = new float[c * oc];
        for (int i = 0; i < w.length; i++) w[i] = i + 1;
        x.writeColumns(seq, oc, w);
        for (int ch = 0; ch < c; ch++) {
            assertEquals(0f, x.get(ch * (seq + oc)));
            for (int j = 0; j < oc; j++) assertEquals(w[ch * oc + j], x.get(ch * (seq + oc) + seq + j));
        }
        float[] back = new float[c * oc];
        x.readColumns(0, c, seq, oc, back, 0, oc);
        assertArrayEquals(w, back);
    }

    @Test
    void copyChannelsConvertsBetweenTypes() {
        TensorBuffer a = TensorBuffer.of(TensorType.of(DType.FP32, 1, 2, 1, 2), 1, 2, 3, 4);
        TensorBuffer b = TensorBuffer.allocate(DType.FP16, 1, 3, 1, 2);
        b.copyChannels(a, 1, 2, 1);
        assertArrayEquals(new float[] {0, 0, 0, 0, 3, 4}, b.toFloatArray());
        assertThrows(IndexOutOfBoundsException.class, () -> b.copyChannels(a, 1, 2, 2));
    }

    @Test
    void intTypesSaturateAndTruncate() {
        TensorBuffer b = TensorBuffer.allocate(DType.INT8, 3);
        b.copyFrom(new float[] {300, -2.7f, -300});
        assertArrayEquals(new float[] {127, -2, -128}, b.toFloatArray());
    }
}
