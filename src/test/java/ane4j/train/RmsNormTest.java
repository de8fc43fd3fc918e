package ane4j.train;

import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * RMSNorm forward and backward over channels (stories110m's 768 × 256, an odd 200 × 72, a small 8 × 16) give the bits
 * of plain loops in the same summation order (channel by channel, per position; dw per channel in double), whichever
 * rows the parallel part splits off.
 */
class RmsNormTest {
    @Test
    void parallelBlocksGiveTheSerialBits() {
        for (int[] cs : new int[][] {{768, 256}, {200, 72}, {8, 16}}) {
            int ch = cs[0], seq = cs[1], n = ch * seq;
            Random r = new Random(ch);
            float[] x = new float[n], dout = new float[n], w = new float[ch + 3];
            for (int i = 0; i < n; i++) { x[i] = (float) r.nextGaussian(); dout[i] = (float) r.nextGaussian(); }
            for (int i = 0; i < w.length; i++) w[i] = 1 + 0.1f * (float) r.nextGaussian();
            float eps = 1e-5f;
            // serial reference
            double[] ss = new double[seq];
            for (int c = 0; c < ch; c++) for (int s = 0; s < seq; s++) ss[s] += (double) x[c * seq + s] * x[c * seq + s];
            float[] rr = new float[seq], y = new float[n];
            for (int s = 0; s < seq; s++) rr[s] = (float) (1.0 / Math.sqrt(ss[s] / ch + eps));
            for (int c = 0; c < ch; c++) for (int s = 0; s < seq; s++) y[c * seq + s] = x[c * seq + s] * rr[s] * w[3 + c];
            float[] dot = new float[seq], k = new float[seq], dx = new float[n], dw = new float[ch + 3];
            for (int c = 0; c < ch; c++) for (int s = 0; s < seq; s++) dot[s] += dout[c * seq + s] * w[3 + c] * x[c * seq + s];
            for (int s = 0; s < seq; s++) k[s] = rr[s] * rr[s] * dot[s] / ch * rr[s];
            for (int c = 0; c < ch; c++) {
                double dwc = 0;
                for (int s = 0; s < seq; s++) {
                    int i = c * seq + s;
                    dx[i] = rr[s] * w[3 + c] * dout[i] - x[i] * k[s];
                    dwc += dout[i] * x[i] * rr[s];
                }
                dw[3 + c] += (float) dwc;
            }
            float[] gotY = new float[n], gotR = new float[seq], gotDx = new float[n], gotDw = new float[ch + 3];
            CpuOps.rmsnormForward(gotY, gotR, x, w, 3, ch, seq, eps);
            CpuOps.rmsnormBackward(gotDx, gotDw, 3, dout, x, w, 3, gotR, ch, seq);
            String what = ch + "×" + seq;
            assertArrayEquals(rr, gotR, 0f, what + " rrms");
            assertArrayEquals(y, gotY, 0f, what + " forward");
            assertArrayEquals(dx, gotDx, 0f, what + " dx");
            assertArrayEquals(dw, gotDw, 0f, what + " dw");
            assertEquals(0f, gotDw[0]);
        }
    }
}
