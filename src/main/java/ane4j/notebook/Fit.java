package ane4j.notebook;

import ane4j.run.StepMetrics;
import ane4j.backend.Backend;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.mil.Program;
import ane4j.model.ParameterView;
import ane4j.session.LossChart;
import ane4j.train.GraphStep;
import ane4j.train.GraphTrainer;
import ane4j.train.Trainer;
import org.knowm.xchart.XYChart;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A trained graph ({@link Ane#fit}): the parameters by name, the history of the run (loss, validation loss, learning
 * rate per step), its loss chart, and {@link #run} to evaluate any program that takes the parameters as inputs (a
 * predict graph, an accuracy) with the trained values.
 */
public final class Fit {
    private final Map<String, float[]> params = new LinkedHashMap<>();
    private final Map<String, int[]> shapes = new LinkedHashMap<>();
    private final List<StepMetrics> history;
    private final Backend backend;

    Fit(GraphStep step, float[] flat, List<StepMetrics> history, Backend backend, Program graph) {
        for (ParameterView v : step.views()) {
            params.put(v.name(), Arrays.copyOfRange(flat, v.offset(), v.end()));
            shapes.put(v.name(), graph.main().input(v.name()).shape());
        }
        this.history = history;
        this.backend = backend;
    }

    /** The trained values of parameter {@code name} (row-major, the graph input's shape). */
    public float[] param(String name) {
        float[] p = params.get(name);
        if (p == null) throw new IllegalArgumentException("[fit] no parameter '" + name + "' (parameters: " + params.keySet() + ")");
        return p.clone();
    }

    public Map<String, float[]> params() {
        Map<String, float[]> m = new LinkedHashMap<>();
        params.forEach((k, v) -> m.put(k, v.clone()));
        return m;
    }

    public List<StepMetrics> history() { return history; }

    public float lastLoss() { return history.isEmpty() ? Float.NaN : history.get(history.size() - 1).loss(); }

    /** The last validation loss, or NaN. */
    public float lastValidationLoss() {
        for (int i = history.size() - 1; i >= 0; i--) if (history.get(i).validated()) return history.get(i).valLoss();
        return Float.NaN;
    }

    /** The loss chart (training and validation loss per step), as the preset runs draw it. */
    public XYChart chart() { return LossChart.of(history, "training loss", 640, 300); }

    /** Runs {@code program}'s main function with {@code data}, its parameter inputs bound to the trained values. */
    public Map<String, TensorBuffer> run(Program program, Map<String, TensorBuffer> data) {
        try (Kernel k = backend.compile(program)) {
            Map<String, TensorBuffer> in = new LinkedHashMap<>();
            for (TensorSpec s : k.inputs()) {
                if (params.containsKey(s.name())) {
                    TensorBuffer b = TensorBuffer.allocate(s.type());
                    b.copyFrom(params.get(s.name()));
                    in.put(s.name(), b);
                } else {
                    TensorBuffer b = data.get(s.name());
                    if (b == null) throw new IllegalArgumentException("[fit] no data for input '" + s.name() + "' " + s.type());
                    in.put(s.name(), b);
                }
            }
            return k.evaluate(in);
        }
    }

    @Override public String toString() {
        return String.format(java.util.Locale.ROOT, "Fit: %d steps, loss %.4f, validation loss %.4f, parameters %s", history.size(), lastLoss(), lastValidationLoss(), params.keySet());
    }
}
