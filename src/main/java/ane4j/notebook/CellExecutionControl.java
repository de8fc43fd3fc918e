package ane4j.notebook;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import jdk.jshell.execution.DirectExecutionControl;
import jdk.jshell.spi.ExecutionControl;
import jdk.jshell.spi.ExecutionControlProvider;
import jdk.jshell.spi.ExecutionEnv;

/**
 * Runs JShell snippets in this JVM on a worker thread, so the kernel keeps the raw result objects (for rich display)
 * and can interrupt a running cell. JShell's "local" engine is avoided on purpose: on JDK 25 its stop-check
 * instrumentation breaks code that merges snippet class types (JDK-8366926).
 */
final class CellExecutionControl extends DirectExecutionControl {

    /** Pseudo exception class name JShell reports when a cell was interrupted. */
    static final String INTERRUPTED = "ane4j.notebook.CellInterrupted";

    private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "ane4j-cell");
        t.setDaemon(true);
        return t;
    });
    private final Map<String, Future<?>> running = new ConcurrentHashMap<>();
    private final Map<String, Object> results = new ConcurrentHashMap<>();

    @Override
    protected String invoke(Method doitMethod) throws Exception {
        String key = UUID.randomUUID().toString();
        Future<Object> run = executor.submit(() -> doitMethod.invoke(null));
        running.put(key, run);
        try {
            Object value = run.get();
            results.put(key, value == null ? NULL : value);
            return key;
        } catch (CancellationException | InterruptedException e) {
            throw new ExecutionControl.UserException("the cell was interrupted", INTERRUPTED, new StackTraceElement[0]);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof InvocationTargetException ite) throw ite;
            throw new InvocationTargetException(cause);
        } finally {
            running.remove(key);
        }
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

    /** Cancels every running cell. Code that ignores Thread.interrupt keeps running in the background. */
    void interruptAll() {
        running.values().forEach(f -> f.cancel(true));
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
