package ane4j.notebook;

import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

/** {@code %ane}: what this notebook runs on (JDK, OS, backend, worker). Grows with the backend and worker. */
final class AneMagics {

    @Magic(value = "ane", help = "%ane — ane4j version, JDK, OS/chip, backend (-Dane4j.backend), worker state")
    Table ane(MagicCall call) {
        StringColumn item = StringColumn.create("item");
        StringColumn value = StringColumn.create("value");
        row(item, value, "ane4j", version());
        row(item, value, "JDK", Runtime.version() + " (" + System.getProperty("java.vendor") + ")");
        row(item, value, "OS", System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
        row(item, value, "backend", System.getProperty("ane4j.backend", "auto (ane on Apple silicon, else ref)"));
        row(item, value, "worker", "not started");
        return Table.create("ane4j", item, value);
    }

    private static void row(StringColumn item, StringColumn value, String k, String v) {
        item.append(k);
        value.append(v);
    }

    static String version() {
        String v = AneMagics.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }
}
