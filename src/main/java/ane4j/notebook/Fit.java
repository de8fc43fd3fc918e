package ane4j.notebook;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.mil.Program;
import ane4j.model.ParameterView;
import ane4j.run.StepMetrics;
import ane4j.train.Checkpoint;
import ane4j.train.GraphLayout;
import org.knowm.xchart.XYChart;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A graph trained by {@link Ane#fit} or {@code %%fit}: its run ({@link #run()}: the live plot's {@link TrainingRun},
 * its folder, metrics and record), the trained parameters by name (from the run's newest checkpoint), and
 * {@link #apply} to evaluate any program that takes the parameters as inputs (a predict graph, an accuracy) with them.
 */
public final class Fit {
    private final TrainingRun run;
    private Map<String, float[]> params;
    private java.nio.file.Path from;

    Fit(TrainingRun run) {
        this.run = run;
    }

    /** The run: {@code run().chart()}, {@code table()}, {@code runDir()}, {@code resume()} … as a {@code %%train} run's. */
    public TrainingRun run() { return run; }

    /** The trained parameters of the newest checkpoint (read again when a newer one appears). */
    private synchronized Map<String, float[]> trained() {
        var dir = run.runDir().resolve("checkpoints");
        List<java.nio.file.Path> all = Checkpoint.list(dir);
        if (params != null && !all.isEmpty() && all.getFirst().equals(from)) return params;
        Checkpoint.Contents c = Checkpoint.loadNewestWeights(dir, System.out::println);
        if (c == null || c.state().graph() == null) throw new IllegalStateException("[fit] no graph checkpoint in " + dir + " yet: the run writes one at its end and every checkpointEvery steps");
        GraphLayout layout = c.state().graph();
        Map<String, float[]> m = new LinkedHashMap<>();
        for (ParameterView v : layout.views()) m.put(v.name(), Arrays.copyOfRange(c.params(), v.offset(), v.end()));
        params = m;
        from = Checkpoint.pathFor(dir, c.state().step());
        return m;
    }

    /** The trained values of parameter {@code name} (row-major, the graph input's shape). */
    public float[] param(String name) {
        float[] p = trained().get(name);
        if (p == null) throw new IllegalArgumentException("[fit] no parameter '" + name + "' (parameters: " + trained().keySet() + ")");
        return p.clone();
    }

    public Map<String, float[]> params() {
        Map<String, float[]> m = new LinkedHashMap<>();
        trained().forEach((k, v) -> m.put(k, v.clone()));
        return m;
    }

    /** Every step of the run (a resumed run's earlier ones too). */
    public List<StepMetrics> history() { return run.fullHistory(); }

    public float lastLoss() {
        List<StepMetrics> h = history();
        return h.isEmpty() ? Float.NaN : h.getLast().loss();
    }

    /** The last validation loss, or NaN. */
    public float lastValidationLoss() {
        List<StepMetrics> h = history();
        for (int i = h.size() - 1; i >= 0; i--) if (h.get(i).validated()) return h.get(i).valLoss();
        return Float.NaN;
    }

    /** The run's loss chart (training and validation loss per step), as a preset run's. */
    public XYChart chart() { return run.chart(); }

    /**
     * Runs {@code program}'s main function in the current session with {@code data}, its inputs named after parameters
     * bound to the trained values.
     */
    public Map<String, TensorBuffer> apply(Program program, Map<String, TensorBuffer> data) {
        Map<String, float[]> p = trained();
        try (Kernel k = Ane.session().compile(program)) {
            Map<String, TensorBuffer> in = new LinkedHashMap<>();
            for (TensorSpec s : k.inputs()) {
                if (p.containsKey(s.name())) {
                    TensorBuffer b = TensorBuffer.allocate(s.type());
                    b.copyFrom(p.get(s.name()));
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
        return String.format(java.util.Locale.ROOT, "Fit: %d steps, loss %.4f, validation loss %.4f, run dir %s", history().size(), lastLoss(), lastValidationLoss(), run.runDir());
    }
}
