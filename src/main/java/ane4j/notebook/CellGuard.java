package ane4j.notebook;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What instrumented cell code calls ({@link CellInstrumenter} weaves the calls in; nothing else should): a stop check
 * at every method entry and loop back-edge, and refusals in place of {@code System.exit}, {@code Runtime.exit} and
 * {@code Runtime.halt}. Public only because the cells' classes live in JShell's class loader.
 */
public final class CellGuard {
    private static final Set<Thread> STOPPING = ConcurrentHashMap.newKeySet();
    private static volatile boolean anyStopping;

    private CellGuard() {}

    /** Throws {@link CellStopped} when the kernel asked this thread to stop; one volatile read otherwise. */
    public static void check() {
        if (anyStopping && STOPPING.contains(Thread.currentThread())) throw new CellStopped();
    }

    /** Replaces {@code System.exit(status)} in cell code. */
    public static void exit(int status) {
        throw new ExitRefused("System.exit(" + status + ")");
    }

    /** Replaces {@code runtime.exit(status)} in cell code. */
    public static void exit(Runtime runtime, int status) {
        throw new ExitRefused("Runtime.exit(" + status + ")");
    }

    /** Replaces {@code runtime.halt(status)} in cell code. */
    public static void halt(Runtime runtime, int status) {
        throw new ExitRefused("Runtime.halt(" + status + ")");
    }

    /** From now on every stop check on {@code t} throws, until {@link #release}. */
    static void stop(Thread t) {
        STOPPING.add(t);
        anyStopping = true;
    }

    static void release(Thread t) {
        STOPPING.remove(t);
        anyStopping = !STOPPING.isEmpty();
    }

    /**
     * Thrown into a cell's thread at its next stop check after an interrupt. An Error, like the ThreadDeath of
     * {@code Thread.stop}, so {@code catch (Exception e)} does not swallow it; code that catches Throwable inside a
     * loop meets the next check at the loop's back-edge.
     */
    public static final class CellStopped extends Error {
        CellStopped() {
            super("the cell was stopped", null, false, false);
        }
    }

    /** A cell called System.exit, Runtime.exit or Runtime.halt: refused, because it would end the kernel. */
    public static final class ExitRefused extends Error {
        ExitRefused(String call) {
            super("[notebook] " + call + " was refused: it would end the kernel and lose every variable of the notebook;"
                    + " to end the cell return or throw, to restart the kernel use Kernel > Restart", null, false, true);
        }
    }
}
