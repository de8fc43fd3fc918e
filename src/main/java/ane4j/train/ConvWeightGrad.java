package ane4j.train;

import ane4j.blas.Blas;
import ane4j.blas.Layout;
import ane4j.blas.Transpose;
import ane4j.mil.grad.Grad;

/**
 * The weight gradient of a MIL conv on the CPU, as the training split forms matmul/linear's (issue 31): im2col of the
 * saved input, then one sgemm per sample and group.
 *
 * <pre>
 *   legend: N batch, C = Cin input channels, O = Cout output channels, G groups, P spatial dims (1–3),
 *           K[i] kernel size, S[i] stride, D[i] dilation, B[i] padding before, H[i] input size, Q[i] output size
 *   forward: y[n, o, q] = Σ_{c in o's group, k} W[o, c, k] · x[n, c, q·S + k·D − B]      (zero outside x)
 *   dW[o, c, k] = Σ_{n, q} g[n, o, q] · x[n, g·C/G + c, q·S + k·D − B]
 *   as matrices, per sample n and group g:
 *       col [C/G·ΠK, ΠQ]  col[(c, k), q] = x[n, g·C/G + c, q·S + k·D − B]     (im2col)
 *       dW_g [O/G, C/G·ΠK] += g_g [O/G, ΠQ] · colᵀ
 * </pre>
 * dW [O, C/G, K…] row-major is exactly the G blocks dW_g one under the other, so each sgemm accumulates in place.
 * Checked against PyTorch autograd by {@code GraphStepConvTest} (golden/grad/grad.json, fp32 and fp16).
 */
public final class ConvWeightGrad {
    private ConvWeightGrad() {}

    /**
     * Adds dW into {@code dw[dwOffset …]} (layout [O, C/G, K…]).
     * @param x      the conv's input, [N, C, H…] row-major
     * @param xShape its shape
     * @param g      the upstream gradient of the conv's output, [N, O, Q…] row-major
     * @param gShape its shape
     * @param kernel the spatial kernel sizes K (the weight's shape after [O, C/G])
     */
    public static void accumulate(float[] x, int[] xShape, float[] g, int[] gShape, int[] kernel, Grad.ConvGeometry geo,
                                  float[] dw, int dwOffset) {
        int p = xShape.length - 2, n = xShape[0], c = xShape[1], o = gShape[1], groups = geo.groups();
        int cg = c / groups, og = o / groups;
        int[] h = new int[p], q = new int[p];
        for (int i = 0; i < p; i++) {
            h[i] = xShape[2 + i];
            q[i] = gShape[2 + i];
        }
        int hw = prod(h), qw = prod(q), kw = prod(kernel), rows = cg * kw;
        float[] col = new float[rows * qw];
        int[] qi = new int[p], ki = new int[p];
        for (int b = 0; b < n; b++)
            for (int gr = 0; gr < groups; gr++) {
                // im2col of this sample's group: col[(c, k), q] = x[b, gr·C/G + c, q·S + k·D − B], 0 in the padding
                for (int ch = 0; ch < cg; ch++) {
                    int xBase = (b * c + gr * cg + ch) * hw;
                    for (int kf = 0; kf < kw; kf++) {
                        unflatten(kf, kernel, ki);
                        int rowBase = (ch * kw + kf) * qw;
                        for (int qf = 0; qf < qw; qf++) {
                            unflatten(qf, q, qi);
                            int at = 0;
                            boolean inside = true;
                            for (int i = 0; i < p && inside; i++) {
                                int pos = qi[i] * geo.strides()[i] + ki[i] * geo.dilations()[i] - geo.padBefore()[i];
                                inside = pos >= 0 && pos < h[i];
                                at = at * h[i] + pos;
                            }
                            col[rowBase + qf] = inside ? x[xBase + at] : 0f;
                        }
                    }
                }
                // dW_g [O/G, C/G·ΠK] += g_g [O/G, ΠQ] · colᵀ
                int gOff = (b * o + gr * og) * qw;
                Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, og, rows, qw, 1f, g, gOff, qw, col, 0, qw, 1f, dw,
                        dwOffset + gr * og * rows, rows);
            }
    }

    /** Row-major index → coordinates in {@code dims}. */
    private static void unflatten(int flat, int[] dims, int[] into) {
        for (int i = dims.length - 1; i >= 0; i--) {
            into[i] = flat % dims[i];
            flat /= dims[i];
        }
    }

    private static int prod(int[] a) {
        int r = 1;
        for (int v : a) r *= v;
        return r;
    }
}
