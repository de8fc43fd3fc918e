package ane4j.notebook;

import ane4j.session.Session;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

/** {@code %ane}: what this notebook runs on — JDK, OS, chip, backend, dialect, compile budget, worker, kernels, training. */
final class AneMagics {

    @Magic(value = "ane", help = "%ane — ane4j version, JDK, OS, chip, backend, MIL dialect, compile budget used/left, worker state, live kernels, training run")
    Table ane(MagicCall call) {
        Session.Status s = Ane.status();
        StringColumn item = StringColumn.create("item");
        StringColumn value = StringColumn.create("value");
        row(item, value, "ane4j", version());
        row(item, value, "JDK", Runtime.version() + " (" + System.getProperty("java.vendor") + ")");
        row(item, value, "OS", System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
        row(item, value, "chip", s.chip());
        row(item, value, "backend", s.backend() + (System.getProperty("ane4j.backend") == null ? " (automatic; -Dane4j.backend=ane|ref to choose)" : ""));
        row(item, value, "MIL dialect", s.dialect());
        row(item, value, "compile budget", s.compileBudget() == Long.MAX_VALUE
                ? s.compiles() + " used, unlimited"
                : s.compiles() + " used of " + s.compileBudget() + ", " + s.compilesLeft() + " left");
        row(item, value, "worker", s.worker());
        row(item, value, "live kernels", Integer.toString(Ane.liveKernels()));
        TrainingRun run = TrainingRun.current();
        row(item, value, "training", run == null ? "none" : run.progressLine() + " · " + run.runDir());
        return Table.create("ane4j", item, value);
    }

    private static void row(StringColumn item, StringColumn value, String k, String v) {
        item.append(k);
        value.append(v);
    }

    static String version() { return ane4j.run.Version.ane4j(); }
}
