package ane4j.notebook;

import ane4j.backend.TensorBuffer;
import ane4j.mil.Program;
import ane4j.run.RunSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * {@code %%fit [NAME]}: trains a graph as {@code %%train} trains a preset, the cell holding the same {@code key = value}
 * lines; {@code graph}, {@code data}, {@code valData} and {@code init} name notebook variables (a {@code Program}, maps
 * of input → {@code TensorBuffer} samples, a map of parameter → {@code float[]}) or files (a .mil file, folders of
 * NAME.npy). The run is an ordinary run of the session ({@link Ane#fit}); NAME binds its {@link Fit}.
 */
final class FitMagics {

    @Magic(value = "fit", cell = true, help = "%%fit [NAME] — train a graph: the cell holds key = value lines as %%train's, with graph = a Program variable or FILE.mil, "
            + "data = a Map<String, TensorBuffer> variable (input → samples along the first axis) or a folder of NAME.npy, optional valData, init "
            + "(Map<String, float[]> or folder), loss, steps, lr …; shows the live progress line and loss plot; NAME binds the Fit")
    Object fitCell(MagicCall call) {
        RunCell cell = RunCell.read(call, "fit", false);
        if (cell.help()) return help();
        String name = cell.name();
        Fit fit;
        try {
            Map<String, String> keys = RunSpec.parseText(cell.settings()), rest = new LinkedHashMap<>();
            Map<String, Object> objects = new LinkedHashMap<>();
            for (var e : keys.entrySet()) {
                String k = RunSpec.KEYS.canonical(e.getKey());
                if (k != null && FitFiles.OBJECT_KEYS.contains(k) && isVariable(e.getValue())) objects.put(k, variable(call, e.getValue(), k));
                else rest.put(e.getKey(), e.getValue());
            }
            if (objects.isEmpty()) {
                // files only: an ordinary graph run
                TrainingRun run = TrainingRun.start(Ane.session(), Ane.runSpec(rest));
                run.followInNotebook(call.kernel());
                fit = new Fit(run);
            } else {
                if (!(objects.get("graph") instanceof Program graph))
                    throw new IllegalArgumentException("[%%fit] graph = a Program variable is needed with data, valData or init given as variables (or give files for all of them)");
                for (String k : FitFiles.OBJECT_KEYS)
                    if (keys.keySet().stream().map(RunSpec.KEYS::canonical).anyMatch(k::equals) && !objects.containsKey(k))
                        throw new IllegalArgumentException("[%%fit] " + k + " is a file while graph is a variable; give " + k + " as a notebook variable too");
                TrainingRun run = FitFiles.start(Ane.session(), graph, samples(objects.get("data"), "data"), samples(objects.get("valData"), "valData"),
                        init(objects.get("init")), rest);
                run.followInNotebook(call.kernel());
                fit = new Fit(run);
            }
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new MagicException(e.getMessage(), e);
        }
        if (name != null) call.bind(name, Fit.class, fit);
        return fit.run().summary();
    }

    /** The cell's form, then the keys of the run table (those of %%train). */
    static String help() {
        String keys = TrainMagics.help();
        return """
                %%fit [NAME] [key=value …]
                  trains a graph as %%train trains a preset: the cell holds key = value lines (or ; between them, # comments);
                  graph = a Program variable or FILE.mil; data = a Map<String, TensorBuffer> variable (each data input → its
                  samples along the first axis) or a folder of NAME.npy; valData likewise (default: the last valFraction of
                  data); init = a Map<String, float[]> variable or a folder of NAME.npy (parameters left out start from seed);
                  loss, params and the run keys below. Shows the live progress line and loss plot; NAME binds the Fit
                  (its run(), params(), apply(predictGraph, data)); %train status | stop | resume | plot serve the run
                """ + keys.substring(keys.indexOf("keys (default):"));
    }

    /** A Java identifier that is not a file or folder here: a notebook variable. */
    private static boolean isVariable(String v) {
        return v.matches("[A-Za-z_$][A-Za-z0-9_$]*") && !Files.exists(Path.of(v));
    }

    private static Object variable(MagicCall call, String name, String key) {
        Object v;
        try {
            v = call.eval(name);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("[%%fit] " + key + " = " + name + ": no such notebook variable or file (" + firstLine(e.getMessage()) + ")");
        }
        if (v == null) throw new IllegalArgumentException("[%%fit] " + key + " = " + name + " is null");
        return v;
    }

    private static String firstLine(String s) { return s == null ? "" : s.lines().findFirst().orElse(""); }

    @SuppressWarnings("unchecked")
    private static Map<String, TensorBuffer> samples(Object o, String key) {
        if (o == null) return null;
        if (o instanceof Map<?, ?> m && m.values().stream().allMatch(x -> x instanceof TensorBuffer) && m.keySet().stream().allMatch(x -> x instanceof String))
            return (Map<String, TensorBuffer>) m;
        throw new IllegalArgumentException("[%%fit] " + key + " must be a Map<String, TensorBuffer> (input → samples along the first axis), not " + o.getClass().getSimpleName());
    }

    @SuppressWarnings("unchecked")
    private static Map<String, float[]> init(Object o) {
        if (o == null) return null;
        if (o instanceof Map<?, ?> m && m.values().stream().allMatch(x -> x instanceof float[]) && m.keySet().stream().allMatch(x -> x instanceof String))
            return (Map<String, float[]>) m;
        throw new IllegalArgumentException("[%%fit] init must be a Map<String, float[]> (parameter → starting values), not " + o.getClass().getSimpleName());
    }
}
