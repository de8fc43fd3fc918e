package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The one route of magics: over a stand-in for a stock JJava kernel (no JShell, no Jupyter client), and through the
 * ane4j kernel in-process for the two doors (a magic cell, a magic inside Java code).
 */
class MagicDispatchTest {
    static final class Probe {
        @Magic(value = "add", aliases = "plus", help = "%add A B — the sum")
        int add(MagicCall call) {
            return Integer.parseInt(call.args().get(0)) + Integer.parseInt(call.args().get(1));
        }

        @Magic(value = "upper", cell = true, help = "%%upper PREFIX — PREFIX and the body in capitals")
        String upper(MagicCall call) {
            return (String.join(" ", call.args()) + ":" + call.body()).toUpperCase();
        }

        @Magic(value = "checked", help = "%checked — fails with a checked exception")
        Object checked(MagicCall call) throws IOException {
            throw new IOException("disk full");
        }

        @Magic(value = "refused", help = "%refused — fails with its own one-line error")
        Object refused(MagicCall call) {
            throw new IllegalStateException("[refused] no; do something else");
        }

        /** Which route called this magic: the dispatch, and whether from Java code (Notebook.lineMagic). */
        @Magic(value = "route", help = "%route — which route called it")
        String route(MagicCall call) {
            List<String> frames = StackWalker.getInstance().walk(s -> s.map(f -> f.getClassName() + "." + f.getMethodName()).toList());
            return (frames.contains(MagicDispatch.class.getName() + ".line") ? "dispatch" : "elsewhere")
                    + (frames.contains(Notebook.class.getName() + ".lineMagic") ? " from code" : "");
        }

        /** Binds a notebook variable: Java code the kernel evaluates now, or after the cell when JShell is busy. */
        @Magic(value = "bindlater", help = "%bindlater NAME VALUE — binds NAME")
        String bind(MagicCall call) {
            call.bind(call.args().get(0), String.class, call.args().get(1));
            return "bound";
        }
    }

    static MagicDispatch overFakeKernel() {
        FakeKernel k = new FakeKernel();
        new MagicRegistry().add(new Probe()).installInto(k, false);
        return MagicDispatch.of(k);
    }

    @Test
    void linesAndCellsRunThroughTheRegistry() {
        MagicDispatch d = overFakeKernel();
        assertEquals(5, d.line("add", List.of("2", "3")));
        assertEquals(5, d.line("plus", List.of("2", "3")), "alias");
        assertEquals("A B:X\nY", d.cell("upper", List.of("a", "b"), "x\ny"));
    }

    @Test
    void failuresBecomeOneLineMagicErrors() {
        MagicDispatch d = overFakeKernel();
        assertEquals("unknown magic %nosuch; %lsmagic lists the magics",
                assertThrows(MagicException.class, () -> d.line("nosuch", List.of())).getMessage());
        assertEquals("unknown magic %%nosuch; %lsmagic lists the magics",
                assertThrows(MagicException.class, () -> d.cell("nosuch", List.of(), "")).getMessage());
        MagicException checked = assertThrows(MagicException.class, () -> d.line("checked", List.of()));
        assertEquals("[%checked] disk full", checked.getMessage());
        assertInstanceOf(IOException.class, checked.getCause());
        IllegalStateException own = assertThrows(IllegalStateException.class, () -> d.line("refused", List.of()));
        assertEquals("[refused] no; do something else", own.getMessage(), "a magic's own one-line error as it is");
    }

    @Test
    void magicCellsAreRunWithoutJShell() {
        MagicDispatch d = overFakeKernel();
        assertTrue(MagicDispatch.isMagicCell("%add 1 2"));
        assertTrue(MagicDispatch.isMagicCell("  %add 1 2\n\n%plus 3 4\n"), "blank lines and indentation allowed");
        assertTrue(MagicDispatch.isMagicCell("%%upper\nint x = 1;"), "a cell magic's body is not Java");
        assertFalse(MagicDispatch.isMagicCell("%add 1 2\nint x = 1;"), "Java after a magic: JShell with the magic rewritten");
        assertFalse(MagicDispatch.isMagicCell("int n = %add 1 2"));
        assertFalse(MagicDispatch.isMagicCell(""));
        assertFalse(MagicDispatch.isMagicCell("// %add 1 2"));
        assertEquals(7, d.runCell("%add 1 2\n%plus 3 4"), "the last line magic's value");
        assertEquals("A \"B C\":BODY", d.runCell("%%upper a \"\\\"b c\\\"\"\nbody"), "the head split like a shell");
        assertEquals("a cell magic needs a name after %%; %lsmagic lists them",
                assertThrows(MagicException.class, () -> d.runCell("%%\nbody")).getMessage());
    }

    @Test
    void completenessAndNameCompletion() {
        MagicDispatch d = overFakeKernel();
        assertEquals("complete", MagicDispatch.isComplete("%add 1 2"));
        assertEquals("", MagicDispatch.isComplete("%%upper x"), "a cell magic without a body is incomplete");
        assertEquals("complete", MagicDispatch.isComplete("%%upper x\nbody"));
        assertNull(MagicDispatch.isComplete("int x = 1;"), "Java: JShell's to say");
        var line = d.completeName("int a = 1;\n%pl", 14);
        assertEquals(List.of("plus"), line.getReplacements());
        assertEquals(12, line.getSourceStart());
        assertEquals(List.of("upper"), d.completeName("%%u", 3).getReplacements());
        assertNull(d.completeName("int pl", 6), "not a magic name");
    }

    @Test
    void helpListsEachMagicOnceWithItsAliases() {
        FakeKernel k = new FakeKernel();
        MagicRegistry probe = new MagicRegistry().add(new Probe());
        probe.installInto(k, false);
        MagicDispatch d = MagicDispatch.of(k);
        d.describe(probe);
        List<MagicRegistry.Help> help = d.help();
        assertEquals(List.of("%add", "%bindlater", "%checked", "%refused", "%route", "%%upper"), help.stream().map(MagicRegistry.Help::magic).toList());
        assertEquals(List.of("%plus"), help.getFirst().aliases());
        assertEquals("the sum", help.getFirst().what());
        assertEquals("%add A B", help.getFirst().usage());
    }

    /** Both doors, in the ane4j kernel: a magic cell and a magic inside Java code reach the magic through the dispatch. */
    @Test
    void bothDoorsTakeTheOneRoute(@TempDir Path dir) throws Exception {
        JupyterKernel k = JupyterKernel.create(false);
        try {
            k.onStartup();
            new MagicRegistry().add(new Probe()).installInto(k, false);
            assertSame(k.magics(), MagicDispatch.of(k), "the kernel's own dispatch");
            assertEquals("dispatch", k.run("%route"));
            assertEquals("dispatch from code", k.run("String how = %route\nhow"));

            // a magic that evaluates code: at once from a magic cell, after the cell from inside a snippet
            assertEquals("bound", k.run("%bindlater early now"));
            assertEquals("now", k.run("early"));
            assertEquals("bound", k.run("String r = %bindlater later after\nr"));
            assertEquals("after", k.run("later"));
            Path script = Files.writeString(dir.resolve("s.jsh"), "String viaLoad = %bindlater loaded yes\n");
            k.run("%load " + script);
            // before the one route this cell never ended: the bind's code was evaluated inside the running snippet
            assertEquals("yes", k.run("loaded"), "a magic inside a %load-ed script binds after the cell too");
        } finally {
            k.onShutdown(false);
        }
    }
}
