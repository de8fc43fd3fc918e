package ane4j.run;

import ane4j.model.ModelConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code run.txt}: the run's current settings, model and environment, and a {@code [history]} of every start, resume
 * and settings change with its time. A resume whose optimiser or data settings differ from the record is refused
 * unless {@code override} is set; then the change is added to the history instead of silently replacing the record.
 */
public final class RunRecord {
    /** The settings a resume must keep (they change the numbers); steps, backend, checkpointing and paths may change. */
    static final List<String> SETTINGS = List.of("data", "dataDtype", "valData", "valFraction", "lr", "warmup", "accum", "clip", "weightDecay", "seed", "lossScaling",
            "lossScale", "storage", "weights", "attention");

    private final Path file;
    private final Map<String, String> settings;
    private final List<String> history;
    private String change = "";

    private RunRecord(Path file, Map<String, String> settings, List<String> history) {
        this.file = file;
        this.settings = settings;
        this.history = history;
    }

    public static RunRecord read(Path runDir) {
        Path file = runDir.resolve("run.txt");
        Map<String, String> settings = new LinkedHashMap<>();
        List<String> history = new ArrayList<>();
        List<String> lines;
        try {
            lines = Files.readAllLines(file);
        } catch (NoSuchFileException e) {
            return new RunRecord(file, settings, history);
        } catch (IOException e) {
            throw new UncheckedIOException("[run] cannot read " + file + ": " + RunFolder.reason(e), e);
        }
        String section = "";
        for (String line : lines) {
            if (line.startsWith("[") && line.endsWith("]")) section = line;
            else if (section.isEmpty()) {
                int eq = line.indexOf(" = ");
                if (eq > 0) settings.put(line.substring(0, eq), line.substring(eq + 3));
            } else if (section.equals("[history]") && !line.isBlank()) history.add(line);
        }
        return new RunRecord(file, settings, history);
    }

    private static Map<String, String> settingsOf(TrainOptions o) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String line : o.describe().split("\n")) {
            int eq = line.indexOf(" = ");
            m.put(line.substring(0, eq), line.substring(eq + 3));
        }
        m.put("lossScale", Float.toString(effectiveLossScale(o.lossScale())));
        return m;
    }

    /** The scale training starts at: 0 means {@link TrainOptions#DEFAULT_LOSS_SCALE}. */
    static float effectiveLossScale(float given) { return given > 0 ? given : TrainOptions.DEFAULT_LOSS_SCALE; }

    /** A recorded value as it is compared: records before the effective loss scale wrote 0.0 for the default. */
    private static String recorded(String key, String value) {
        if (key.equals("lossScale")) {
            try {
                return Float.toString(effectiveLossScale(Float.parseFloat(value)));
            } catch (NumberFormatException e) {
                return value;
            }
        }
        return value;
    }

    /**
     * Every run key → the string {@link TrainOptions#of} reads back to the same options (null → ""), with the effective
     * loss scale and {@code resume} true only when this start resumed from a checkpoint; then {@code placement}, where and
     * how the run layer ran it (compileBudget, inProcess, heap), which the trainer does not see otherwise.
     */
    static Map<String, String> options(TrainOptions o, boolean resumed, Map<String, String> placement) {
        Map<String, String> m = new LinkedHashMap<>(o.toMap());   // every key of the table, canonical
        m.put("lossScale", Float.toString(effectiveLossScale(o.lossScale())));
        m.put("resume", Boolean.toString(resumed));
        m.putAll(placement);
        return m;
    }

    /** Refuses a resume with other optimiser or data settings than the record's, unless {@code o.override()}. */
    public void checkSettings(TrainOptions o, java.util.function.Consumer<String> log) {
        Map<String, String> now = settingsOf(o);
        List<String> diffs = new ArrayList<>();
        for (String k : SETTINGS)
            if (settings.containsKey(k) && !recorded(k, settings.get(k)).equals(now.get(k))) diffs.add(k + " " + settings.get(k) + " → " + now.get(k));
        if (diffs.isEmpty()) return;
        String what = String.join(", ", diffs);
        if (!o.override())
            throw new IllegalArgumentException("[train] this resume changes settings the run in " + file.getParent() + " was trained with: " + what
                    + "; pass --override to continue with the new ones (run.txt records the change), or resume with the recorded ones");
        change = " with --override: " + what;
        log.accept("[train] --override: continuing with " + what + " (recorded in " + file + ")");
    }

    /**
     * Writes the record: current settings (the effective loss scale; {@code resume} as this start did), model and
     * environment, the history so far and {@code started}'s line; and run.json beside it ({@link RunJson}). {@code placement}:
     * the run layer's keys of where and how it runs, written after the training keys in both.
     */
    public void write(TrainOptions o, ModelConfig config, String runId, String backend, String chip, boolean resumed, String started, List<RunJson.Input> inputs,
               Map<String, String> placement) {
        write(o, config.toFileText(), runId, backend, chip, resumed, started, inputs, placement);
    }

    /**
     * {@link #write(TrainOptions, ModelConfig, String, String, String, boolean, String, List, Map)} with the model as its
     * {@code key = value} lines: a preset's config, or what a graph run trains ({@code ane4j.train.GraphLayout}).
     */
    public void write(TrainOptions o, String modelText, String runId, String backend, String chip, boolean resumed, String started, List<RunJson.Input> inputs,
               Map<String, String> placement) {
        List<String> h = new ArrayList<>(history);
        h.add(Instant.now().truncatedTo(ChronoUnit.SECONDS) + "  " + started + change + " (backend " + backend + ", " + o.steps() + " steps)");
        StringBuilder settingsText = new StringBuilder();
        settingsOf(o).forEach((k, v) -> settingsText.append(k).append(" = ").append(k.equals("resume") ? Boolean.toString(resumed) : v).append('\n'));
        placement.forEach((k, v) -> settingsText.append(k).append(" = ").append(v).append('\n'));
        String text = "# ane4j training run " + runId + "\n" + settingsText + "[model]\n" + modelText
                + "\n[environment]\nbackend = " + backend + "\njava = " + System.getProperty("java.version")
                + "\nos = " + System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch")
                + "\nane4j = " + Version.ane4j() + "\n(the full record: run.json)\n\n[history]\n" + String.join("\n", h) + "\n";
        Path json = file.resolveSibling("run.json");
        try {
            Files.createDirectories(file.getParent());
            RunFolder.writeAtomically(file, text);
            RunFolder.writeAtomically(json, RunJson.document(options(o, resumed, placement), modelText, runId, backend, chip, inputs, RunJson.previousData(json)));
        } catch (IOException e) {
            throw new UncheckedIOException("[run] cannot write " + file + " and run.json: " + RunFolder.reason(e), e);
        }
        history.clear();
        history.addAll(h);
        change = "";
    }
}
