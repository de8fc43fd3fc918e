package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.util.Base64;
import java.util.Map;
import javax.imageio.ImageIO;
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

    @SuppressWarnings("unchecked")
    static Map<String, Object> metadata(DisplayData d) throws Exception {
        var f = DisplayData.class.getDeclaredField("metadata");
        f.setAccessible(true);
        return (Map<String, Object>) f.get(d);
    }
}
