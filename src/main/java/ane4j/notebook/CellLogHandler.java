package ane4j.notebook;

import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * Library log lines in the running cell: INFO and below on stdout (they are news, not errors: which backend and BLAS
 * were chosen, a benchmark's progress), WARNING and above on stderr. The streams are looked up per line, so each
 * line goes to the cell that is running when it is logged.
 */
final class CellLogHandler extends Handler {
    private final Formatter format = new SimpleFormatter();

    /** Replaces the root logger's handlers (the JDK's ConsoleHandler writes everything to stderr); one line a record. */
    static void install() {
        if (System.getProperty("java.util.logging.SimpleFormatter.format") == null)
            System.setProperty("java.util.logging.SimpleFormatter.format", "%4$s: %5$s%6$s%n");
        Logger root = LogManager.getLogManager().getLogger("");
        for (Handler h : root.getHandlers()) root.removeHandler(h);
        root.addHandler(new CellLogHandler());
    }

    @Override
    public void publish(LogRecord r) {
        if (!isLoggable(r)) return;
        String line = format.format(r);
        if (r.getLevel().intValue() >= Level.WARNING.intValue()) System.err.print(line);
        else System.out.print(line);
    }

    @Override
    public void flush() {
        System.out.flush();
        System.err.flush();
    }

    @Override
    public void close() {}
}
