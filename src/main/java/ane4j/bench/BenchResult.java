package ane4j.bench;

import ane4j.model.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.internal.chartpart.Chart;
import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

/**
 * The figures of one benchmark run: a table (columns, rows), headline figures ({@link #summary()}), notes, and the
 * machine it ran on. Renders as a terminal table ({@link #text()}), a Tablesaw {@link Table}, an XChart chart and JSON.
 */
public final class BenchResult {
    /** How to plot: bars of {@code yColumns} per row labelled by {@code xColumn}, or lines over a numeric x. */
    public record ChartSpec(boolean bars, String xColumn, List<String> yColumns, String yTitle) {}

    private final String name, title;
    private final List<String> columns;
    private final List<List<Object>> rows = new ArrayList<>();
    private final Map<String, Object> summary = new LinkedHashMap<>();
    private final Map<String, Object> meta = new LinkedHashMap<>();
    private final List<String> notes = new ArrayList<>();
    private ChartSpec chartSpec;

    public BenchResult(String name, String title, List<String> columns) {
        this.name = name;
        this.title = title;
        this.columns = List.copyOf(columns);
        meta.put("date", java.time.OffsetDateTime.now().withNano(0).toString());
        meta.put("machine", Machine.describe());
    }

    public String name() { return name; }

    public String title() { return title; }

    public List<String> columns() { return columns; }

    public List<List<Object>> rows() { return rows; }

    /** Headline figures (e.g. "msPerStep", "ratio"). */
    public Map<String, Object> summary() { return summary; }

    /** Run metadata: date, machine, backend, command, options. */
    public Map<String, Object> meta() { return meta; }

    public List<String> notes() { return notes; }

    public BenchResult row(Object... values) {
        if (values.length != columns.size()) throw new IllegalArgumentException("[bench] row of " + values.length + " values for " + columns.size() + " columns");
        rows.add(java.util.Arrays.asList(values));
        return this;
    }

    public BenchResult put(String key, Object value) { summary.put(key, value); return this; }

    public BenchResult meta(String key, Object value) { meta.put(key, value); return this; }

    public BenchResult note(String line) { notes.add(line); return this; }

    public BenchResult chart(ChartSpec spec) { this.chartSpec = spec; return this; }

    /** Column values of a row by column name. */
    public Object value(int row, String column) {
        int i = columns.indexOf(column);
        if (i < 0) throw new IllegalArgumentException("[bench] no column '" + column + "' (columns: " + columns + ")");
        return rows.get(row).get(i);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // renderings

    /** The rows as a Tablesaw table: numeric columns as doubles, the others as strings. */
    public Table table() {
        Table t = Table.create(name);
        for (int c = 0; c < columns.size(); c++) {
            final int ci = c;
            boolean numeric = rows.stream().allMatch(r -> r.get(ci) == null || r.get(ci) instanceof Number);
            if (numeric) {
                DoubleColumn col = DoubleColumn.create(columns.get(c));
                for (List<Object> r : rows) {
                    if (r.get(c) == null) col.appendMissing();
                    else col.append(((Number) r.get(c)).doubleValue());
                }
                t.addColumns(col);
            } else {
                StringColumn col = StringColumn.create(columns.get(c));
                for (List<Object> r : rows) col.append(r.get(c) == null ? "" : r.get(c).toString());
                t.addColumns(col);
            }
        }
        return t;
    }

    /** The plot (bars per row, or lines over x), or null when the benchmark has none. */
    public Chart<?, ?> chart() {
        if (chartSpec == null || rows.isEmpty()) return null;
        ChartSpec s = chartSpec;
        int xi = columns.indexOf(s.xColumn());
        if (s.bars()) {
            CategoryChart c = new CategoryChartBuilder().width(900).height(500).title(title).xAxisTitle(s.xColumn()).yAxisTitle(s.yTitle()).build();
            c.getStyler().setXAxisLabelRotation(rows.size() > 6 ? 45 : 0);
            List<String> x = rows.stream().map(r -> String.valueOf(r.get(xi))).toList();
            for (String y : s.yColumns()) {
                int yi = columns.indexOf(y);
                List<Double> ys = rows.stream().map(r -> r.get(yi) instanceof Number n && Double.isFinite(n.doubleValue()) ? n.doubleValue() : 0.0).toList();
                c.addSeries(y, x, ys);
            }
            return c;
        }
        XYChart c = new XYChartBuilder().width(900).height(500).title(title).xAxisTitle(s.xColumn()).yAxisTitle(s.yTitle()).build();
        for (String y : s.yColumns()) {
            int yi = columns.indexOf(y);
            List<Double> xs = new ArrayList<>(), ys = new ArrayList<>();
            for (List<Object> r : rows)
                if (r.get(yi) instanceof Number n && Double.isFinite(n.doubleValue()) && r.get(xi) instanceof Number xv) {
                    xs.add(xv.doubleValue());
                    ys.add(n.doubleValue());
                }
            if (!xs.isEmpty()) c.addSeries(y, xs, ys);
        }
        return c;
    }

    /** Everything as JSON: meta (date, machine, backend, command, options), columns, rows (objects), summary, notes. */
    public String json() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("bench", name);
        m.put("title", title);
        m.putAll(meta);
        m.put("columns", columns);
        List<Map<String, Object>> rs = new ArrayList<>();
        for (List<Object> r : rows) {
            Map<String, Object> o = new LinkedHashMap<>();
            for (int i = 0; i < columns.size(); i++) o.put(columns.get(i), r.get(i));
            rs.add(o);
        }
        m.put("rows", rs);
        m.put("summary", summary);
        m.put("notes", notes);
        return Json.pretty(m);
    }

    /** The terminal table: title, aligned columns, summary lines and notes. */
    public String text() {
        List<String[]> cells = new ArrayList<>();
        cells.add(columns.toArray(String[]::new));
        for (List<Object> r : rows) cells.add(r.stream().map(BenchResult::format).toArray(String[]::new));
        int[] w = new int[columns.size()];
        for (String[] r : cells) for (int i = 0; i < r.length; i++) w[i] = Math.max(w[i], r[i].length());
        StringBuilder sb = new StringBuilder(title).append('\n');
        for (int k = 0; k < cells.size(); k++) {
            String[] r = cells.get(k);
            for (int i = 0; i < r.length; i++) {
                boolean num = k > 0 && rows.get(k - 1).get(i) instanceof Number;
                String cell = num ? " ".repeat(w[i] - r[i].length()) + r[i] : r[i] + " ".repeat(w[i] - r[i].length());
                sb.append(i == 0 ? "  " : "  ").append(cell);
            }
            sb.append('\n');
            if (k == 0) {
                sb.append("  ");
                for (int i = 0; i < w.length; i++) sb.append(i == 0 ? "" : "  ").append("-".repeat(w[i]));
                sb.append('\n');
            }
        }
        for (var e : summary.entrySet()) sb.append("  ").append(e.getKey()).append(": ").append(format(e.getValue())).append('\n');
        for (String n : notes) sb.append("  note: ").append(n).append('\n');
        return sb.toString();
    }

    static String format(Object v) {
        if (v == null) return "-";
        if (v instanceof Map<?, ?> m) {
            StringBuilder sb = new StringBuilder();
            m.forEach((k, x) -> sb.append(sb.isEmpty() ? "" : ", ").append(k).append(' ').append(format(x)));
            return sb.toString();
        }
        if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (!Double.isFinite(d)) return "-";
            double a = Math.abs(d);
            if (a == 0) return "0";
            if (a >= 1000) return String.format(Locale.ROOT, "%.0f", d);
            if (a >= 100) return String.format(Locale.ROOT, "%.1f", d);
            if (a >= 1) return String.format(Locale.ROOT, "%.2f", d);
            if (a >= 0.01) return String.format(Locale.ROOT, "%.3f", d);
            return String.format(Locale.ROOT, "%.2e", d);
        }
        return v.toString();
    }

    /**
     * Writes the JSON to {@code jsonFile} and the chart as a PNG next to it (same name, .png); returns the PNG path or
     * null when there is no chart.
     */
    public Path save(Path jsonFile) {
        try {
            Path dir = jsonFile.toAbsolutePath().getParent();
            if (dir != null) Files.createDirectories(dir);
            Files.writeString(jsonFile, json());
            Chart<?, ?> c = chart();
            if (c == null) return null;
            if (System.getProperty("java.awt.headless") == null) System.setProperty("java.awt.headless", "true");
            String f = jsonFile.getFileName().toString();
            Path png = jsonFile.resolveSibling((f.endsWith(".json") ? f.substring(0, f.length() - 5) : f) + ".png");
            BitmapEncoder.saveBitmap(c, png.toString(), BitmapEncoder.BitmapFormat.PNG);
            return png;
        } catch (IOException e) {
            throw new UncheckedIOException("[bench] cannot write " + jsonFile + ": " + e.getMessage(), e);
        }
    }
}
