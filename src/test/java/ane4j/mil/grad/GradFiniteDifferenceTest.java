package ane4j.mil.grad;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.mil.Mil;
import ane4j.mil.MilParser;
import ane4j.mil.Program;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The gradients checked without PyTorch: central finite differences of the forward program (fp32, reference backend)
 * against the generated gradient program, at up to 12 elements of every wrt input of every fp32 golden case.
 * L = Σ d_loss · loss (d_loss = 1 for a one-element loss); dL/dw[i] ≈ (L(w + h·eᵢ) − L(w − h·eᵢ)) / 2h, h = 1e-3·max(1, |w[i]|).
 */
class GradFiniteDifferenceTest {
    static List<GradGolden.Case> cases() { return GradGolden.load().stream().filter(c -> c.dtype().equals("fp32")).toList(); }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void matchesFiniteDifferences(GradGolden.Case c) throws Exception {
        Program forward = MilParser.parse(c.mil());
        Map<String, float[]> analytic = GradGolden.run(Mil.grad(forward, c.loss(), c.wrt().toArray(String[]::new)), c.inputs());
        GradGolden.Tensor up = c.inputs().get("d_" + c.loss());
        try (Kernel k = new RefBackend(RefBackend.Options.FP32_STORAGE).compile(forward)) {
            Map<String, TensorBuffer> in = new LinkedHashMap<>();
            for (var s : k.inputs()) in.put(s.name(), c.inputs().get(s.name()).buffer());
            for (String w : c.wrt()) {
                TensorBuffer b = in.get(w);
                float[] d = analytic.get("d_" + w);
                int n = (int) b.count(), probes = Math.min(n, 12);
                for (int p = 0; p < probes; p++) {
                    int i = (int) ((long) p * n / probes);
                    float x0 = b.get(i);
                    double h = 1e-3 * Math.max(1, Math.abs(x0));
                    b.set(i, (float) (x0 + h));
                    double plus = loss(k, in, c.loss(), up);
                    b.set(i, (float) (x0 - h));
                    double minus = loss(k, in, c.loss(), up);
                    b.set(i, x0);
                    double fd = (plus - minus) / (2 * h);
                    // fp32 forward: rounding of L (~1e-7·|L|) over 2h, plus the O(h²) truncation
                    double tol = 2e-3 + 1e-2 * Math.abs(d[i]);
                    assertTrue(Math.abs(fd - d[i]) <= tol, c.id() + " d_" + w + "[" + i + "]: finite difference " + fd + ", gradient program " + d[i]);
                }
            }
        }
    }

    private static double loss(Kernel k, Map<String, TensorBuffer> in, String name, GradGolden.Tensor up) {
        TensorBuffer out = k.evaluate(in).get(name);
        double s = 0;
        for (int i = 0; i < out.count(); i++) s += (double) out.get(i) * (up == null ? 1 : up.data()[i]);
        return s;
    }
}
