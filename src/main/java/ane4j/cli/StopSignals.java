package ane4j.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Ctrl-C (SIGINT) and SIGTERM during {@code ane4j train}: the first asks the run to stop at the next step boundary
 * and write a checkpoint, the second exits at once. Before the run can stop cleanly ({@link #onStop} not set yet) a
 * signal exits at once: there is nothing to lose.
 *
 * <p>sun.misc.Signal (module jdk.unsupported) is the accessible way to replace the JVM's own INT/TERM handlers
 * (jdk.internal.misc.Signal is not exported). A shutdown hook would not do: once the JVM is shutting down, the main
 * thread cannot return normally, report where the checkpoint is and exit with its own code.
 */
@SuppressWarnings("removal")
final class StopSignals implements AutoCloseable {
    private final PrintStream out;
    private final AtomicInteger received = new AtomicInteger();
    private final List<Restore> previous = new ArrayList<>();
    private volatile Runnable onStop;
    private volatile String signal;
    private volatile int exitCode;

    private record Restore(sun.misc.Signal signal, sun.misc.SignalHandler handler) {}

    private StopSignals(PrintStream out) { this.out = out; }

    static StopSignals install(PrintStream out) {
        StopSignals s = new StopSignals(out);
        for (String name : new String[] {"INT", "TERM"}) {
            try {
                sun.misc.Signal sig = new sun.misc.Signal(name);
                s.previous.add(new Restore(sig, sun.misc.Signal.handle(sig, s::handle)));
            } catch (IllegalArgumentException e) {
                // not available here (-Xrs, or a platform without it): the JVM's default stays
            }
        }
        return s;
    }

    private void handle(sun.misc.Signal sig) {
        String name = sig.getName().equals("INT") ? "Ctrl-C" : "SIG" + sig.getName();
        Runnable stop = onStop;
        if (received.incrementAndGet() > 1 || stop == null) {
            out.println();
            out.println("[train] " + name + (stop == null ? ": stopping" : " again: aborting at once (no checkpoint of the steps since the last one)"));
            out.flush();
            System.exit(128 + sig.getNumber());
        }
        signal = name;
        exitCode = 128 + sig.getNumber();
        out.println();
        out.println("[train] " + name + ": stopping after the current step and writing a checkpoint (" + name + " again to abort at once)");
        out.flush();
        stop.run();
    }

    /** What stops the run cleanly; from now on the first signal runs it. */
    void onStop(Runnable r) { this.onStop = r; }

    /** "Ctrl-C" or "SIGTERM" when a stop was asked for, else null. */
    String received() { return signal; }

    /** 130 after SIGINT, 143 after SIGTERM (128 + the signal number, as a shell reports it). */
    int exitCode() { return exitCode; }

    /** Puts the previous handlers back (tests run many commands in one JVM). */
    @Override
    public void close() {
        for (Restore r : previous) sun.misc.Signal.handle(r.signal(), r.handler());
    }
}
