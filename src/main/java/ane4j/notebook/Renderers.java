package ane4j.notebook;

import ane4j.backend.TensorBuffer;
import ane4j.mil.Dialect;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.session.Session;
import ane4j.run.ProgressLine;
import ane4j.run.StepMetrics;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.dflib.jjava.jupyter.kernel.display.RenderContext;
import org.dflib.jjava.jupyter.kernel.display.Renderer;
import org.dflib.jjava.jupyter.kernel.display.mime.MIMEType;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.internal.chartpart.Chart;
import org.knowm.xchart.internal.series.Series;
import tech.tablesaw.api.ColumnType;
import tech.tablesaw.api.Table;
import tech.tablesaw.columns.Column;

/**
 * Rich display for notebook values, each with a one-line-or-so {@code text/plain} for consoles, scripts and diffs:
 * Tablesaw tables (numbers rounded), XChart charts (PNG), tensors and maps of tensors (shape, dtype, min/max/mean, a
 * grid when small), the session status, step metrics.
 */
public final class Renderers {
    /** Tables longer than this show their first and last MAX_ROWS/2 rows. */
    static final int MAX_ROWS = 60;
    /** Tensors too large for a grid show this many values. */
    static final int TENSOR_VALUES = 16;
    /** A tensor shows as a grid when it has at most this many rows (all axes but the last) and columns (the last axis). */
    static final int GRID_ROWS = 32, GRID_COLUMNS = 16;

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
                .supporting(MIMEType.TEXT_PLAIN)
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
                .preferring(MIMEType.TEXT_HTML)
                .supporting(MIMEType.TEXT_PLAIN)
                .register((t, ctx) -> {
                    ctx.renderIfRequested(MIMEType.TEXT_HTML, () -> tensorHtml(null, t));
                    ctx.renderIfRequested(MIMEType.TEXT_PLAIN, () -> tensorText(t));
                });
        // the outputs of CompiledProgram.run (and any map whose values are all tensors); other maps keep their toString
        renderer.createRegistration(Map.class)
                .preferring(MIMEType.TEXT_HTML)
                .supporting(MIMEType.TEXT_PLAIN)
                .register((m, ctx) -> {
                    Map<String, TensorBuffer> tensors = tensorsOf(m);
                    if (tensors != null) ctx.renderIfRequested(MIMEType.TEXT_HTML, () -> tensorsHtml(tensors));
                    ctx.renderIfRequested(MIMEType.TEXT_PLAIN, () -> tensors != null ? tensorsText(tensors) : String.valueOf(m));
                });
        renderer.createRegistration(Session.Status.class)
                .preferring(MIMEType.TEXT_HTML)
                .supporting(MIMEType.TEXT_PLAIN)
                .register((s, ctx) -> {
                    ctx.renderIfRequested(MIMEType.TEXT_HTML, () -> keyValueHtml("session", statusRows(s)));
                    ctx.renderIfRequested(MIMEType.TEXT_PLAIN, () -> statusText(s));
                });
        renderer.createRegistration(TrainingSummary.class)
                .preferring(MIMEType.TEXT_HTML)
                .supporting(MIMEType.TEXT_PLAIN)
                .register((t, ctx) -> {
                    ctx.renderIfRequested(MIMEType.TEXT_HTML, t::html);
                    ctx.renderIfRequested(MIMEType.TEXT_PLAIN, t::toString);
                });
        renderer.createRegistration(StepMetrics.class)
                .preferring(MIMEType.TEXT_PLAIN)
                .register((m, ctx) -> ctx.renderIfRequested(MIMEType.TEXT_PLAIN, () -> stepText(m)));
    }

    // ---- tensors

    /** {@code float[16] [0, 1, …]}. */
    static String floatsText(float[] f) {
        int n = Math.min(f.length, TENSOR_VALUES);
        StringBuilder sb = new StringBuilder("float[").append(f.length).append("] ").append(stats(f)).append(" [");
        for (int i = 0; i < n; i++) sb.append(i > 0 ? ", " : "").append(Format.num(f[i]));
        return sb.append(f.length > n ? ", … " + (f.length - n) + " more]" : "]").toString();
    }

    /** min, max, mean over the finite values, and how many are NaN or infinite. */
    record Stats(double min, double max, double mean, long nan, long inf, long count) {
        @Override public String toString() {
            if (count == 0) return "(empty)";
            String s = nan + inf == count ? "no finite values"
                    : "min " + Format.num(min) + "  max " + Format.num(max) + "  mean " + Format.num(mean);
            if (nan > 0) s += "  " + nan + " NaN";
            if (inf > 0) s += "  " + inf + " inf";
            return s;
        }
    }

    static Stats stats(float[] v) {
        double min = Double.POSITIVE_INFINITY, max = Double.NEGATIVE_INFINITY, sum = 0;
        long nan = 0, inf = 0, finite = 0;
        for (float f : v) {
            if (Float.isNaN(f)) nan++;
            else if (Float.isInfinite(f)) inf++;
            else {
                min = Math.min(min, f);
                max = Math.max(max, f);
                sum += f;
                finite++;
            }
        }
        return new Stats(min, max, finite == 0 ? Double.NaN : sum / finite, nan, inf, v.length);
    }

    /** The tensor's values as rows × columns: columns are the last axis, rows every index of the axes before it. */
    record Grid(int rows, int columns, List<String> labels) {}

    /** A grid when the tensor is small enough to read whole, else null. */
    static Grid grid(int[] shape) {
        int columns = shape.length == 0 ? 1 : shape[shape.length - 1];
        long rows = 1;
        for (int i = 0; i < shape.length - 1; i++) rows *= shape[i];
        if (rows > GRID_ROWS || columns > GRID_COLUMNS || rows * columns == 0) return null;
        List<String> labels = new ArrayList<>();
        for (int r = 0; r < rows; r++) {
            // the index of each leading axis longer than 1: [c, h] for [1, C, H, W]
            List<String> idx = new ArrayList<>();
            long rest = r;
            for (int a = shape.length - 2; a >= 0; a--) {
                if (shape[a] > 1) idx.addFirst(Long.toString(rest % shape[a]));
                rest /= shape[a];
            }
            labels.add(idx.isEmpty() ? "" : "[" + String.join(",", idx) + "]");
        }
        return new Grid((int) rows, columns, labels);
    }

    /** {@code fp16[1,1,2,4]  min 0  max 3.5  mean 1.75}, then a grid of the values (or the first ones). */
    static String tensorText(TensorBuffer t) {
        float[] v = t.toFloatArray();
        StringBuilder sb = new StringBuilder(t.type().toString()).append("  ").append(stats(v));
        Grid g = grid(t.shape());
        if (g == null) {
            int n = Math.min(v.length, TENSOR_VALUES);
            sb.append("\n  [");
            for (int i = 0; i < n; i++) sb.append(i > 0 ? ", " : "").append(Format.num(v[i]));
            return sb.append(v.length > n ? ", … " + (v.length - n) + " more]" : "]").toString();
        }
        String[] cells = new String[v.length];
        int width = 1, label = 0;
        for (int i = 0; i < v.length; i++) width = Math.max(width, (cells[i] = Format.num(v[i])).length());
        for (String l : g.labels()) label = Math.max(label, l.length());
        for (int r = 0; r < g.rows(); r++) {
            sb.append("\n  ").append(pad(g.labels().get(r), label, false)).append(label > 0 ? " " : "");
            for (int c = 0; c < g.columns(); c++) sb.append(c > 0 ? " " : "").append(pad(cells[r * g.columns() + c], width, true));
        }
        return sb.toString();
    }

    static String tensorHtml(String name, TensorBuffer t) {
        float[] v = t.toFloatArray();
        StringBuilder sb = new StringBuilder("<div class=\"ane4j-tensor\"><code>");
        if (name != null) sb.append("<b>").append(escape(name)).append("</b> ");
        sb.append(escape(t.type().toString())).append("</code> <small>").append(escape(stats(v).toString())).append("</small>");
        Grid g = grid(t.shape());
        if (g == null) {
            int n = Math.min(v.length, TENSOR_VALUES);
            sb.append("<br><code>[");
            for (int i = 0; i < n; i++) sb.append(i > 0 ? ", " : "").append(Format.num(v[i]));
            return sb.append(v.length > n ? ", … " + (v.length - n) + " more" : "").append("]</code></div>").toString();
        }
        sb.append("<table style=\"font-family:monospace\"><tbody>");
        for (int r = 0; r < g.rows(); r++) {
            sb.append("<tr>");
            if (!g.labels().get(r).isEmpty()) sb.append("<th>").append(g.labels().get(r)).append("</th>");
            for (int c = 0; c < g.columns(); c++) sb.append("<td style=\"text-align:right\">").append(Format.num(v[r * g.columns() + c])).append("</td>");
            sb.append("</tr>");
        }
        return sb.append("</tbody></table></div>").toString();
    }

    /** The map as name → tensor when every key is a string and every value a tensor (and there is one), else null. */
    static Map<String, TensorBuffer> tensorsOf(Map<?, ?> m) {
        if (m.isEmpty()) return null;
        for (Map.Entry<?, ?> e : m.entrySet()) if (!(e.getKey() instanceof String) || !(e.getValue() instanceof TensorBuffer)) return null;
        @SuppressWarnings("unchecked") Map<String, TensorBuffer> t = (Map<String, TensorBuffer>) m;
        return t;
    }

    /** One block per tensor: {@code y: fp16[1,1,8,4]  min …} and its grid. */
    static String tensorsText(Map<String, TensorBuffer> m) {
        StringBuilder sb = new StringBuilder();
        m.forEach((k, t) -> sb.append(sb.isEmpty() ? "" : "\n").append(k).append(": ").append(tensorText(t)));
        return sb.toString();
    }

    static String tensorsHtml(Map<String, TensorBuffer> m) {
        StringBuilder sb = new StringBuilder("<div class=\"ane4j-tensors\">");
        m.forEach((k, t) -> sb.append(tensorHtml(k, t)));
        return sb.append("</div>").toString();
    }

    private static String pad(String s, int width, boolean right) {
        String fill = " ".repeat(Math.max(0, width - s.length()));
        return right ? fill + s : s + fill;
    }

    // ---- session status, step metrics, charts

    static List<String[]> statusRows(Session.Status s) {
        return List.of(new String[] {"backend", s.backend()}, new String[] {"chip", s.chip()}, new String[] {"MIL dialect", s.dialect()},
                new String[] {"compiles", compiles(s)}, new String[] {"worker", s.worker()});
    }

    static String compiles(Session.Status s) {
        return s.compileBudget() == Long.MAX_VALUE ? s.compiles() + " (no budget)"
                : s.compiles() + " of " + s.compileBudget() + " (" + s.compilesLeft() + " left)";
    }

    /** {@code backend ref · chip none · dialect ios18 · compiles 3 (no budget) · worker pid 123, 0 restarts}. */
    static String statusText(Session.Status s) {
        return "backend " + s.backend() + " · chip " + s.chip() + " · dialect " + s.dialect() + " · compiles " + compiles(s) + " · worker " + s.worker();
    }

    /** A step shown alone: its {@link ProgressLine}, then its gradient norm and loss scale ({@code … ms/step · grad norm 1.5 · loss scale 256}). */
    static String stepText(StepMetrics m) {
        return ProgressLine.of(m) + " · grad norm " + Format.num(m.gradNorm()) + " · loss scale " + Format.num(m.lossScale());
    }

    /** {@code XYChart "training loss" 640×300: train (40 points), validation (4 points)}. */
    static String chartText(Chart<?, ?> chart) {
        List<String> series = new ArrayList<>();
        for (Map.Entry<String, ? extends Series> e : chart.getSeriesMap().entrySet()) {
            if (e.getValue().isShowInLegend()) series.add(e.getKey() + points(e.getValue()));
        }
        String title = chart.getTitle() == null || chart.getTitle().isBlank() ? "" : " \"" + chart.getTitle() + "\"";
        return chart.getClass().getSimpleName() + title + " " + chart.getWidth() + "×" + chart.getHeight()
                + (series.isEmpty() ? "" : ": " + String.join(", ", series));
    }

    private static String points(Series s) {
        return s instanceof org.knowm.xchart.XYSeries xy ? " (" + xy.getXData().length + " points)" : "";
    }

    static String keyValueHtml(String caption, List<String[]> rows) {
        StringBuilder sb = new StringBuilder("<table class=\"ane4j-table\"><caption>").append(escape(caption)).append("</caption><tbody>");
        for (String[] r : rows) sb.append("<tr><th style=\"text-align:left\">").append(escape(r[0])).append("</th><td style=\"text-align:left\">").append(escape(r[1])).append("</td></tr>");
        return sb.append("</tbody></table>").toString();
    }

    // ---- tables

    static void renderTable(Table t, RenderContext ctx) {
        ctx.renderIfRequested(MIMEType.TEXT_HTML, () -> tableHtml(t));
        ctx.renderIfRequested(MIMEType.TEXT_PLAIN, () -> tableText(t));
    }

    static void renderChart(Chart<?, ?> chart, RenderContext ctx) {
        ctx.renderIfRequested(MIMEType.IMAGE_PNG, () -> chartPng(chart));
        ctx.renderIfRequested(MIMEType.TEXT_PLAIN, () -> chartText(chart));
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

    /** A cell as shown: floating-point numbers rounded ({@link Format#num}), everything else as Tablesaw prints it. */
    static String cell(Table t, int row, int col) {
        Column<?> c = t.column(col);
        if (c.isMissing(row)) return "";
        ColumnType type = c.type();
        if (type == ColumnType.DOUBLE || type == ColumnType.FLOAT) return Format.num(((Number) c.get(row)).doubleValue());
        return t.getString(row, col);
    }

    /** The rows shown: all of them, or the first and last MAX_ROWS/2 with -1 standing for the cut. */
    static int[] shownRows(int n) {
        if (n <= MAX_ROWS) return java.util.stream.IntStream.range(0, n).toArray();
        int half = MAX_ROWS / 2;
        return java.util.stream.IntStream.concat(java.util.stream.IntStream.concat(java.util.stream.IntStream.range(0, half),
                java.util.stream.IntStream.of(-1)), java.util.stream.IntStream.range(n - half, n)).toArray();
    }

    /** An HTML table: caption = table name, header = column names, long tables cut in the middle. */
    static String tableHtml(Table t) {
        StringBuilder sb = new StringBuilder("<table class=\"ane4j-table\">");
        if (t.name() != null && !t.name().isBlank()) sb.append("<caption>").append(escape(t.name())).append("</caption>");
        sb.append("<thead><tr>");
        for (String c : t.columnNames()) sb.append("<th>").append(escape(c)).append("</th>");
        sb.append("</tr></thead><tbody>");
        int n = t.rowCount();
        for (int r : shownRows(n)) {
            if (r < 0) {
                sb.append("<tr><td colspan=\"").append(t.columnCount()).append("\">… ").append(n - MAX_ROWS).append(" more rows …</td></tr>");
                continue;
            }
            sb.append("<tr>");
            for (int c = 0; c < t.columnCount(); c++) sb.append("<td>").append(escape(cell(t, r, c))).append("</td>");
            sb.append("</tr>");
        }
        sb.append("</tbody></table>");
        sb.append("<p><small>").append(n).append(" rows × ").append(t.columnCount()).append(" columns</small></p>");
        return sb.toString();
    }

    /** The table as aligned text (numbers right-aligned), its name above, cut in the middle like the HTML. */
    static String tableText(Table t) {
        int cols = t.columnCount(), n = t.rowCount();
        int[] rows = shownRows(n);
        String[][] cells = new String[rows.length + 1][cols];
        int[] width = new int[cols];
        boolean[] numeric = new boolean[cols];
        for (int c = 0; c < cols; c++) {
            cells[0][c] = t.column(c).name();
            numeric[c] = t.column(c) instanceof tech.tablesaw.api.NumericColumn<?>;
        }
        for (int i = 0; i < rows.length; i++) {
            for (int c = 0; c < cols; c++) cells[i + 1][c] = rows[i] < 0 ? (c == 0 ? "…" : "") : cell(t, rows[i], c);
        }
        for (String[] row : cells) for (int c = 0; c < cols; c++) width[c] = Math.max(width[c], row[c].length());
        StringBuilder sb = new StringBuilder();
        if (t.name() != null && !t.name().isBlank()) sb.append(t.name()).append('\n');
        for (String[] row : cells) {
            for (int c = 0; c < cols; c++) sb.append(c > 0 ? "  " : "").append(pad(row[c], width[c], numeric[c]));
            sb.append('\n');
        }
        if (n > MAX_ROWS) sb.append(n).append(" rows × ").append(cols).append(" columns\n");
        return sb.toString().stripTrailing();
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
