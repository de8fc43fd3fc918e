package ane4j.bench;

import ane4j.model.Json;
import static org.junit.jupiter.api.Assertions.*;

import ane4j.model.ModelConfig;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.XYChart;
import tech.tablesaw.api.ColumnType;
import tech.tablesaw.api.Table;

/** The Java API the notebook's %bench uses: table(), chart(), json(), text(); and the FLOP accounting of a step. */
class BenchResultTest {
    static BenchResult sample() {
        BenchResult r = new BenchResult("demo", "Demo", List.of("config", "n", "GFLOPS"));
        r.row("a", 256, 10.5).row("b", 512, Double.NaN);
        r.put("best", 10.5).put("label", "x \"quoted\"\n").note("a note");
        return r;
    }

    @Test
    void tableHasTypedColumnsAndMissingValues() {
        Table t = sample().table();
        assertEquals(List.of("config", "n", "GFLOPS"), t.columnNames());
        assertEquals(ColumnType.STRING, t.column("config").type());
        assertEquals(ColumnType.DOUBLE, t.column("n").type());
        assertEquals(512.0, t.doubleColumn("n").get(1));
        assertEquals(10.5, t.doubleColumn("GFLOPS").get(0));
        assertEquals(2, t.rowCount());
    }

    @Test
    void chartsAreBarsOrLines() {
        BenchResult r = sample();
        assertNull(r.chart(), "no chart spec, no chart");
        r.chart(new BenchResult.ChartSpec(true, "config", List.of("GFLOPS"), "GFLOPS"));
        CategoryChart bars = (CategoryChart) r.chart();
        assertEquals(1, bars.getSeriesMap().size());
        r.chart(new BenchResult.ChartSpec(false, "n", List.of("GFLOPS"), "GFLOPS"));
        XYChart lines = (XYChart) r.chart();
        assertEquals(1, lines.getSeriesMap().get("GFLOPS").getXData().length, "the NaN point is left out");
    }

    @Test
    @SuppressWarnings("unchecked")
    void jsonRoundTripsWithNonFiniteAsNull() {
        Map<String, Object> m = (Map<String, Object>) Json.parse(sample().json());
        assertEquals("demo", m.get("bench"));
        List<Map<String, Object>> rows = (List<Map<String, Object>>) m.get("rows");
        assertEquals(256L, rows.get(0).get("n"));
        assertEquals(10.5, rows.get(0).get("GFLOPS"));
        assertNull(rows.get(1).get("GFLOPS"));
        assertTrue(rows.get(1).containsKey("GFLOPS"));
        assertEquals("x \"quoted\"\n", ((Map<String, Object>) m.get("summary")).get("label"));
        assertEquals(List.of("a note"), m.get("notes"));
        assertNotNull(((Map<String, Object>) m.get("machine")).get("cpu"));
    }

    @Test
    void textAlignsColumnsAndShowsMissingAsDash() {
        String[] lines = sample().text().split("\n");
        assertEquals("Demo", lines[0]);
        assertEquals("  config  n    GFLOPS", lines[1]);
        assertEquals("  ------  ---  ------", lines[2]);
        assertEquals("  a       256   10.50", lines[3]);
        assertEquals("  b       512       -", lines[4]);
        assertEquals("  best: 10.50", lines[5]);
    }

    @Test
    void stepFlopsMatchMaderixAccountingForStories110m() {
        // docs/ane-facts.md §7: forward projections = 43.49 GFLOP; dx and dW cost the same again each; classifier 2·V·D·S ×3;
        // attention 4·S²·Q forward and 10·S²·Q backward per layer
        double fwd = 43.49e9, cls = 2.0 * 32000 * 768 * 256, attn = 14.0 * 256 * 256 * 768 * 12;
        assertEquals(3 * fwd + 3 * cls + attn, StepBench.flopsPerStep(ModelConfig.parse("stories110m")), 0.05e9);
    }

    @Test
    void optionsParseAndRefuseBadValues() {
        BenchOptions o = BenchOptions.of("--quick --steps 3 --configs 512x128,64x2 --json=out.json");
        assertTrue(o.quick());
        assertEquals(3, o.getInt("steps", 10));
        assertArrayEquals(new int[][] {{512, 128}, {64, 2}}, o.getPairs("configs", null));
        assertEquals("out.json", o.get("json", null));
        assertEquals("[bench] option --steps needs a value", assertThrows(IllegalArgumentException.class, () -> BenchOptions.of("--steps")).getMessage());
        assertEquals("[bench] --steps x is not an integer", assertThrows(IllegalArgumentException.class, () -> BenchOptions.of("--steps x").getInt("steps", 1)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> BenchOptions.of("--configs 0x3").getPairs("configs", null));
    }
}
