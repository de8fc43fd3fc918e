package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ErrorFormatterTest {
    static String plain(List<String> lines) {
        return String.join("\n", lines).replaceAll("\u001B\\[[;\\d]*m", "");
    }

    @Test
    void compileErrorPointsAtTheSpanOnItsLine() {
        ErrorFormatter.Origin o = new ErrorFormatter.Origin(4, 3, "int a = 1;\nint b = foo(a);\n");
        int start = o.source().indexOf("foo");
        CellError e = ErrorFormatter.compileError(List.of(new ErrorFormatter.Problem("cannot find symbol\n  symbol: method foo(int)", o, start, start + 3)));
        List<String> lines = plain(e.traceback()).lines().toList();
        assertEquals("error: cannot find symbol  (In[4] line 4)", lines.get(0), "cell line = first line 3 + line 2 of the snippet - 1");
        assertEquals("    int b = foo(a);", lines.get(1));
        assertEquals("            ^~~", lines.get(2));
        assertEquals("  symbol: method foo(int)", lines.get(3));
        assertEquals("cannot find symbol", e.evalue());
    }

    @Test
    void userFramesComeFirstThenAFewLibraryFrames() {
        StackTraceElement[] st = {
            new StackTraceElement("java.util.Objects", "checkIndex", "Objects.java", 1),
            new StackTraceElement("java.util.ImmutableCollections$List12", "get", "ImmutableCollections.java", 2),
            new StackTraceElement("REPL.$JShell$5", "pick", "#5", 2),
            new StackTraceElement("REPL.$JShell$6", "do_it$", "#6", 1),
            new StackTraceElement("jdk.internal.reflect.DirectMethodHandleAccessor", "invoke", null, 3),
            new StackTraceElement("ane4j.notebook.CellExecutionControl", "lambda$invoke$1", "CellExecutionControl.java", 4),
        };
        Map<String, ErrorFormatter.Origin> origins = Map.of(
                "5", new ErrorFormatter.Origin(2, 1, "int pick(List<Integer> l) {\n  return l.get(9);\n}"),
                "6", new ErrorFormatter.Origin(3, 2, "pick(List.of(1))"));
        List<String> f = plain(ErrorFormatter.frames(st, origins::get)).lines().toList();
        assertEquals("    at pick (In[2] line 2): return l.get(9);", f.get(0));
        assertEquals("    at (In[3] line 2): pick(List.of(1))", f.get(1));
        assertEquals("  in library code:", f.get(2));
        assertTrue(f.get(3).contains("Objects.checkIndex") && f.get(4).contains("ImmutableCollections"), f.toString());
        assertEquals(5, f.size(), "no frames of the kernel machinery: " + f);
    }

    @Test
    void jshellWrapperNamesAreRemoved() {
        assertEquals("Cannot invoke \"Object.hashCode()\" because \"o\" is null",
                ErrorFormatter.clean("Cannot invoke \"Object.hashCode()\" because \"REPL.$JShell$7.o\" is null"));
    }

    @Test
    void magicErrorsAreOneLine() {
        CellError e = CellError.of(new MagicException("[%maven] 'x' is not a Maven coordinate"));
        assertEquals("MagicError", e.ename());
        assertEquals(List.of("[%maven] 'x' is not a Maven coordinate"), plain(e.traceback()).lines().toList());
    }
}
