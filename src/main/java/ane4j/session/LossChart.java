package ane4j.session;

import ane4j.train.RunFolder;
import ane4j.train.Trainer.StepMetrics;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The loss curve of a run, the same for the CLI's {@code loss.png} and the notebook's live chart: x is the global
 * 1-based step (the step after which the loss was measured, as the progress line counts: {@code step 12/60}), resumed
 * runs included.
 */
public final class LossChart {
    private LossChart() {}

    /** The global 1-based step of a step's metrics. */
    public static double x(StepMetrics m) {
        return m.step() + 1;
    }

    public static XYChart of(List<StepMetrics> history, String title, int width, int height) {
        int n = history.size();
        double[] x = new double[Math.max(1, n)], y = new double[Math.max(1, n)];
        for (int i = 0; i < n; i++) {
            x[i] = x(history.get(i));
            y[i] = history.get(i).loss();
        }
        if (n == 0) y[0] = Double.NaN;
        List<StepMetrics> validated = history.stream().filter(StepMetrics::validated).toList();
        XYChart c = new XYChartBuilder().width(width).height(height).title(title).xAxisTitle("step").yAxisTitle("loss").build();
        c.getStyler().setLegendVisible(!validated.isEmpty()).setMarkerSize(validated.isEmpty() ? 0 : 6);
        c.addSeries("loss", x, y).setMarker(SeriesMarkers.NONE);
        // the validation loss (metrics.jsonl valLoss) after the steps where it ran: a second curve with markers
        if (!validated.isEmpty()) {
            double[] vx = validated.stream().mapToDouble(LossChart::x).toArray(), vy = validated.stream().mapToDouble(StepMetrics::valLoss).toArray();
            c.addSeries("validation", vx, vy).setMarker(SeriesMarkers.CIRCLE);
        }
        return c;
    }

    /** Writes {@code runDir/loss.png}; returns its path. */
    public static Path save(List<StepMetrics> history, Path runDir) {
        Path png = runDir.resolve("loss.png");
        try {
            javax.imageio.ImageIO.setUseCache(false);   // its cache is a temp file: a full /tmp must not cost the plot
            BitmapEncoder.saveBitmap(of(history, "training loss", 720, 360), png.toString(), BitmapEncoder.BitmapFormat.PNG);
        } catch (IOException e) {
            throw new UncheckedIOException("[run] cannot write " + png + ": " + RunFolder.reason(e), e);
        }
        return png;
    }
}
