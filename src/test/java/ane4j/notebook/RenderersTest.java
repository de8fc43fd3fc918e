package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.util.Base64;
import java.util.Map;
import javax.imageio.ImageIO;
import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.TensorType;
import ane4j.session.Session;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;
import org.dflib.jjava.jupyter.kernel.display.Renderer;
import org.dflib.jjava.jupyter.kernel.display.mime.MIMEType;
import org.junit.jupiter.api.Test;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.IntColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

class RenderersTest {
    final Renderer renderer = new Renderer();

    RenderersTest() {
        Renderers.install(renderer);
    }

    @Test
    void tableRendersAsHtmlAndText() {
        Table t = Table.create("metrics", IntColumn.create("step", 1, 2), DoubleColumn.create("loss", 2.5, 2.25),
                StringColumn.create("note", "a<b", "x & y"));
        DisplayData d = renderer.render(t);
        String html = (String) d.getData(MIMEType.TEXT_HTML);
        assertTrue(html.contains("<caption>metrics</caption>"), html);
        assertTrue(html.contains("<th>step</th><th>loss</th><th>note</th>"), html);
        assertTrue(html.contains("<tr><td>2</td><td>2.25</td><td>x &amp; y</td></tr>"), html);
        assertTrue(html.contains("<td>a&lt;b</td>"), "cells are escaped: " + html);
        assertTrue(html.contains("2 rows × 3 columns"), html);
        assertTrue(d.getData(MIMEType.TEXT_PLAIN).toString().contains("2.25"));
    }

    @Test
    void longTablesAreCutInTheMiddle() {
        int n = 1000;
        Table t = Table.create("big", IntColumn.create("i", java.util.stream.IntStream.range(0, n).toArray()));
        String html = Renderers.tableHtml(t);
        assertEquals(Renderers.MAX_ROWS + 2, html.split("<tr>", -1).length - 1, "header + MAX_ROWS rows + the ellipsis row");
        assertTrue(html.contains("<td>0</td>") && html.contains("<td>29</td>") && html.contains("<td>999</td>") && html.contains("<td>970</td>"));
        assertFalse(html.contains("<td>30</td>") || html.contains("<td>969</td>"));
        assertTrue(html.contains((n - Renderers.MAX_ROWS) + " more rows"));
    }

    @Test
    void chartRendersAsPngOfItsSize() throws Exception {
        XYChart c = new XYChartBuilder().width(320).height(200).title("loss").build();
        c.addSeries("loss", new double[] {1, 2, 3}, new double[] {3, 2.5, 2.25});
        DisplayData d = renderer.render(c);
        byte[] png = Base64.getDecoder().decode((String) d.getData(MIMEType.IMAGE_PNG));
        BufferedImage img = ImageIO.read(new ByteArrayInputStream(png));
        assertEquals(320, img.getWidth());
        assertEquals(200, img.getHeight());
        assertNotNull(d.getData(MIMEType.TEXT_PLAIN), "text/plain fallback");
        DisplayData only = renderer.renderAs(c, "image/png");
        assertNotNull(only.getData(MIMEType.IMAGE_PNG));
        assertNull(only.getData(MIMEType.TEXT_HTML));
        assertEquals(Map.of("width", 320, "height", 200), metadata(d).get("image/png"));
    }

    @Test
    void numbersAreRoundedToFourSignificantDigits() {
        assertEquals("6e-05", Format.num(0.00006000000212225132));
        assertEquals("6.237", Format.num(6.2373528480529785));
        assertEquals("16961", Format.num(16961.4));
        assertEquals("2", Format.num(2.0));
        assertEquals("0.01235", Format.num(0.0123456));
        assertEquals("2.4e-03", Format.sci(0.0024));
        assertEquals("-1.5", Format.num(-1.5));
        assertEquals("NaN", Format.num(Double.NaN));
        assertEquals("1:02:03", Format.duration(3723));
    }

    @Test
    void smallTensorShowsShapeStatsAndGrid() {
        TensorBuffer t = TensorBuffer.of(TensorType.of(DType.FP16, 1, 2, 1, 3), 0, 0.5f, 1, 1.5f, 2, -3.25f);
        String text = (String) renderer.render(t).getData(MIMEType.TEXT_PLAIN);
        assertEquals("fp16[1,2,1,3]  min -3.25  max 2  mean 0.2917\n  [0]     0   0.5     1\n  [1]   1.5     2 -3.25", text);
        String html = (String) renderer.render(t).getData(MIMEType.TEXT_HTML);
        assertTrue(html.contains("<th>[1]</th><td style=\"text-align:right\">1.5</td>"), html);
    }

    @Test
    void largeTensorShowsItsFirstValuesAndNonFiniteCounts() {
        float[] v = new float[4096];
        v[3] = Float.NaN;
        v[5] = Float.POSITIVE_INFINITY;
        v[7] = 2;
        TensorBuffer t = TensorBuffer.of(TensorType.of(DType.FP32, 1, 64, 1, 64), v);
        String text = (String) renderer.render(t).getData(MIMEType.TEXT_PLAIN);
        assertTrue(text.startsWith("fp32[1,64,1,64]  min 0  max 2  mean 4.89e-04  1 NaN  1 inf\n  [0, 0, 0, NaN, 0, inf, 0, 2,"), text);
        assertTrue(text.endsWith(", … 4080 more]"), text);
    }

    @Test
    void outputsMapShowsEachTensorOtherMapsTheirToString() {
        var out = new java.util.LinkedHashMap<String, TensorBuffer>();
        out.put("y", TensorBuffer.of(TensorType.of(DType.FP16, 1, 1, 1, 2), 1, 2));
        String text = (String) renderer.render(out).getData(MIMEType.TEXT_PLAIN);
        assertEquals("y: fp16[1,1,1,2]  min 1  max 2  mean 1.5\n  1 2", text);
        assertTrue(((String) renderer.render(out).getData(MIMEType.TEXT_HTML)).contains("<b>y</b>"));
        assertEquals("{a=1}", renderer.render(Map.of("a", 1)).getData(MIMEType.TEXT_PLAIN));
        assertNull(renderer.render(Map.of("a", 1)).getData(MIMEType.TEXT_HTML));
        assertEquals("{y=fp16[1,1,1,2] min 1  max 2  mean 1.5}", new CompiledProgram.Outputs(out).toString());
    }

    @Test
    void statusAndStepMetricsReadLikeSentences() {
        var s = new Session.Status("ref", "none", "ios18", 3, Long.MAX_VALUE, "in process");
        assertEquals("backend ref · chip none · dialect ios18 · compiles 3 (no budget) · worker in process",
                renderer.render(s).getData(MIMEType.TEXT_PLAIN));
        assertFalse(renderer.render(s).getData(MIMEType.TEXT_HTML).toString().contains("9223372036854775807"));
        var m = new ane4j.run.StepMetrics(0, 40, 6.2373528f, 0.00006000000212225132f, 256, 1.5f, true, false, 12.34, 16961.4, Map.of());
        // the one progress line (ane4j.run.ProgressLine, as ane4j train prints the step), then what a step shown alone adds
        assertEquals("step 1/40  loss 6.2374  lr 6.00e-05  16961 tok/s  12.3 ms/step · grad norm 1.5 · loss scale 256",
                renderer.render(m).getData(MIMEType.TEXT_PLAIN));
        var v = new ane4j.run.StepMetrics(9, 40, 5f, 3e-3f, 256, 1f, true, false, 10, 1000, Map.of(), 0, 0, 5.4321f, 3);
        assertTrue(renderer.render(v).getData(MIMEType.TEXT_PLAIN).toString().startsWith("step 10/40  loss 5.0000  val 5.4321  lr 3.00e-03  1000 tok/s  10.0 ms/step · "));
    }

    @Test
    void trainingSummaryIsOneCompactBlock() {
        var h = new java.util.ArrayList<ane4j.run.StepMetrics>();
        float[] loss = {6.2f, 5.1f, 4.05f, 4.3f};
        for (int i = 0; i < 4; i++)
            h.add(new ane4j.run.StepMetrics(300 + i, 304, loss[i], 1e-3f, 256, 1, i != 2, i == 2, 10, 1000 * (i + 1), Map.of(), 0, 0,
                    i == 1 ? 5.5f : i == 3 ? 5.25f : Float.NaN, 2));
        var s = TrainingSummary.of("finished", h, 304, 75.2, 1, java.nio.file.Path.of("runs/tiny-1"), null);
        String text = (String) renderer.render(s).getData(MIMEType.TEXT_PLAIN);
        assertEquals("""
                run              finished at step 304/304 in 1:15 · 1 worker restart
                train loss       4.3 (best 4.05 at step 303)
                validation loss  5.25 at step 304 (best 5.25 at step 304)
                skipped updates  1 of 4 steps (a non-finite gradient; the loss scale halves each time)
                throughput       2500 tokens/s
                run dir          runs/tiny-1
                more             %train table (every step) · %train record (run record) · %train plot""", text);
        assertTrue(renderer.render(s).getData(MIMEType.TEXT_HTML).toString().contains("<th style=\"text-align:left\">train loss</th>"));
        assertTrue(renderer.render(s).getData(MIMEType.TEXT_HTML).toString().contains("<th style=\"text-align:left\">skipped updates</th>"));
        h.replaceAll(m -> new ane4j.run.StepMetrics(m.step(), 304, m.loss(), 1e-3f, 256, 1, true, false, 10, 1000, Map.of()));
        assertTrue(TrainingSummary.of("finished", h, 304, 75.2, 1, java.nio.file.Path.of("runs/tiny-1"), null).toString()
                .contains("\nskipped updates  0 of 4 steps\n"), "none skipped: said so, with no explanation");
    }

    @Test
    void chartTextIsOneLine() {
        XYChart c = new XYChartBuilder().width(320).height(200).title("loss").build();
        c.addSeries("train", new double[] {1, 2, 3}, new double[] {3, 2.5, 2.25});
        assertEquals("XYChart \"loss\" 320×200: train (3 points)", renderer.render(c).getData(MIMEType.TEXT_PLAIN));
    }

    @Test
    void tableNumbersAreRoundedInHtmlAndText() {
        Table t = Table.create("m", IntColumn.create("step", 1, 2), DoubleColumn.create("lr", 0.00006000000212225132, 6.2373528480529785));
        String html = Renderers.tableHtml(t), text = Renderers.tableText(t);
        assertTrue(html.contains("<td>6e-05</td>") && html.contains("<td>6.237</td>"), html);
        assertEquals("m\nstep     lr\n   1  6e-05\n   2  6.237", text);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> metadata(DisplayData d) throws Exception {
        var f = DisplayData.class.getDeclaredField("metadata");
        f.setAccessible(true);
        return (Map<String, Object>) f.get(d);
    }
}
