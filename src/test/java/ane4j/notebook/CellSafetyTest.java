package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** Issue 18 rows 6-7 in-process: an interrupted busy cell really stops; System.exit and Runtime.halt are refused. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CellSafetyTest {
    JupyterKernel kernel;

    @BeforeAll
    void start() {
        System.setProperty("ane4j.notebook.interruptGraceMillis", "1000");
        kernel = JupyterKernel.create(false);
        kernel.onStartup();
    }

    @AfterAll
    void stop() {
        LibraryLoop.release();
        kernel.onShutdown(false);
        System.clearProperty("ane4j.notebook.interruptGraceMillis");
    }

    CompletableFuture<Throwable> runAsync(String code) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                kernel.run(code);
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
    }

    /** CPU seconds the kernel's cell threads used over {@code millis}. */
    static double cellCpuSeconds(long millis) throws InterruptedException {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long[] ids = Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("ane4j-cell")).mapToLong(Thread::threadId).toArray();
        long before = Arrays.stream(ids).map(mx::getThreadCpuTime).filter(t -> t > 0).sum();
        Thread.sleep(millis);
        long after = Arrays.stream(ids).map(mx::getThreadCpuTime).filter(t -> t > 0).sum();
        return (after - before) / 1e9;
    }

    /** Interrupts {@code code} after it ran {@code ms}; the cell's error and the interrupt -> reply time in ms. */
    Object[] interruptAfter(String code, long ms) throws Exception {
        CompletableFuture<Throwable> f = runAsync(code);
        for (int i = 0; i < 1000 && !kernel.evaluator().busy(); i++) Thread.sleep(10);
        assertTrue(kernel.evaluator().busy(), "the cell started: " + code);
        Thread.sleep(ms);
        long t0 = System.nanoTime();
        kernel.interrupt();
        Throwable t = f.get(20, TimeUnit.SECONDS);
        assertInstanceOf(CellError.class, t, String.valueOf(t));
        return new Object[] {t, (System.nanoTime() - t0) / 1e6};
    }

    @Test
    void interruptStopsABusyLoopAndItsCore() throws Exception {
        Object[] r = interruptAfter("long n = 0;\nwhile (true) n++;", 800);
        CellError e = (CellError) r[0];
        assertEquals("Interrupted", e.ename(), e.evalue());
        assertTrue((double) r[1] < 500, "interrupt -> reply " + r[1] + " ms");
        double cpu = cellCpuSeconds(500);
        assertTrue(cpu < 0.05, "the cell's thread still used " + cpu + " s of CPU in 0.5 s after the interrupt");
        assertEquals(2, kernel.run("1 + 1"));
    }

    @Test
    void interruptStopsLoopsThatCatchEverythingAndLoopsInMethodsAndClasses() throws Exception {
        for (String code : new String[] {
                "long m = 0;\nwhile (true) { try { m++; } catch (Throwable t) { } }",
                "class Spinner { long n; void spin() { for (;;) n++; } }\nnew Spinner().spin();",
                "long fib(int k) { return k < 2 ? k : fib(k - 1) + fib(k - 2); }\nfib(80)",
                "java.util.stream.LongStream.iterate(0, i -> i + 1).filter(i -> i < 0).findFirst()"}) {
            CellError e = (CellError) interruptAfter(code, 500)[0];
            assertEquals("Interrupted", e.ename(), code + ": " + e.evalue());
            assertTrue(cellCpuSeconds(300) < 0.05, code + ": still burning CPU");
        }
        assertEquals(3, kernel.run("1 + 2"));
    }

    @Test
    void cellsThatMergeTheirOwnTypesStillLoad() {
        // JShell's own stop-check weaving fails on exactly this on JDK 25 (JDK-8366926)
        kernel.run("interface Shape { double area(); }");
        kernel.run("record Sq(double s) implements Shape { public double area() { return s * s; } }");
        kernel.run("record Circ(double r) implements Shape { public double area() { return 3 * r * r; } }");
        kernel.run("Shape pick(boolean b) { Shape s; if (b) s = new Sq(2); else s = new Circ(1); return s; }");
        assertEquals(4.0, kernel.run("pick(true).area()"));
        assertEquals(1.0, kernel.run("Object o = pick(false).area() > 1 ? new Sq(1) : new Circ(1);\n((Shape) o).area()"));
        assertEquals(0, kernel.evaluator().uninstrumentedClasses(), "every cell class got its stop checks");
    }

    @Test
    void aCellStuckInLibraryCodeIsReportedAndTheNextCellRuns() throws Exception {
        Object[] r = interruptAfter("ane4j.notebook.LibraryLoop.spin()", 300);
        CellError e = (CellError) r[0];
        try {
            assertEquals("StillRunning", e.ename(), e.evalue());
            assertTrue(e.evalue().contains("does not respond to interrupts and is still running on one core")
                    && e.evalue().contains("LibraryLoop.spin") && e.evalue().contains("Kernel > Restart"), e.evalue());
            assertTrue((double) r[1] < 5000, "interrupt -> reply " + r[1] + " ms");
            assertEquals(1, kernel.evaluator().runawayCells());
            assertEquals(5, kernel.run("2 + 3"), "a later cell runs while the stuck one spins");
        } finally {
            LibraryLoop.release();
        }
        for (int i = 0; i < 100 && kernel.evaluator().runawayCells() > 0; i++) Thread.sleep(20);
        assertEquals(0, kernel.evaluator().runawayCells(), "the stuck cell's thread ends when its loop does");
    }

    @Test
    void exitAndHaltAreRefused() {
        for (String code : new String[] {"System.exit(3);", "Runtime.getRuntime().exit(3);", "Runtime.getRuntime().halt(3);",
                "java.util.function.IntConsumer bye = System::exit;\nbye.accept(3);",
                "java.util.function.IntConsumer bye = Runtime.getRuntime()::halt;\nbye.accept(3);",
                "void quit() { try { System.exit(3); } catch (Exception e) { } }\nquit();"}) {
            CellError e = assertThrows(CellError.class, () -> kernel.run(code), code);
            assertEquals("ExitRefused", e.ename(), code + ": " + e.evalue());
            assertTrue(e.evalue().contains("(3) was refused") && e.evalue().contains("Kernel > Restart"), e.evalue());
        }
        CellError e = assertThrows(CellError.class, () -> kernel.run("int before = 1;\nSystem.exit(3);"));
        assertTrue(JupyterKernelTest.text(e).contains("line 2"), "names the line: " + JupyterKernelTest.text(e));
        assertEquals(1, kernel.run("before"), "the kernel and its variables survive");
    }
}
