package ane4j.session;

import ane4j.run.RunFolder;
import ane4j.run.StepMetrics;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.knowm.xchart.AnnotationLine;
import org.knowm.xchart.AnnotationText;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The loss curve of a run, the same for the CLI's {@code loss.png} and the notebook's live chart: x is the global
 * 1-based step (the step after which the loss was measured, as the progress line counts: {@code step 12/60}), resumed
 * runs included. The raw training loss is drawn thin and light under its exponential moving average; validation
 * losses are points joined by a line; restarts, stops and resumes are vertical marks with a label.
 */
public final class LossChart {
    /** Something that happened to the run after a step: a worker restart, a stop, a resume. */
    public record Marker(long step, String label) {}

    /** How to draw: size, title, a logarithmic loss axis. */
    public record Style(String title, int width, int height, boolean logY) {
        public Style withLogY(boolean log) { return new Style(title, width, height, log); }
    }

    static final Color TRAIN = new Color(0x1f, 0x77, 0xb4), RAW = new Color(0x1f, 0x77, 0xb4, 0x50),
            VALIDATION = new Color(0xd6, 0x27, 0x28), MARK = new Color(0x70, 0x70, 0x70), GRID = new Color(0xe6, 0xe6, 0xe6);

    private LossChart() {}

    /** The global 1-based step of a step's metrics. */
    public static double x(StepMetrics m) {
        return m.step() + 1;
    }

    public static XYChart of(List<StepMetrics> history, String title, int width, int height) {
        return of(history, List.of(), new Style(title, width, height, false));
    }

    /**
     * The EMA weight for n points, as TensorBoard's smoothing slider but chosen from the run's length: about the last
     * n/20 steps (at least 5, at most 100) carry most of the weight.
     */
    static double emaWeight(int n) {
        double span = Math.max(5, Math.min(100, n / 20.0));
        return 1 - 2 / (span + 1);
    }

    /** Exponential moving average, debiased at the start (as TensorBoard draws it), so it starts at the first loss. */
    static double[] ema(double[] y, double w) {
        double[] out = new double[y.length];
        double acc = 0, norm = 0;
        for (int i = 0; i < y.length; i++) {
            if (!Double.isFinite(y[i])) {
                out[i] = i > 0 ? out[i - 1] : Double.NaN;
                continue;
            }
            acc = w * acc + (1 - w) * y[i];
            norm = w * norm + (1 - w);
            out[i] = acc / norm;
        }
        return out;
    }

    public static XYChart of(List<StepMetrics> history, List<Marker> markers, Style style) {
        int n = history.size();
        XYChart c = new XYChartBuilder().width(style.width()).height(style.height()).title(style.title())
                .xAxisTitle("step").yAxisTitle(style.logY() ? "loss (log scale)" : "loss").build();
        clean(c, style.logY());
        double[] x = new double[Math.max(1, n)], y = new double[Math.max(1, n)];
        for (int i = 0; i < n; i++) {
            x[i] = x(history.get(i));
            y[i] = history.get(i).loss();
            if (style.logY() && !(y[i] > 0)) y[i] = Double.NaN;   // a log axis cannot show 0 or a negative loss
        }
        if (n == 0) {
            x[0] = 1;
            y[0] = style.logY() ? 1 : 0;
            XYSeries empty = c.addSeries("train", x, y);
            empty.setLineColor(new Color(0, 0, 0, 0));
            empty.setMarker(SeriesMarkers.NONE);
            return c;
        }
        if (n > 1) {
            XYSeries raw = c.addSeries("train (raw)", x, y);
            raw.setLineColor(RAW);
            raw.setLineStyle(new BasicStroke(1f));
            raw.setMarker(SeriesMarkers.NONE);
            XYSeries smooth = c.addSeries("train (EMA)", x, ema(y, emaWeight(n)));
            smooth.setLineColor(TRAIN);
            smooth.setLineStyle(new BasicStroke(2.2f));
            smooth.setMarker(SeriesMarkers.NONE);
        } else {
            XYSeries one = c.addSeries("train", x, y);
            one.setMarker(SeriesMarkers.CIRCLE);
            one.setMarkerColor(TRAIN);
            one.setLineColor(TRAIN);
        }
        List<double[]> val = new ArrayList<>();
        for (StepMetrics m : history) if (m.validated() && (!style.logY() || m.valLoss() > 0)) val.add(new double[] {x(m), m.valLoss()});
        if (!val.isEmpty()) {
            XYSeries v = c.addSeries("validation", val.stream().mapToDouble(p -> p[0]).toArray(), val.stream().mapToDouble(p -> p[1]).toArray());
            v.setLineColor(VALIDATION);
            v.setMarkerColor(VALIDATION);
            v.setMarker(SeriesMarkers.CIRCLE);
            v.setLineStyle(new BasicStroke(1.6f));
        }
        double top = maxFinite(y, val), bottom = minFinite(y, val);
        // XChart puts the ticks of equally spaced x values on the data points (every 16th step: 1, 17, 33 …); one
        // unevenly spaced invisible point makes it choose round ticks (0, 50, 100 …) as for any number axis
        XYSeries even = c.addSeries(" ", new double[] {x[0], x[0] + 0.25, x[0] + 1}, new double[] {y[0], y[0], y[0]});
        even.setLineColor(new Color(0, 0, 0, 0));
        even.setMarker(SeriesMarkers.NONE);
        even.setShowInLegend(false);
        for (Marker m : markers) {
            c.addAnnotation(new AnnotationLine(m.step() + 0.5, true, false));
            double at = style.logY() ? Math.sqrt(top * Math.max(bottom, 1e-12)) : top - (top - bottom) * 0.04;
            c.addAnnotation(new AnnotationText(m.label(), m.step() + 0.5, at, false));
        }
        return c;
    }

    /** A white chart without a frame, light horizontal grid lines, the legend inside (bottom left, where a falling loss is not). */
    static void clean(XYChart c, boolean logY) {
        var s = c.getStyler();
        s.setChartBackgroundColor(Color.WHITE);
        s.setPlotBackgroundColor(Color.WHITE);
        s.setPlotBorderVisible(false);
        s.setPlotGridVerticalLinesVisible(false);
        s.setPlotGridLinesColor(GRID);
        s.setPlotGridLinesStroke(new BasicStroke(1f));
        s.setLegendPosition(Styler.LegendPosition.InsideSW);
        s.setLegendBorderColor(Color.WHITE);
        s.setLegendBackgroundColor(new Color(255, 255, 255, 200));
        s.setChartTitleBoxVisible(false);
        s.setChartTitleFont(new Font(Font.SANS_SERIF, Font.PLAIN, 14));
        s.setAxisTitleFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        s.setAxisTickLabelsFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        s.setAxisTickMarksColor(MARK);
        s.setAnnotationLineColor(MARK);
        s.setAnnotationTextFontColor(MARK);
        s.setAnnotationLineStroke(new BasicStroke(1f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {4f, 3f}, 0f));
        s.setAnnotationTextFont(new Font(Font.SANS_SERIF, Font.PLAIN, 10));
        s.setMarkerSize(5);
        s.setAntiAlias(true);
        s.setXAxisDecimalPattern("#,##0");
        s.setYAxisDecimalPattern("0.0##");
        s.setYAxisLogarithmic(logY);
    }

    private static double maxFinite(double[] y, List<double[]> val) {
        double m = Double.NEGATIVE_INFINITY;
        for (double v : y) if (Double.isFinite(v)) m = Math.max(m, v);
        for (double[] p : val) if (Double.isFinite(p[1])) m = Math.max(m, p[1]);
        return Double.isFinite(m) ? m : 1;
    }

    private static double minFinite(double[] y, List<double[]> val) {
        double m = Double.POSITIVE_INFINITY;
        for (double v : y) if (Double.isFinite(v)) m = Math.min(m, v);
        for (double[] p : val) if (Double.isFinite(p[1])) m = Math.min(m, p[1]);
        return Double.isFinite(m) ? m : 0;
    }

    /** Writes {@code runDir/loss.png}; returns its path. */
    public static Path save(List<StepMetrics> history, Path runDir) {
        return save(history, List.of(), runDir);
    }

    public static Path save(List<StepMetrics> history, List<Marker> markers, Path runDir) {
        Path png = runDir.resolve("loss.png");
        // off-screen: macOS defaults to a window-server AWT (a Dock icon; a failure over ssh or in a LaunchDaemon)
        if (System.getProperty("java.awt.headless") == null) System.setProperty("java.awt.headless", "true");
        try {
            javax.imageio.ImageIO.setUseCache(false);   // its cache is a temp file: a full /tmp must not cost the plot
            BitmapEncoder.saveBitmap(of(history, markers, new Style("training loss", 720, 360, false)), png.toString(), BitmapEncoder.BitmapFormat.PNG);
        } catch (IOException e) {
            throw new UncheckedIOException("[run] cannot write " + png + ": " + RunFolder.reason(e), e);
        }
        return png;
    }
}
