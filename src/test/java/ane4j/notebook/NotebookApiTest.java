package ane4j.notebook;

import ane4j.session.*;
import static org.junit.jupiter.api.Assertions.*;

import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.mil.Mil;
import ane4j.mil.MilParseException;
import ane4j.mil.MilParser;
import ane4j.mil.Program;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The notebook API without Jupyter: compiling and running kernels, MIL highlighting, positioned parse errors. */
class NotebookApiTest {
    static final String TWICE = """
            program(1.3)
            {
                func main<ios18>(tensor<fp16, [1, 2, 1, 2]> x, tensor<fp32, [1, 2, 1, 2]> b) {
                    tensor<fp16, [1, 2, 1, 2]> y = add(x = x, y = x)[name = string("y")];
                    string c = const()[name = string("c"), val = string("a<b")];
                } -> (y, b);
            }
            """;

    @Test
    void kernelRunsOnArraysNumbersAndBuffers() {
        Ane.use(new LocalSession(new RefBackend()));
        int before = Ane.liveKernels();
        CompiledProgram k = Ane.compile(TWICE);
        assertEquals(before + 1, Ane.liveKernels());
        Map<String, TensorBuffer> out = k.run(Map.of("x", new float[] {1, 2.5f, -3, 1e-4f}, "b", 7));
        assertEquals(List.of("y", "b"), List.copyOf(out.keySet()));
        float[] y = out.get("y").toFloatArray();
        assertArrayEquals(new float[] {2, 5, -6, Float.float16ToFloat(Float.floatToFloat16(1e-4f)) * 2}, y, 0f);
        assertArrayEquals(new float[] {7, 7, 7, 7}, out.get("b").toFloatArray());
        // a buffer of another dtype is converted
        TensorBuffer x32 = TensorBuffer.of(Mil.fp32(1, 2, 1, 2), 1, 1, 1, 1);
        assertArrayEquals(new float[] {2, 2, 2, 2}, k.run(Map.of("x", x32, "b", 0)).get("y").toFloatArray());
        var missing = assertThrows(IllegalArgumentException.class, () -> k.run(Map.of("x", 1)));
        assertTrue(missing.getMessage().startsWith("[kernel] kernel needs input 'b' (fp32[1,2,1,2])"), missing.getMessage());
        var count = assertThrows(IllegalArgumentException.class, () -> k.run(Map.of("x", new float[3], "b", 0)));
        assertEquals("[kernel] input 'x' needs 4 values (fp16[1,2,1,2]), got 3", count.getMessage());
        var unknown = assertThrows(IllegalArgumentException.class, () -> k.run(Map.of("z", 1, "x", 1, "b", 1)));
        assertTrue(unknown.getMessage().contains("no input 'z'"), unknown.getMessage());
        assertTrue(k.html().contains("<td>input</td><td>x</td><td><code>fp16[1,2,1,2]</code>"), k.html());
        k.close();
        assertEquals(before, Ane.liveKernels());
        assertThrows(IllegalStateException.class, () -> k.run(Map.of("x", 1, "b", 1)));
    }

    @Test
    void fluentGraphsCompileAndRun() {
        Ane.use(new LocalSession(new RefBackend()));
        Program g = Mil.program().function("main", f -> f.output(f.relu(f.input("x", Mil.fp16(1, 4, 1, 1))))).build();
        try (CompiledProgram k = Ane.compile(g)) {
            assertArrayEquals(new float[] {0, 0, 0.5f, 3}, k.run(-1, -0.5f, 0.5f, 3), 0f);
        }
        assertEquals(g, MilParser.parse(g.toString()), "the shown MIL text parses back to the same graph");
    }

    @Test
    void highlightingMarksTokensAndEscapes() {
        String html = MilHighlighter.html(TWICE + "// done\n");
        assertTrue(html.contains("<span style=\"" + MilHighlighter.KEYWORD + "\">program</span>"), html);
        assertTrue(html.contains("<span style=\"" + MilHighlighter.KEYWORD + "\">func</span>"), html);
        assertTrue(html.contains("<span style=\"" + MilHighlighter.TYPE + "\">tensor</span>&lt;<span style=\"" + MilHighlighter.TYPE + "\">fp16</span>"), html);
        assertTrue(html.contains("<span style=\"" + MilHighlighter.OP + "\">add</span>(x = x"), html);
        assertTrue(html.contains("<span style=\"" + MilHighlighter.STRING + "\">&quot;a&lt;b&quot;</span>"), "strings escaped: " + html);
        assertTrue(html.contains("<span style=\"" + MilHighlighter.COMMENT + "\">// done</span>"), html);
        assertTrue(html.contains("<span style=\"" + MilHighlighter.NUMBER + "\">1.3</span>"), html);
        String text = html.replaceAll("<[^>]+>", "").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&");
        assertEquals("<pre class=\"ane4j-mil\" style=\"line-height:1.3\">".replaceAll("<[^>]+>", "") + TWICE + "// done\n", text, "highlighting keeps the text");
    }

    @Test
    void parseErrorPointsIntoTheCell() {
        String cell = TWICE.replace("y = x)", "y = z)");
        MilParseException e = assertThrows(MilParseException.class, () -> MilParser.parse(cell));
        CellError err = MilMagics.parseError(cell, e);
        assertEquals("MilParseError", err.ename());
        List<String> tb = err.traceback().stream().map(l -> l.replaceAll("\u001B\\[[;\\d]*m", "")).toList();
        assertEquals("MilParseError: line 5, column 55: unknown value 'z' (defined so far in main: x, b)", tb.get(0), "line 1 of the cell is %%mil");
        assertTrue(tb.get(1).startsWith("line 5 │ ") && tb.get(1).endsWith("add(x = x, y = z)[name = string(\"y\")];"), tb.get(1));
        assertEquals(tb.get(1).indexOf("z)"), tb.get(2).indexOf('^'), "caret under the column:\n" + String.join("\n", tb));
    }

    static List<String> plain(CellError err) {
        return err.traceback().stream().map(l -> l.replaceAll("\u001B\\[[;\\d]*m", "")).toList();
    }

    @Test
    void declaredShapeMismatchUnderlinesTheDeclaredType() {
        String cell = "program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1, 2, 1, 2]> x) {\n"
                + "        tensor<fp16, [1, 2, 1, 4]> y = add(x = x, y = x)[name = string(\"y\")];\n    } -> (y);\n}";
        MilParseException e = assertThrows(MilParseException.class, () -> MilParser.parse(cell));
        List<String> tb = plain(MilMagics.parseError(cell, e));
        assertTrue(tb.get(0).contains("line 5, column 9: [add] y: declared tensor<fp16, [1, 2, 1, 4]> but inferred"), tb.get(0));
        int type = tb.get(1).indexOf("tensor<fp16, [1, 2, 1, 4]>");
        assertEquals(type, tb.get(2).indexOf('^'), String.join("\n", tb));
        assertEquals("^" + "~".repeat("tensor<fp16, [1, 2, 1, 4]>".length() - 1), tb.get(2).substring(tb.get(2).indexOf('^')), "the whole declared type: " + tb.get(2));
    }

    @Test
    void aLongLineShowsAWindowWithTheCaretUnderTheToken() {
        String pad = "x".repeat(200);
        String cell = "program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1, 2, 1, 2]> x) {\n"
                + "        tensor<fp16, [1, 2, 1, 2]> y = add(x = x, y = nosuch)[name = string(\"" + pad + "\")];\n    } -> (y);\n}";
        String longCell = cell.replace("        tensor<fp16, [1, 2, 1, 2]> y", " ".repeat(150) + "tensor<fp16, [1, 2, 1, 2]> y");
        MilParseException e = assertThrows(MilParseException.class, () -> MilParser.parse(longCell));
        List<String> tb = plain(MilMagics.parseError(longCell, e));
        assertTrue(tb.get(1).length() <= "line 5 │ ".length() + MilMagics.WINDOW + 2, "a window, not the whole line: " + tb.get(1).length());
        assertTrue(tb.get(1).contains("…") && tb.get(1).endsWith("…"), tb.get(1));
        assertEquals(tb.get(1).indexOf("nosuch"), tb.get(2).indexOf('^'), String.join("\n", tb));
    }
}
