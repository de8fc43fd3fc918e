package ane4j.model;

import java.util.Arrays;

/**
 * A {@code float[]} in a {@link ParameterLayout}: model weights, or gradients, or an AdamW moment.
 * Views give offsets into {@link #data()}; nothing is copied.
 */
public final class Parameters {
    private final ParameterLayout layout;
    private final float[] data;

    public Parameters(ParameterLayout layout, float[] data) {
        if (data.length != layout.size())
            throw new IllegalArgumentException("[params] buffer has " + data.length + " floats, layout of "
                    + layout.config().name() + " needs " + layout.size());
        this.layout = layout;
        this.data = data;
    }

    /** All zeros (gradients, AdamW moments). */
    public static Parameters zeros(ParameterLayout layout) { return new Parameters(layout, new float[layout.size()]); }

    public static Parameters zeros(ModelConfig config) { return zeros(new ParameterLayout(config)); }

    /**
     * Fresh weights for training from scratch. Matrices and the embedding are normal(0, 0.02) (GPT-2/llama2.c
     * {@code train.py}); the residual output projections wo and w2 are further scaled by 1/sqrt(2·nLayers)
     * (GPT-2's scaled init, also llama2.c's {@code model.py}) so the residual stream's variance does not grow
     * with depth; all norm weights are 1. Deterministic for a seed; views are filled in layout order.
     */
    public static Parameters init(ModelConfig config, long seed) {
        Parameters p = zeros(config);
        Rng rng = new Rng(seed);
        double residualStd = 0.02 / Math.sqrt(2.0 * config.nLayers());
        for (ParameterView v : p.layout.views()) {
            if (!v.isMatrix()) {
                Arrays.fill(p.data, v.offset(), v.end(), 1f);
                continue;
            }
            boolean residual = v.name().endsWith(".wo") || v.name().endsWith(".w2");
            double std = residual ? residualStd : 0.02;
            for (int i = v.offset(); i < v.end(); i++) p.data[i] = (float) (rng.nextGaussian() * std);
        }
        return p;
    }

    public ParameterLayout layout() { return layout; }

    public ModelConfig config() { return layout.config(); }

    /** The backing array (shared, not copied). */
    public float[] data() { return data; }

    public ParameterView view(String name) { return layout.view(name); }

    public ParameterLayout.Layer layer(int l) { return layout.layer(l); }

    /** A copy of one tensor. */
    public float[] get(ParameterView v) { return Arrays.copyOfRange(data, v.offset(), v.end()); }

    public float[] get(String name) { return get(view(name)); }

    /** Overwrites one tensor. */
    public void set(ParameterView v, float[] values) {
        if (values.length != v.size())
            throw new IllegalArgumentException("[params] " + v.name() + " has " + v.size() + " floats, got " + values.length);
        System.arraycopy(values, 0, data, v.offset(), values.length);
    }

    public void set(String name, float[] values) { set(view(name), values); }

    public Parameters copy() { return new Parameters(layout, data.clone()); }
}
