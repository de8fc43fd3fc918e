package ane4j.run;

import ane4j.backend.Backend;
import ane4j.backend.Backends;
import ane4j.run.KeyTable.Key;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One run, described once for every face (the CLI's {@code --flags}, a {@code %%train} cell, {@code Ane.train(Map)},
 * JShell, {@code bench step}, a run record): the training options and model settings ({@link TrainOptions}), and where
 * and how it runs: compile budget, in process or in a supervised worker, the worker's heap. {@link #KEYS} is the one
 * table of keys: adding a run key is one line there (training keys: one line in {@link TrainOptions#KEYS}).
 *
 * @param compileBudget compiles per backend process before it is replaced (null: the backend's default)
 * @param inProcess     true: train in this JVM (the backend is replaced in process at the budget); false: a supervised worker JVM
 * @param heap          the worker JVM's {@code -Xmx}, or null
 */
public record RunSpec(TrainOptions train, Long compileBudget, boolean inProcess, String heap) {

    /** Every key of a run: the training keys, then where and how it runs. */
    public static final KeyTable KEYS = TrainOptions.KEYS.plus("train", List.of(
            Key.longInt("compileBudget", 1, "", "compiles per backend process before it is replaced (default: 100 on the ANE, unlimited on ref)"),
            Key.bool("inProcess", "train in this JVM instead of a supervised worker JVM"),
            Key.heap("heap", "the worker JVM's -Xmx, e.g. 8g")));

    static final List<String> RUN_KEYS = List.of("compileBudget", "inProcess", "heap");

    /** From key/value pairs in any spelling ({@code weight-decay}, {@code weightDecay}, {@code model.dim}) over the defaults. */
    public static RunSpec of(Map<String, String> given) {
        Map<String, String> all = KEYS.resolve(given);
        Map<String, String> train = new LinkedHashMap<>(all);
        RUN_KEYS.forEach(train::remove);
        String budget = all.get("compileBudget"), heap = all.get("heap");
        return new RunSpec(TrainOptions.of(train), budget.isEmpty() ? null : Long.parseLong(budget), Boolean.parseBoolean(all.get("inProcess")),
                heap.isEmpty() ? null : heap);
    }

    /** From {@code key = value} text (see {@link #parseText}). */
    public static RunSpec fromText(String text) {
        return of(parseText(text));
    }

    /**
     * {@code key = value} pairs, one per line or separated by {@code ;}; blank lines and {@code #} comments are skipped.
     * The keys are left as written (the table's normaliser reads them).
     */
    public static Map<String, String> parseText(String text) {
        Map<String, String> m = new LinkedHashMap<>();
        int n = 0;
        for (String raw : text.split("[\\n;]")) {
            n++;
            String line = raw.strip();
            int hash = line.indexOf('#');
            if (hash >= 0) line = line.substring(0, hash).strip();
            if (line.isEmpty()) continue;
            int eq = line.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("[train] line " + n + " '" + raw.strip() + "' is not 'key = value' (e.g. steps = 60)");
            m.put(line.substring(0, eq).strip(), line.substring(eq + 1).strip());
        }
        return m;
    }

    /**
     * A recorded run's keys ({@code run.json}'s {@code "options"}: every resolved key → its value as text) with
     * {@code given} over them; the record's run folder and resume switches are left out (a rerun is a new run unless
     * {@code given} says otherwise), and an automatic backend becomes the one the run had ({@code "machine"}).
     */
    public static Map<String, String> overRecord(java.nio.file.Path runJson, Map<String, String> given) {
        String text;
        try {
            text = java.nio.file.Files.readString(runJson);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("[run] cannot read " + runJson + ": " + RunFolder.reason(e) + "; give the run.json of a run folder");
        }
        Object options, machine;
        try {
            Object root = ane4j.model.Json.parse(text);
            options = root instanceof Map<?, ?> top ? top.get("options") : null;
            machine = root instanceof Map<?, ?> top ? top.get("machine") : null;
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("[run] " + runJson + " is not a run record (" + e.getMessage() + "); give the run.json of a run folder");
        }
        if (!(options instanceof Map<?, ?> recorded))
            throw new IllegalArgumentException("[run] " + runJson + " has no \"options\" object; give the run.json of a run folder");
        Map<String, String> m = new LinkedHashMap<>();
        recorded.forEach((k, v) -> m.put(String.valueOf(k), v == null ? "" : String.valueOf(v)));
        for (String k : List.of("runDir", "resume", "restartFromScratch", "override")) m.remove(k);
        // a run on the automatic backend reruns on the one it ran on (the ANE and the reference backend differ in the last bits)
        if ("".equals(m.get("backend")) && machine instanceof Map<?, ?> mm && mm.get("backend") instanceof String ran && TrainOptions.BACKENDS.contains(ran))
            m.put("backend", ran);
        for (var e : given.entrySet()) {
            String k = KEYS.canonical(e.getKey());
            m.remove(k == null ? e.getKey() : k);
            m.put(e.getKey(), e.getValue());
        }
        return m;
    }

    /** Every key → its value as text (what {@link #of} reads back to an equal description; the run record's "options"). */
    public Map<String, String> toMap() {
        Map<String, String> m = new LinkedHashMap<>(train.toMap());
        m.put("compileBudget", compileBudget == null ? "" : compileBudget.toString());
        m.put("inProcess", Boolean.toString(inProcess));
        m.put("heap", heap == null ? "" : heap);
        return m;
    }

    /** Where and how it runs ({@link #RUN_KEYS} → value as text): what run.json records beside the training keys. */
    public Map<String, String> placement() {
        Map<String, String> m = new LinkedHashMap<>(toMap());
        m.keySet().retainAll(RUN_KEYS);
        return m;
    }

    /** The same description with one key (any spelling) set to {@code value}. */
    public RunSpec with(String key, String value) {
        Map<String, String> m = toMap();
        String k = KEYS.canonical(key);
        if (k == null) throw KEYS.unknown(key);
        m.put(k, value);
        return of(m);
    }

    /** The model, as the run dir's name and the first lines show it: the graph's name, else the init file, else the preset or config file. */
    public String modelName() {
        if (train.graph() != null) return train.graph().getFileName().toString().replaceFirst("\\.mil$", "");   // a graph run: the graph's
        return train.init() != null ? train.init().toString() : train.model();
    }

    // ---- the backend

    /** What the backend of this run must be: the chosen one (or automatic), its storage, the compile budget. */
    public Backends.Settings backendSettings() {
        return new Backends.Settings(train.backend(), train.storage().equals("fp32"), compileBudget);
    }

    /** A new backend in this JVM for the run (no system property is read for the budget or written). */
    public Backend newBackend() {
        return Backends.create(backendSettings()).backend();
    }

    /** The backend a run of these training options gets, with the backend's default compile budget (ane4j eval). */
    public static Backend newBackend(TrainOptions o) {
        return new RunSpec(o, null, true, null).newBackend();
    }

    /** {@code --help}: one line per key. */
    public static String usage() {
        return KEYS.usage();
    }
}
