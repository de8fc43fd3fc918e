package ane4j.backend.ref;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.programs.AcceptancePrograms;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A8 (maderix's sdpaBwd1 + sdpaBwd2) on the reference backend with fp16 storage, against a float64 causal attention
 * backward written out in Java: dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P ⊙ (dP − rowsum(P ⊙ dP)), dQ = dS·K·scale, dK = dSᵀ·Q·scale.
 * Layout: a (Q_DIM, S) channel block holds head h, element d, position s at ((h·HD + d)·S + s).
 */
class AttentionBackwardTest {
    static final int H = 4, HD = 16, S = 32, QD = H * HD;
    static final double FP16_REL_TOL = 1e-2;

    @Test
    void a8MatchesAFloat64AttentionBackward() {
        var sizes = new AcceptancePrograms.Sizes("a8", QD, 2 * QD, H, H, HD, S, 1, 64);
        Random r = new Random(8);
        double[][][] q = rand(r), k = rand(r), v = rand(r), dout = rand(r);
        double scale = 1 / Math.sqrt(HD);

        // float64 reference
        double[][][] p = new double[H][S][S], dp = new double[H][S][S], ds = new double[H][S][S];
        double[][][] dv = new double[H][S][HD], dq = new double[H][S][HD], dk = new double[H][S][HD];
        for (int h = 0; h < H; h++) {
            for (int i = 0; i < S; i++) {
                // causal softmax row i over keys 0..i
                double max = Double.NEGATIVE_INFINITY;
                double[] sc = new double[S];
                for (int j = 0; j <= i; j++) { sc[j] = dot(q[h][i], k[h][j]) * scale; max = Math.max(max, sc[j]); }
                double sum = 0;
                for (int j = 0; j <= i; j++) sum += Math.exp(sc[j] - max);
                for (int j = 0; j <= i; j++) p[h][i][j] = Math.exp(sc[j] - max) / sum;
                for (int j = 0; j < S; j++) dp[h][i][j] = dot(dout[h][i], v[h][j]);
                double rowDot = 0;
                for (int j = 0; j < S; j++) rowDot += p[h][i][j] * dp[h][i][j];
                for (int j = 0; j < S; j++) ds[h][i][j] = p[h][i][j] * (dp[h][i][j] - rowDot);
            }
            for (int j = 0; j < S; j++)
                for (int d = 0; d < HD; d++) {
                    double a = 0, b = 0, c = 0;
                    for (int i = 0; i < S; i++) {
                        a += p[h][i][j] * dout[h][i][d];     // dV = Pᵀ·dO
                        b += ds[h][j][i] * k[h][i][d];       // dQ = dS·K
                        c += ds[h][i][j] * q[h][i][d];       // dK = dSᵀ·Q
                    }
                    dv[h][j][d] = a;
                    dq[h][j][d] = b * scale;
                    dk[h][j][d] = c * scale;
                }
        }

        RefBackend fp16 = new RefBackend(RefBackend.Options.ANE_LIKE);
        try (Kernel bwd1 = fp16.compile(AcceptancePrograms.a8SdpaBackward1(sizes)); Kernel bwd2 = fp16.compile(AcceptancePrograms.a8SdpaBackward2(sizes))) {
            TensorBuffer in1 = bwd1.allocateInput("x");
            put(in1, 0, q); put(in1, QD, k); put(in1, 2 * QD, v); put(in1, 3 * QD, dout);
            TensorBuffer out1 = bwd1.evaluate(Map.of("x", in1)).get("out");
            check("dV", dv, heads(out1, 0));
            check("probs", p, scores(out1, QD));
            check("dP", dp, scores(out1, QD + H * S));
            // part 2 on part 1's (fp16) probs and dP, as the training step chains them
            TensorBuffer in2 = bwd2.allocateInput("x");
            in2.copyChannels(out1, QD, 0, 2 * H * S);
            put(in2, 2 * H * S, q);
            put(in2, 2 * H * S + QD, k);
            TensorBuffer out2 = bwd2.evaluate(Map.of("x", in2)).get("out");
            check("dQ", dq, heads(out2, 0));
            check("dK", dk, heads(out2, QD));
        }
    }

    private static double[][][] rand(Random r) {
        double[][][] t = new double[H][S][HD];
        for (double[][] a : t) for (double[] b : a) for (int d = 0; d < HD; d++) b[d] = r.nextGaussian();
        return t;
    }

    private static double dot(double[] a, double[] b) {
        double s = 0;
        for (int i = 0; i < a.length; i++) s += a[i] * b[i];
        return s;
    }

    private static void put(TensorBuffer buf, int channel, double[][][] t) {
        for (int h = 0; h < H; h++) for (int d = 0; d < HD; d++) for (int s = 0; s < S; s++)
            buf.set((long) (channel + h * HD + d) * S + s, (float) t[h][s][d]);
    }

    private static double[][][] heads(TensorBuffer buf, int channel) {
        double[][][] t = new double[H][S][HD];
        for (int h = 0; h < H; h++) for (int d = 0; d < HD; d++) for (int s = 0; s < S; s++)
            t[h][s][d] = buf.get((long) (channel + h * HD + d) * S + s);
        return t;
    }

    /** (H·S, S) channels as [h][i][j]. */
    private static double[][][] scores(TensorBuffer buf, int channel) {
        double[][][] t = new double[H][S][S];
        for (int h = 0; h < H; h++) for (int i = 0; i < S; i++) for (int j = 0; j < S; j++)
            t[h][i][j] = buf.get((long) (channel + h * S + i) * S + j);
        return t;
    }

    private static void check(String name, double[][][] expected, double[][][] actual) {
        double num = 0, den = 0;
        for (int a = 0; a < expected.length; a++) for (int b = 0; b < expected[a].length; b++) for (int c = 0; c < expected[a][b].length; c++) {
            double e = expected[a][b][c] - actual[a][b][c];
            num += e * e;
            den += expected[a][b][c] * expected[a][b][c];
        }
        double rel = Math.sqrt(num / den);
        assertTrue(rel < FP16_REL_TOL, name + ": relative L2 error " + rel + " against float64");
    }
}
