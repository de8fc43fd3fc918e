package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.dflib.jjava.jupyter.kernel.display.mime.MIMEType;
import tech.tablesaw.api.Table;

/** The kernel in-process, without a Jupyter connection: cells, magics, errors, completion, extension lifecycle. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JupyterKernelTest {
    JupyterKernel kernel;

    /** A cell magic for the test: binds the body (a string) to the variable named by the first argument. */
    static final class EchoMagics {
        @Magic(value = "echo", cell = true, help = "%%echo NAME — bind the body to NAME")
        Object echo(MagicCall call) {
            call.bind(call.args().getFirst(), String.class, call.body());
            return call.body().length();
        }

        @Magic(value = "ping", atOnce = {"now", "wait"}, help = "%ping now|wait — answered while another cell runs")
        Object ping(MagicCall call) {
            if (!call.answeredAtOnce()) return "in turn";
            return call.args().getFirst().equals("wait") ? MagicCall.IN_TURN : "at once in cell " + call.atOnceCount();
        }

        @Magic(value = "twice", aliases = "x2", help = "%twice N")
        int twice(MagicCall call) {
            return 2 * Integer.parseInt(call.args().getFirst());
        }
    }

    @BeforeAll
    void start() {
        kernel = JupyterKernel.create(true);
        kernel.onStartup();
        new MagicRegistry().add(new EchoMagics()).installInto(kernel, false);
    }

    @AfterAll
    void stop() {
        kernel.onShutdown(false);
    }

    static String text(CellError e) {
        return String.join("\n", e.traceback()).replaceAll("\u001B\\[[;\\d]*m", "");
    }

    /**
     * The cells answered while another runs (tools/kernel_stop_test.py drives it over ZMQ): only a line magic alone in its
     * cell with the arguments its {@link Magic#atOnce} lists, through the one route; the magic may still say "in turn".
     */
    @Test
    void theCellsAnsweredWhileAnotherRuns() {
        MagicDispatch route = kernel.magics();
        int[] counts = {7};
        java.util.function.IntSupplier count = () -> counts[0]++;
        assertEquals("at once in cell 7", route.answerAtOnce("%ping now", count).getData(MIMEType.TEXT_PLAIN));
        assertEquals("at once in cell 8", route.answerAtOnce("  %ping   now \n", count).getData(MIMEType.TEXT_PLAIN));
        for (String queued : List.of("%ping now\n1 + 1", "%ping later", "%ping", "%pingx now", "%%ping\nnow", "// %ping now", "%ping now please", "1 + 1"))
            assertNull(route.answerAtOnce(queued, count), queued);
        assertNull(route.answerAtOnce("%ping wait", count), "the magic said in turn");
        assertEquals(9, counts[0], "a count only for the cells answered");
        assertEquals("in turn", kernel.run("%ping now"), "in its turn the same magic runs as any other");
        // %train stop and status are answered at once only while a run runs; with none they wait their turn
        for (String train : List.of("%train stop", "%train status"))
            assertNull(route.answerAtOnce(train, () -> { throw new AssertionError("no count for a cell in turn"); }), train);
        assertNull(route.answerAtOnce("%train resume", count));
    }

    @Test
    void expressionsAndStatementsInOneCell() {
        assertEquals(42, kernel.run("6 * 7"));
        assertEquals(42, kernel.run("int a = 2;\nint b = 21;\na * b"));
        assertNull(kernel.run("int c = 3;"), "a declaration is not the cell's result");
        assertEquals("abc", kernel.run("String s = \"ab\";\ns + \"c\""));
    }

    @Test
    void compileErrorShowsTheOffendingLineAndColumn() {
        CellError e = assertThrows(CellError.class, () -> kernel.run("int ok = 1;\nint bad = \"text\";"));
        assertEquals("CompilationError", e.ename());
        String tb = text(e);
        assertTrue(tb.contains("incompatible types"), tb);
        assertTrue(tb.contains("line 2"), "the cell line of the error: " + tb);
        List<String> lines = tb.lines().toList();
        int src = lines.indexOf(lines.stream().filter(l -> l.contains("int bad = \"text\";")).findFirst().orElseThrow());
        String caret = lines.get(src + 1);
        assertEquals(lines.get(src).indexOf("\"text\""), caret.indexOf('^'), "caret under the bad expression:\n" + tb);
    }

    @Test
    void exceptionShowsUserFramesFirst() {
        kernel.run("int divide(int a, int b) {\n  int q = a / b;\n  return q;\n}");
        CellError e = assertThrows(CellError.class, () -> kernel.run("int z = 0;\ndivide(1, z)"));
        assertEquals("ArithmeticException", e.ename());
        assertEquals("/ by zero", e.evalue());
        List<String> tb = text(e).lines().toList();
        assertTrue(tb.getFirst().contains("java.lang.ArithmeticException: / by zero"), tb.getFirst());
        assertTrue(tb.get(1).contains("divide") && tb.get(1).contains("line 2") && tb.get(1).contains("int q = a / b;"), tb.toString());
        assertTrue(tb.get(2).contains("line 2") && tb.get(2).contains("divide(1, z)"), tb.toString());
        assertTrue(tb.stream().noneMatch(l -> l.contains("jdk.jshell") || l.contains("reflect")), "no kernel machinery: " + tb);
    }

    @Test
    void libraryExceptionsShowUserFrameThenLibraryFrames() {
        CellError e = assertThrows(CellError.class, () -> kernel.run("java.util.List.of(1).get(5)"));
        assertEquals("IndexOutOfBoundsException", e.ename(), text(e));
        List<String> tb = text(e).lines().toList();
        assertTrue(tb.get(1).contains("List.of(1).get(5)"), tb.toString());
        assertTrue(tb.stream().anyMatch(l -> l.contains("in library code")), tb.toString());
    }

    @Test
    void lineMagicsRunDirectlyAndInsideJava() {
        Object t = kernel.run("%ane");
        assertInstanceOf(Table.class, t);
        assertTrue(((Table) t).stringColumn("item").asList().containsAll(List.of("JDK", "OS", "chip", "backend", "MIL dialect", "compile budget", "worker", "live kernels", "training")));
        assertEquals(Ane.status().worker(), ((Table) t).where(((Table) t).stringColumn("item").isEqualTo("worker")).getString(0, 1));
        assertEquals(14, kernel.run("%twice 7"));
        assertEquals(14, kernel.run("%x2 7"), "alias");
        assertEquals(10, kernel.run("tech.tablesaw.api.Table t = %ane\nt.rowCount()"));
        assertEquals(20, kernel.run("int n = %twice 10\nn"));
    }

    @Test
    void cellMagicBindsAVariableForTheNextCell() {
        assertEquals(11, kernel.run("%%echo greeting\nhello world"));
        assertEquals("HELLO WORLD", kernel.run("greeting.toUpperCase()"));
    }

    @Test
    void loadRunsScriptsAndNotebookCells(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path jsh = java.nio.file.Files.writeString(dir.resolve("setup.jsh"), "int loaded = 40;\nint inc(int x) { return x + 1; }\n");
        kernel.run("%load " + jsh);
        assertEquals(41, kernel.run("inc(loaded)"));
        Path nb = java.nio.file.Files.writeString(dir.resolve("nb.ipynb"), """
                {"cells": [{"cell_type": "markdown", "source": ["# title"]},
                           {"cell_type": "code", "source": ["int fromNb = 1;\\n", "fromNb += 1;"]},
                           {"cell_type": "code", "source": "fromNb * 21"}],
                 "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
                """);
        assertEquals(42, kernel.run("%load " + nb), "the value of the last code cell");
        MagicException e = assertThrows(MagicException.class, () -> kernel.run("%load " + dir.resolve("missing.jsh")));
        assertTrue(e.getMessage().startsWith("[%load] no file"), e.getMessage());
        MagicException j = assertThrows(MagicException.class, () -> kernel.run("%jars " + dir + "/*.jar"));
        assertTrue(j.getMessage().contains("nothing matches"), j.getMessage());
    }

    @Test
    void unknownMagicIsOneLine() {
        MagicException e = assertThrows(MagicException.class, () -> kernel.run("%nosuch 1"));
        assertTrue(e.getMessage().contains("%nosuch") && e.getMessage().contains("%lsmagic"), e.getMessage());
        CellError c = CellError.of(e);
        assertEquals(1, c.traceback().size());
    }

    @Test
    void magicErrorInsideJavaIsShort() {
        CellError e = assertThrows(CellError.class, () -> kernel.run("int k = 1;\nvar x = %nosuch 2\nx"));
        assertTrue(text(e).contains("unknown magic %nosuch"), text(e));
    }

    @Test
    void lsmagicListsEveryMagicOnceSorted() {
        Table t = (Table) kernel.run("%lsmagic");
        List<String> magics = t.stringColumn("magic").asList();
        String shown = String.join("\n", magics);
        for (String m : List.of("%ane", "%classpath", "%jars (%jar)", "%maven (%addMavenDependency, %addMavenDependencies)", "%load", "%%echo", "%%mil", "%%train", "%train"))
            assertTrue(magics.contains(m), m + " in\n" + shown);
        assertFalse(magics.contains("%jar") || magics.contains("%help"), "aliases are folded into their magic:\n" + shown);
        List<String> names = magics.stream().map(m -> m.replaceAll("^%+| .*$", "")).toList();
        assertEquals(names.stream().sorted().toList(), names, "sorted by name");
        assertEquals(magics.indexOf("%train") + 1, magics.indexOf("%%train"), "the line magic, then the cell magic of the same name");
        assertEquals("add jars (a directory adds every jar in it)", t.stringColumn("what it does").get(magics.indexOf("%jars (%jar)")));
        assertEquals("%jars GLOB...", t.stringColumn("usage").get(magics.indexOf("%jars (%jar)")));
    }

    @Test
    void trainHelpListsTheKeysWithoutARun() {
        TrainingRun before = TrainingRun.current();
        String line = (String) kernel.run("%train help");
        String cell = (String) kernel.run("%%train --help\nsteps = 5");
        assertEquals(line, cell, "%train help and %%train --help are the same text");
        for (String k : ane4j.run.TrainOptions.DEFAULTS.keySet()) assertTrue(line.contains("\n  " + k + " "), k + " in\n" + line);
        assertTrue(line.contains("%train status | stop | resume | plot [log] | table | record | help"), line);
        assertSame(before, TrainingRun.current(), "--help starts no run");
    }

    @Test
    void isComplete() {
        assertEquals("complete", kernel.isComplete("1 + 1"));
        assertEquals("complete", kernel.isComplete("int a = 1;\nint b = 2;"));
        assertTrue(kernel.isComplete("for (int i = 0; i < 3; i++) {").isBlank(), "incomplete gives an indent");
        assertEquals("", kernel.isComplete("%%echo x"), "a cell magic without body is incomplete");
        assertEquals("complete", kernel.isComplete("%ane"));
    }

    @Test
    void completionOfJavaAndMagics() {
        var c = kernel.complete("System.out.pri", 14);
        assertTrue(c.getReplacements().contains("println("), c.getReplacements().toString());
        assertEquals(11, c.getSourceStart());
        var m = kernel.complete("%an", 3);
        assertEquals(List.of("ane"), m.getReplacements());
        assertEquals(1, m.getSourceStart());
        var cm = kernel.complete("%%ec", 4);
        assertEquals(List.of("echo"), cm.getReplacements());
    }

    @Test
    void inspectShowsSignature() {
        var d = kernel.inspect("Math.max(", 5, false);
        assertNotNull(d);
        assertTrue(d.getData(org.dflib.jjava.jupyter.kernel.display.mime.MIMEType.TEXT_PLAIN).toString().contains("max("));
    }

    @Test
    void interruptStopsASleepingCell() throws Exception {
        CompletableFuture<Throwable> f = CompletableFuture.supplyAsync(() -> {
            try {
                kernel.run("Thread.sleep(60_000);");
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        Thread.sleep(1500);
        kernel.interrupt();
        Throwable t = f.get(20, TimeUnit.SECONDS);
        assertInstanceOf(CellError.class, t);
        assertEquals("Interrupted", ((CellError) t).ename());
        assertEquals(3, kernel.run("1 + 2"), "the kernel works after an interrupt");
    }

    @Test
    void extensionIsInstalledOnceAndImportsRun() {
        assertEquals(1, kernel.extensionsInstalled().keySet().stream().filter(k -> k.equals(Ane4jExtension.class.getName())).count());
        int before = kernel.extensionsInstalled().size();
        kernel.addToClasspath(Path.of("target/classes"));
        assertEquals(before, kernel.extensionsInstalled().size(), "adding the same jar again does not install twice");
        assertTrue(kernel.evaluator().imports().contains("import static ane4j.notebook.Notebook.*;"), kernel.evaluator().imports().toString());
    }
}
