package ane4j.session;

import static org.junit.jupiter.api.Assertions.*;

import ane4j.run.StepMetrics;
import java.awt.image.BufferedImage;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYSeries;

/** The loss plot: global steps, raw curve under its EMA, validation points, markers, log-y, a clean white style. */
class LossChartTest {
    static List<StepMetrics> history(int from, int n) {
        List<StepMetrics> h = new ArrayList<>();
        for (int i = from; i < from + n; i++)
            h.add(new StepMetrics(i, 350, (float) (6 * Math.exp(-i / 100.0) + 0.3 * Math.sin(i)), 1e-3f, 256, 1, true, false, 10, 1000, Map.of(), 0, 0,
                    i % 50 == 49 ? (float) (6.2 * Math.exp(-i / 100.0)) : Float.NaN, 1));
        return h;
    }

    @Test
    void seriesAreRawEmaAndValidationAtGlobalSteps() throws Exception {
        XYChart c = LossChart.of(history(300, 50), List.of(new LossChart.Marker(310, "restart"), new LossChart.Marker(320, "resume")),
                new LossChart.Style("loss", 640, 300, false));
        Map<String, XYSeries> s = c.getSeriesMap();
        assertEquals(List.of("train (raw)", "train (EMA)", "validation"), s.keySet().stream().filter(k -> !k.isBlank()).toList());
        assertFalse(s.get(" ").isShowInLegend(), "the point that makes XChart choose round ticks is not in the legend");
        double[] x = s.get("train (raw)").getXData();
        assertEquals(301, x[0], "global 1-based steps after a resume at 300");
        assertEquals(350, x[x.length - 1]);
        assertArrayEquals(new double[] {350}, s.get("validation").getXData());
        double[] raw = s.get("train (raw)").getYData(), ema = s.get("train (EMA)").getYData();
        assertEquals(raw[0], ema[0], 1e-9, "the debiased EMA starts at the first loss");
        double rawVar = 0, emaVar = 0;
        for (int i = 1; i < raw.length; i++) {
            rawVar += Math.abs(raw[i] - raw[i - 1]);
            emaVar += Math.abs(ema[i] - ema[i - 1]);
        }
        assertTrue(emaVar < rawVar / 2, "the EMA is smoother: " + emaVar + " vs " + rawVar);
        assertEquals(4, annotations(c), "a line and a label per marker");
        assertFalse(c.getStyler().isPlotBorderVisible());
        assertEquals(java.awt.Color.WHITE, c.getStyler().getPlotBackgroundColor());
    }

    static int annotations(XYChart c) throws ReflectiveOperationException {
        var f = org.knowm.xchart.internal.chartpart.Chart.class.getDeclaredField("annotations");
        f.setAccessible(true);
        return ((List<?>) f.get(c)).size();
    }

    @Test
    void emaMatchesTheRecurrenceAndLogYDropsNonPositiveLosses() {
        double[] e = LossChart.ema(new double[] {4, 2, 2}, 0.5);
        assertEquals(4, e[0], 1e-12);
        assertEquals((0.5 * 0.5 * 4 + 0.5 * 2) / 0.75, e[1], 1e-12);
        XYChart c = LossChart.of(history(0, 10), List.of(), new LossChart.Style("loss", 400, 200, true));
        assertTrue(c.getStyler().isYAxisLogarithmic());
        assertEquals("loss (log scale)", c.getYAxisTitle());
    }

    @Test
    void rendersWithOneStepAndWithNone() throws Exception {
        for (List<StepMetrics> h : List.of(history(0, 1), List.<StepMetrics>of(), history(0, 400))) {
            BufferedImage img = BitmapEncoder.getBufferedImage(LossChart.of(h, List.of(new LossChart.Marker(3, "stop")), new LossChart.Style("t", 320, 200, false)));
            assertEquals(320, img.getWidth());
        }
    }
}
