package ane4j.notebook;

import ane4j.backend.TensorBuffer;
import ane4j.mil.Dialect;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Base64;
import java.util.Map;
import org.dflib.jjava.jupyter.kernel.display.RenderContext;
import org.dflib.jjava.jupyter.kernel.display.Renderer;
import org.dflib.jjava.jupyter.kernel.display.mime.MIMEType;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.internal.chartpart.Chart;
import tech.tablesaw.api.Table;

/** Rich display for notebook values: Tablesaw tables as HTML (and text), XChart charts as PNG. */
public final class Renderers {
    /** Tables longer than this show their first and last MAX_ROWS/2 rows. */
    static final int MAX_ROWS = 60;
    /** Tensors show this many values. */
    static final int TENSOR_VALUES = 32;

    private Renderers() {}

    public static void install(Renderer renderer) {
        if (System.getProperty("java.awt.headless") == null) System.setProperty("java.awt.headless", "true");
        renderer.createRegistration(Table.class)
                .preferring(MIMEType.TEXT_HTML)
                .supporting(MIMEType.TEXT_PLAIN)
                .register(Renderers::renderTable);
        @SuppressWarnings({"unchecked", "rawtypes"})
        Class<Chart<?, ?>> chart = (Class) Chart.class;
        renderer.createRegistration(chart)
                .preferring(MIMEType.IMAGE_PNG)
                .register(Renderers::renderChart);
        renderer.createRegistration(Program.class)
                .preferring(MIMEType.TEXT_HTML)
                .supporting(MIMEType.TEXT_PLAIN)
                .register((p, ctx) -> {
                    ctx.renderIfRequested(MIMEType.TEXT_HTML, () -> MilHighlighter.html(p));
                    ctx.renderIfRequested(MIMEType.TEXT_PLAIN, () -> MilWriter.write(p, Dialect.fromProperty(Dialect.IOS18)));
                });
        renderer.createRegistration(CompiledProgram.class)
                .preferring(MIMEType.TEXT_HTML)
                .supporting(MIMEType.TEXT_PLAIN)
                .register((k, ctx) -> {
                    ctx.renderIfRequested(MIMEType.TEXT_HTML, k::html);
                    ctx.renderIfRequested(MIMEType.TEXT_PLAIN, k::toString);
                });
        renderer.createRegistration(float[].class)
                .preferring(MIMEType.TEXT_PLAIN)
                .register((f, ctx) -> ctx.renderIfRequested(MIMEType.TEXT_PLAIN, () -> floatsText(f)));
        renderer.createRegistration(TensorBuffer.class)
                .preferring(MIMEType.TEXT_PLAIN)
                .register((t, ctx) -> ctx.renderIfRequested(MIMEType.TEXT_PLAIN, () -> tensorText(t)));
    }

    /** {@code float[16] [0.0, 1.0, …]}. */
    static String floatsText(float[] f) {
        int n = Math.min(f.length, TENSOR_VALUES);
        StringBuilder sb = new StringBuilder("float[").append(f.length).append("] [");
        for (int i = 0; i < n; i++) sb.append(i > 0 ? ", " : "").append(f[i]);
        return sb.append(f.length > n ? ", … " + (f.length - n) + " more]" : "]").toString();
    }

    /** {@code fp16[1,4,1,4] [0.0, 1.0, …]}: the type and the first values. */
    static String tensorText(TensorBuffer t) {
        int n = (int) Math.min(t.count(), TENSOR_VALUES);
        StringBuilder sb = new StringBuilder(t.type().toString()).append(" [");
        for (int i = 0; i < n; i++) sb.append(i > 0 ? ", " : "").append(t.get(i));
        return sb.append(t.count() > n ? ", … " + (t.count() - n) + " more]" : "]").toString();
    }

    static void renderTable(Table t, RenderContext ctx) {
        ctx.renderIfRequested(MIMEType.TEXT_HTML, () -> tableHtml(t));
        ctx.renderIfRequested(MIMEType.TEXT_PLAIN, () -> t.print(MAX_ROWS));
    }

    static void renderChart(Chart<?, ?> chart, RenderContext ctx) {
        ctx.renderIfRequested(MIMEType.IMAGE_PNG, () -> chartPng(chart));
        ctx.getOutputContainer().putMetaData(MIMEType.IMAGE_PNG, Map.of("width", chart.getWidth(), "height", chart.getHeight()));
    }

    /** Base64 PNG of the chart at its own size. */
    static String chartPng(Chart<?, ?> chart) {
        try {
            return Base64.getEncoder().encodeToString(BitmapEncoder.getBitmapBytes(chart, BitmapEncoder.BitmapFormat.PNG));
        } catch (IOException e) {
            throw new UncheckedIOException("[display] could not encode the chart as PNG: " + e.getMessage(), e);
        }
    }

    /** An HTML table: caption = table name, header = column names, long tables cut in the middle. */
    static String tableHtml(Table t) {
        StringBuilder sb = new StringBuilder("<table class=\"ane4j-table\">");
        if (t.name() != null && !t.name().isBlank()) sb.append("<caption>").append(escape(t.name())).append("</caption>");
        sb.append("<thead><tr>");
        for (String c : t.columnNames()) sb.append("<th>").append(escape(c)).append("</th>");
        sb.append("</tr></thead><tbody>");
        int n = t.rowCount(), half = MAX_ROWS / 2;
        for (int r = 0; r < n; r++) {
            if (n > MAX_ROWS && r == half) {
                sb.append("<tr><td colspan=\"").append(t.columnCount()).append("\">… ")
                        .append(n - MAX_ROWS).append(" more rows …</td></tr>");
                r = n - half;
            }
            sb.append("<tr>");
            for (int c = 0; c < t.columnCount(); c++) sb.append("<td>").append(escape(t.getString(r, c))).append("</td>");
            sb.append("</tr>");
        }
        sb.append("</tbody></table>");
        sb.append("<p><small>").append(n).append(" rows × ").append(t.columnCount()).append(" columns</small></p>");
        return sb.toString();
    }

    static String escape(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '<' -> sb.append("&lt;");
                case '>' -> sb.append("&gt;");
                case '&' -> sb.append("&amp;");
                case '"' -> sb.append("&quot;");
                default -> sb.append(ch);
            }
        }
        return sb.toString();
    }
}
