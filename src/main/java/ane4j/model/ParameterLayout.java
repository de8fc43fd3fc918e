package ane4j.model;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The one flat float layout of all parameters of a {@link ModelConfig}. Weights, gradients and the AdamW
 * moments m and v are each one {@code float[]} of this layout, so AdamW is one loop and a checkpoint one write.
 *
 * <p>Order: {@code tokenEmbedding (vocabSize, dim)}, then for each layer l
 * {@code layers.l.rmsAtt (dim)}, {@code wq (qDim, dim)}, {@code wk (kvDim, dim)}, {@code wv (kvDim, dim)},
 * {@code wo (dim, qDim)}, {@code qNorm (headDim)} and {@code kNorm (headDim)} when qkNorm,
 * {@code rmsFfn (dim)}, {@code w1 (hiddenDim, dim)}, {@code w2 (dim, hiddenDim)}, {@code w3 (hiddenDim, dim)};
 * then {@code rmsFinal (dim)} and {@code wcls (vocabSize, dim)} when the classifier is untied.
 * A layer's tensors are contiguous ({@link Layer#offset()}, {@link Layer#size()}).
 */
public final class ParameterLayout {
    /** The views of one transformer block; qNorm and kNorm are null without QK-norm. */
    public record Layer(int index, ParameterView rmsAtt, ParameterView wq, ParameterView wk, ParameterView wv, ParameterView wo,
                        ParameterView qNorm, ParameterView kNorm, ParameterView rmsFfn,
                        ParameterView w1, ParameterView w2, ParameterView w3) {
        public int offset() { return rmsAtt.offset(); }

        public int size() { return w3.end() - rmsAtt.offset(); }
    }

    private final ModelConfig config;
    private final List<ParameterView> views;
    private final Map<String, ParameterView> byName = new LinkedHashMap<>();
    private final Layer[] layers;
    private final ParameterView tokenEmbedding, rmsFinal, wcls;
    private final int size;

    public ParameterLayout(ModelConfig config) {
        this.config = config;
        long total = config.parameterCount();
        if (total > Integer.MAX_VALUE - 16)
            throw new IllegalArgumentException("[layout] " + config.name() + " has " + total
                    + " parameters; one float[] holds at most 2^31-16, use a smaller model");
        var b = new Builder();
        int d = config.dim(), h = config.hiddenDim();
        tokenEmbedding = b.matrix("tokenEmbedding", config.vocabSize(), d, true);
        layers = new Layer[config.nLayers()];
        for (int l = 0; l < config.nLayers(); l++) {
            String p = "layers." + l + ".";
            ParameterView rmsAtt = b.vector(p + "rmsAtt", d);
            ParameterView wq = b.matrix(p + "wq", config.qDim(), d, true);
            ParameterView wk = b.matrix(p + "wk", config.kvDim(), d, true);
            ParameterView wv = b.matrix(p + "wv", config.kvDim(), d, true);
            ParameterView wo = b.matrix(p + "wo", d, config.qDim(), true);
            ParameterView qNorm = config.qkNorm() ? b.vector(p + "qNorm", config.headDim()) : null;
            ParameterView kNorm = config.qkNorm() ? b.vector(p + "kNorm", config.headDim()) : null;
            ParameterView rmsFfn = b.vector(p + "rmsFfn", d);
            ParameterView w1 = b.matrix(p + "w1", h, d, true);
            ParameterView w2 = b.matrix(p + "w2", d, h, true);
            ParameterView w3 = b.matrix(p + "w3", h, d, true);
            layers[l] = new Layer(l, rmsAtt, wq, wk, wv, wo, qNorm, kNorm, rmsFfn, w1, w2, w3);
        }
        rmsFinal = b.vector("rmsFinal", d);
        wcls = config.tiedEmbedding() ? null : b.matrix("wcls", config.vocabSize(), d, true);
        views = Collections.unmodifiableList(b.list);
        size = b.offset;
        assert size == total : size + " != " + total;
    }

    private final class Builder {
        final List<ParameterView> list = new ArrayList<>();
        int offset;

        ParameterView matrix(String name, int rows, int cols, boolean decay) { return add(new ParameterView(name, offset, new int[]{rows, cols}, decay)); }

        ParameterView vector(String name, int n) { return add(new ParameterView(name, offset, new int[]{n}, false)); }

        ParameterView add(ParameterView v) {
            list.add(v);
            byName.put(v.name(), v);
            offset += v.size();
            return v;
        }
    }

    public ModelConfig config() { return config; }

    /** Total floats. */
    public int size() { return size; }

    /** All views in buffer order. */
    public List<ParameterView> views() { return views; }

    /** A view by name, e.g. {@code tokenEmbedding} or {@code layers.3.wq}. */
    public ParameterView view(String name) {
        ParameterView v = byName.get(name);
        if (v == null) throw new IllegalArgumentException("[layout] no parameter '" + name + "' in " + config.name()
                + " (names look like tokenEmbedding, layers.0.wq, rmsFinal" + (config.tiedEmbedding() ? "" : ", wcls") + ")");
        return v;
    }

    public boolean has(String name) { return byName.containsKey(name); }

    public Layer layer(int l) {
        if (l < 0 || l >= layers.length) throw new IndexOutOfBoundsException("[layout] layer " + l + " of " + layers.length);
        return layers[l];
    }

    public ParameterView tokenEmbedding() { return tokenEmbedding; }

    public ParameterView rmsFinal() { return rmsFinal; }

    /** The untied classifier, or null when tied. */
    public ParameterView wcls() { return wcls; }

    /** The matrix the logits are computed with: wcls, or tokenEmbedding when tied. */
    public ParameterView classifier() { return wcls != null ? wcls : tokenEmbedding; }
}
