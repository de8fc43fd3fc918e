package ane4j.run;

import ane4j.model.Json;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * A run's {@code metrics.jsonl}: one JSON object per line, appended after every step; the steps after which validation
 * ran also carry {@code valLoss} and {@code valMs} (lines without them, or with null, read as not validated). The reader is tolerant: a line
 * that is not a step record (a torn last line after a crash, an edited value) is skipped with a one-line warning naming
 * the line. A resume {@link #truncate}s the file to the checkpoint's step, so the steps it runs again appear once.
 */
public final class MetricsLog {
    /** A read line: its step (-1 for a record without one) and its text. */
    private record Line(long step, String text, StepMetrics metrics) {}

    private final Path file;

    public MetricsLog(Path file) { this.file = file; }

    public Path file() { return file; }

    /** Appends one step's line. */
    public void append(StepMetrics m) {
        try {
            Files.writeString(file, m.json() + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("[metrics] cannot append to " + file + ": " + RunFolder.reason(e), e);
        }
    }

    /** The step records of {@code file}, one per step (the last line of a step wins), in step order. */
    public static List<StepMetrics> read(Path file, long steps, Consumer<String> warn) {
        List<StepMetrics> out = new ArrayList<>();
        for (Line l : lines(file, steps, warn).values()) if (l.metrics() != null) out.add(l.metrics());
        return out;
    }

    /**
     * Keeps the lines of steps before {@code upTo} (and records without a step), drops the rest and the unreadable
     * lines, and rewrites the file atomically; returns the kept step records.
     */
    public List<StepMetrics> truncate(long upTo, long steps, Consumer<String> warn) {
        if (!Files.exists(file)) return new ArrayList<>();
        TreeMap<Long, Line> all = lines(file, steps, warn);
        List<StepMetrics> kept = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        for (Line l : all.values()) {
            if (l.step() >= upTo) continue;
            text.append(l.text()).append('\n');
            if (l.metrics() != null) kept.add(l.metrics());
        }
        try {
            RunFolder.writeAtomically(file, text.toString());
        } catch (IOException e) {
            throw new UncheckedIOException("[metrics] cannot rewrite " + file + " to step " + upTo + ": " + RunFolder.reason(e), e);
        }
        return kept;
    }

    /** Lines by step (records without a step get negative keys, in file order); bad lines are reported and left out. */
    private static TreeMap<Long, Line> lines(Path file, long steps, Consumer<String> warn) {
        TreeMap<Long, Line> out = new TreeMap<>();
        long noStep = Long.MIN_VALUE, number = 0;
        // malformed UTF-8 reads as U+FFFD (InputStreamReader replaces), so such a line fails as JSON, not the reader
        try (BufferedReader r = new BufferedReader(new InputStreamReader(Files.newInputStream(file), StandardCharsets.UTF_8))) {
            String text;
            while ((text = r.readLine()) != null) {
                number++;
                if (text.isBlank()) continue;
                Line l;
                try {
                    l = parse(text, steps);
                } catch (RuntimeException e) {
                    String why = String.valueOf(e.getMessage());
                    warn.accept("[metrics] " + file + " line " + number + ": " + (why.length() > 200 ? why.substring(0, 200) + "…" : why) + "; line skipped");
                    continue;
                }
                if (l.step() < 0) out.put(noStep++, l);
                else out.put(l.step(), l);
            }
        } catch (NoSuchFileException e) {
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException("[metrics] cannot read " + file + ": " + RunFolder.reason(e), e);
        }
        return out;
    }

    /** One line: a step record (type "step" or none) or another record kept as it is. */
    private static Line parse(String text, long steps) {
        Object root;
        try {
            root = Json.parse(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("not JSON (" + e.getMessage() + ")");
        }
        if (!(root instanceof Map<?, ?> m)) throw new IllegalArgumentException("not a JSON object");
        Object type = m.get("type"), step = m.get("step");
        boolean stepRecord = type == null || "step".equals(type);
        if (step == null && !stepRecord) return new Line(-1, text, null);
        if (!(step instanceof Long s) || s < 0) throw new IllegalArgumentException("\"step\" is " + (step == null ? "missing" : "not a step number: " + step));
        if (!stepRecord) return new Line(s, text, null);
        Map<String, Double> phases = new java.util.LinkedHashMap<>();
        for (var e : m.entrySet())
            if (e.getKey() instanceof String k && k.startsWith("t_") && e.getValue() instanceof Number n) phases.put(k.substring(2), n.doubleValue());
        return new Line(s, text, new StepMetrics(s, steps, number(m, "loss"), number(m, "lr"), number(m, "lossScale"), number(m, "gradNorm"),
                Boolean.TRUE.equals(m.get("updated")), Boolean.TRUE.equals(m.get("skipped")), number(m, "ms"), number(m, "tokensPerSecond"), phases,
                count(m, "stagedActivationBytes"), count(m, "stagedWeightBytes"), number(m, "valLoss"), m.get("valMs") instanceof Number n ? n.doubleValue() : 0));
    }

    /** A byte count; missing (lines written before it existed) reads as 0. */
    private static long count(Map<?, ?> m, String key) {
        Object v = m.get(key);
        if (v == null) return 0;
        if (v instanceof Long n && n >= 0) return n;
        throw new IllegalArgumentException("\"" + key + "\" is not a byte count");
    }

    /** A number field; null or missing reads as NaN (the writer writes non-finite values as null). */
    private static float number(Map<?, ?> m, String key) {
        Object v = m.get(key);
        if (v instanceof Number n) return n.floatValue();
        if (v == null) return Float.NaN;
        throw new IllegalArgumentException("\"" + key + "\" is not a number");
    }
}
