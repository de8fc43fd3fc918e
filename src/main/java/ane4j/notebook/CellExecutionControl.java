package ane4j.notebook;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import jdk.jshell.execution.DirectExecutionControl;
import jdk.jshell.spi.ExecutionControl;
import jdk.jshell.spi.ExecutionControlProvider;
import jdk.jshell.spi.ExecutionEnv;

/**
 * Runs JShell snippets in this JVM on a worker thread, so the kernel keeps the raw result objects (for rich display)
 * and can stop a running cell. JShell's "local" engine is avoided on purpose: on JDK 25 its stop-check
 * instrumentation breaks code that merges snippet class types (JDK-8366926); {@link CellInstrumenter} weaves the same
 * checks with the cells' own class hierarchy, and refuses System.exit.
 * <p>
 * An interrupt asks the cell's thread to stop (its next stop check throws, a blocking call is interrupted). A cell
 * stuck where no check runs (a loop inside library code) gets {@link #graceMillis} to stop; then the cell reports that
 * it is still running and the kernel takes a new thread for the next cell.
 */
final class CellExecutionControl extends DirectExecutionControl {

    /** Pseudo exception class names JShell reports when a cell was interrupted, or did not stop when asked. */
    static final String INTERRUPTED = "ane4j.notebook.CellInterrupted", STILL_RUNNING = "ane4j.notebook.CellStillRunning";

    private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "ane4j-cell");
        t.setDaemon(true);
        return t;
    });
    private final Set<Cell> running = ConcurrentHashMap.newKeySet();
    private final Set<Cell> runaway = ConcurrentHashMap.newKeySet();
    private final Map<String, Object> results = new ConcurrentHashMap<>();
    private final CellInstrumenter instrumenter = new CellInstrumenter(() -> this.cellLoader);
    private final long graceMillis = Long.getLong("ane4j.notebook.interruptGraceMillis", 2000);
    private volatile ClassLoader cellLoader;
    private volatile boolean cellInterrupted;

    /** One cell's run on a worker thread, and whether (and since when) it was asked to stop. */
    private static final class Cell {
        Thread thread;
        boolean done;
        long stopAt;

        synchronized boolean start() {
            thread = Thread.currentThread();
            return stopAt == 0;
        }

        synchronized void finish() {
            done = true;
            if (thread != null) CellGuard.release(thread);
        }

        synchronized void stop() {
            if (done) return;
            if (stopAt == 0) stopAt = System.nanoTime();
            if (thread != null) {
                CellGuard.stop(thread);
                thread.interrupt();
            }
        }

        synchronized long stopAt() {
            return stopAt;
        }

        /** Where the thread is, for the message: the innermost frame. */
        synchronized String where() {
            StackTraceElement[] st = thread == null ? new StackTraceElement[0] : thread.getStackTrace();
            return st.length == 0 ? "" : " (at " + st[0] + ")";
        }
    }

    @Override
    public void load(ClassBytecodes[] cbcs) throws ClassInstallException, NotImplementedException, EngineTerminationException {
        byte[][] in = new byte[cbcs.length][];
        for (int i = 0; i < cbcs.length; i++) in[i] = cbcs[i].bytecodes();
        byte[][] out = instrumenter.instrument(in);
        ClassBytecodes[] woven = new ClassBytecodes[cbcs.length];
        for (int i = 0; i < cbcs.length; i++) woven[i] = new ClassBytecodes(cbcs[i].name(), out[i]);
        super.load(woven);
        if (cellLoader == null && cbcs.length > 0) {
            try {
                cellLoader = findClass(cbcs[0].name()).getClassLoader();
            } catch (ClassNotFoundException ignored) {
                // not loaded yet: the cells' loader is learnt on a later load
            }
        }
    }

    /** A new cell begins: an interrupt from now on stops it, even one that arrives while it still compiles. */
    void beginCell() {
        cellInterrupted = false;
    }

    @Override
    protected String invoke(Method doitMethod) throws Exception {
        if (cellInterrupted) throw interrupted();
        Cell cell = new Cell();
        Future<Object> run = executor.submit(() -> {
            try {
                if (!cell.start()) throw new CellGuard.CellStopped();
                return doitMethod.invoke(null);
            } finally {
                cell.finish();
                runaway.remove(cell);
            }
        });
        running.add(cell);
        if (cellInterrupted) cell.stop();
        try {
            Object value = await(cell, run);
            if (cell.stopAt() != 0) throw interrupted();
            String key = UUID.randomUUID().toString();
            results.put(key, value == null ? NULL : value);
            return key;
        } finally {
            running.remove(cell);
        }
    }

    private Object await(Cell cell, Future<Object> run) throws Exception {
        while (true) {
            try {
                return run.get(50, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                long stopAt = cell.stopAt();
                if (stopAt != 0 && System.nanoTime() - stopAt > TimeUnit.MILLISECONDS.toNanos(graceMillis)) {
                    runaway.add(cell);
                    throw new ExecutionControl.UserException("the cell's code does not respond to interrupts and is still running"
                            + " on one core" + cell.where() + ": restart the kernel (Kernel > Restart) to stop it; later cells run meanwhile",
                            STILL_RUNNING, new StackTraceElement[0]);
                }
            } catch (InterruptedException e) {
                cell.stop();
            } catch (ExecutionException e) {
                if (cell.stopAt() != 0) throw interrupted();
                Throwable cause = e.getCause();
                if (cause instanceof InvocationTargetException ite) throw ite;
                throw new InvocationTargetException(cause);
            }
        }
    }

    private static ExecutionControl.UserException interrupted() {
        return new ExecutionControl.UserException("the cell was interrupted", INTERRUPTED, new StackTraceElement[0]);
    }

    /** The object a snippet returned, by the key that stood in for its value string; null if none. */
    Object takeResult(String key) {
        Object v = key == null ? null : results.remove(key);
        return v == NULL ? null : v;
    }

    boolean hasResult(String key) {
        return key != null && results.containsKey(key);
    }

    void clearResults() {
        results.clear();
    }

    /** Asks every running cell to stop: its next stop check throws, a blocking call is interrupted. */
    void interruptAll() {
        cellInterrupted = true;
        running.forEach(Cell::stop);
    }

    /** True while a snippet runs. */
    boolean busy() {
        return !running.isEmpty();
    }

    void warmUp() {
        instrumenter.warmUp();
    }

    /** Interrupted cells whose threads are still running (they did not reach a stop check). */
    int runawayCells() {
        return runaway.size();
    }

    /** Classes of cells loaded without stop checks (they could not be rewritten). */
    int uninstrumentedClasses() {
        return instrumenter.unchanged();
    }

    @Override
    public void close() {
        executor.shutdownNow();
        super.close();
    }

    private static final Object NULL = new Object();

    /** Hands one control instance to JShell and keeps a reference for the evaluator. */
    static final class Provider implements ExecutionControlProvider {
        private final CellExecutionControl control = new CellExecutionControl();

        CellExecutionControl control() {
            return control;
        }

        @Override
        public String name() {
            return "ane4j-cell";
        }

        @Override
        public ExecutionControl generate(ExecutionEnv env, Map<String, String> parameters) {
            return control;
        }
    }
}
