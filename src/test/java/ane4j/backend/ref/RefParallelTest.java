package ane4j.backend.ref;

import static ane4j.mil.Mil.fp16;
import static org.junit.jupiter.api.Assertions.*;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Large tensors take the interpreter's parallel paths (elementwise rows split across threads, one long row split into
 * pieces, fp16 rounding and softmax rows in parallel): results must equal a direct computation element for element.
 */
class RefParallelTest {
    static float round16(float v) { return Float.float16ToFloat(Float.floatToFloat16(v)); }

    static float[] run(Program p, float[] x, float[] y) {
        try (Kernel k = new RefBackend(RefBackend.Options.ANE_LIKE).compile(p)) {
            TensorBuffer bx = k.allocateInput("x");
            bx.copyFrom(x);
            Map<String, TensorBuffer> in = y == null ? Map.of("x", bx) : Map.of("x", bx, "y", filled(k.allocateInput("y"), y));
            return k.evaluate(in).values().iterator().next().toFloatArray();
        }
    }

    static TensorBuffer filled(TensorBuffer b, float[] v) { b.copyFrom(v); return b; }

    static float[] pattern(int n, double f) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = round16((float) Math.sin(i * f) * 3);
        return v;
    }

    @Test
    void broadcastMulOverManyRows() {
        int h = 6, s = 300, w = 128;   // 230400 elements, y broadcast along w
        Program p = Mil.program().function("main", f -> {
            var x = f.input("x", fp16(1, h, s, w));
            var y = f.input("y", fp16(1, 1, s, 1));
            f.output(f.named("z", f.mul(x, y)));
        }).build();
        float[] x = pattern(h * s * w, 0.013), y = pattern(s, 0.7);
        float[] z = run(p, x, y);
        for (int c = 0; c < h; c++)
            for (int i = 0; i < s; i++)
                for (int j = 0; j < w; j++) {
                    int k = (c * s + i) * w + j;
                    assertEquals(round16(x[k] * y[i]), z[k], 0f, "element " + k);
                }
    }

    @Test
    void denseAddAsOneLongRow() {
        int n = 200_003;   // not a multiple of the piece count
        Program p = Mil.program().function("main", f -> {
            var x = f.input("x", fp16(1, 1, 1, n));
            var y = f.input("y", fp16(1, 1, 1, n));
            f.output(f.named("z", f.add(x, y)));
        }).build();
        float[] x = pattern(n, 0.011), y = pattern(n, 0.029);
        float[] z = run(p, x, y);
        for (int i = 0; i < n; i++) assertEquals(round16(x[i] + y[i]), z[i], 0f, "element " + i);
    }

    @Test
    void softmaxOverManyRows() {
        int h = 4, s = 128;   // 65536 elements
        Program p = Mil.program().function("main", f -> {
            var x = f.input("x", fp16(1, h, s, s));
            f.output(f.named("z", f.softmax(x, -1)));
        }).build();
        float[] x = pattern(h * s * s, 0.0037);
        float[] z = run(p, x, null);
        for (int r = 0; r < h * s; r++) {
            float max = Float.NEGATIVE_INFINITY;
            for (int j = 0; j < s; j++) max = Math.max(max, x[r * s + j]);
            float sum = 0;
            float[] e = new float[s];
            // the interpreter's exp is ane4j.blas.VectorMath.exp (≤ 2 ulp from Math.exp, the same bits everywhere)
            for (int j = 0; j < s; j++) e[j] = x[r * s + j] - max;
            ane4j.blas.VectorMath.expInPlace(e, s);
            sum = Reductions.sum8(e, s);   // the documented summation order
            for (int j = 0; j < s; j++) assertEquals(round16(e[j] * (1f / sum)), z[r * s + j], 0f, "row " + r + " col " + j);
        }
    }
}
