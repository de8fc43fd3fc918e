package ane4j.train;

import ane4j.run.TrainOptions;
import ane4j.blas.Blas;
import ane4j.blas.Layout;
import ane4j.blas.Transpose;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.ParameterView;
import ane4j.model.Rng;
import java.util.ArrayList;
import java.util.List;

/**
 * Low-rank adapters (LoRA, Hu et al. 2021, as Hugging Face PEFT computes them) for the projections of every layer:
 * for a frozen base matrix W (out, in) the layer computes
 * <pre>
 *   y = W·x + s·B·A·drop(x),   A (r, in), B (out, r), s = α/r,   drop: {@link LoraDropout} (identity when p = 0)
 * </pre>
 * The adapters live in one flat array (per layer, per target in {@link TrainOptions#LORA_TARGETS} order: A then B),
 * with {@link ParameterView}s over it so {@link AdamW} updates them like any parameter. The ANE-shaped step keeps the
 * base W staged in the compiled kernels and brings the rank-r term to them as inputs ({@link #project}, {@link #addUp};
 * {@link TrainingKernels.LoraInputs}); its gradients come from the output gradient dY (out, S) and the saved
 * u = A·drop(x) ({@link #accumulateGradients}). The static-weights mode merges W + s·B·A instead ({@link #merge}).
 */
public final class LoraAdapters {
    private final ModelConfig config;
    private final ParameterLayout base;
    private final int rank;
    private final float alpha, scale;
    private final List<String> targets;
    private final LoraDropout dropout;
    private final float[] data;
    private final List<ParameterView> views = new ArrayList<>();
    private final ParameterView[][] a, b;              // [layer][target index in LORA_TARGETS], null where not adapted
    // scratch of the weight-gradient thread: u = A·x and Bᵀ·dY, (r, S) each
    private final ThreadLocal<float[][]> scratch;

    public LoraAdapters(ModelConfig config, int rank, float alpha, List<String> targets) { this(config, rank, alpha, targets, LoraDropout.NONE); }

    /** @param dropout the dropout of training steps on the adapters' input (never of validation, generate or export) */
    public LoraAdapters(ModelConfig config, int rank, float alpha, List<String> targets, LoraDropout dropout) {
        if (rank < 1) throw new IllegalArgumentException("[lora] rank " + rank + " must be at least 1");
        for (String t : targets)
            if (!TrainOptions.LORA_TARGETS.contains(t)) throw new IllegalArgumentException("[lora] target '" + t + "' is not one of " + String.join(",", TrainOptions.LORA_TARGETS));
        this.config = config;
        this.dropout = dropout;
        this.base = new ParameterLayout(config);
        this.rank = rank;
        this.alpha = alpha;
        this.scale = alpha / rank;
        this.targets = TrainOptions.LORA_TARGETS.stream().filter(targets::contains).toList();
        int n = TrainOptions.LORA_TARGETS.size(), offset = 0;
        a = new ParameterView[config.nLayers()][n];
        b = new ParameterView[config.nLayers()][n];
        for (int l = 0; l < config.nLayers(); l++)
            for (String t : this.targets) {
                int i = TrainOptions.LORA_TARGETS.indexOf(t);
                ParameterView w = baseMatrix(base.layer(l), t);
                if (rank > Math.min(w.rows(), w.cols()))
                    throw new IllegalArgumentException("[lora] rank " + rank + " exceeds " + t + "'s smaller side " + Math.min(w.rows(), w.cols()) + "; use a rank of at most that");
                a[l][i] = new ParameterView("layers." + l + "." + t + ".loraA", offset, new int[] {rank, w.cols()}, true);
                offset += rank * w.cols();
                b[l][i] = new ParameterView("layers." + l + "." + t + ".loraB", offset, new int[] {w.rows(), rank}, true);
                offset += w.rows() * rank;
                views.add(a[l][i]);
                views.add(b[l][i]);
            }
        this.data = new float[offset];
        int s = config.seqLen();
        this.scratch = ThreadLocal.withInitial(() -> new float[][] {new float[rank * s], new float[rank * s]});
    }

    /**
     * PEFT's initialisation (LoraLayer.reset_lora_parameters, init_lora_weights=True): A ~ U(−1/√in, 1/√in), which is
     * torch's kaiming_uniform_(a=√5), B = 0, so the adapted model starts as the base model.
     */
    public static LoraAdapters init(ModelConfig config, int rank, float alpha, List<String> targets, long seed) {
        return init(config, rank, alpha, targets, seed, 0f);
    }

    /** {@link #init} with dropout p on the adapters' input, its masks drawn from {@code seed} ({@link LoraDropout}). */
    public static LoraAdapters init(ModelConfig config, int rank, float alpha, List<String> targets, long seed, float dropout) {
        LoraAdapters ad = new LoraAdapters(config, rank, alpha, targets, new LoraDropout(dropout, seed));
        Rng rng = new Rng(seed ^ 0x4C6F5241L);
        for (ParameterView v : ad.views)
            if (v.name().endsWith(".loraA")) {
                float bound = (float) (1 / Math.sqrt(v.cols()));
                for (int i = v.offset(); i < v.end(); i++) ad.data[i] = (2 * rng.nextFloat() - 1) * bound;
            }
        return ad;
    }

    /** The adapters of a run's options ({@code lora}, {@code loraAlpha}, {@code loraTargets}) holding {@code data} (a checkpoint's). */
    public static LoraAdapters of(ModelConfig config, TrainOptions o, float[] data) {
        LoraAdapters ad = new LoraAdapters(config, o.lora(), o.loraAlpha(), List.of(o.loraTargets().split(",")), new LoraDropout(o.loraDropout(), o.seed()));
        if (data.length != ad.size())
            throw new IllegalArgumentException("[lora] " + data.length + " adapter floats, but lora " + o.lora() + " on " + o.loraTargets() + " of " + config.name() + " needs " + ad.size());
        System.arraycopy(data, 0, ad.data, 0, data.length);
        return ad;
    }

    /** A copy of {@code base} with every adapted matrix replaced by W + s·B·A (the fused model). */
    public ane4j.model.Parameters fused(ane4j.model.Parameters base) {
        ane4j.model.Parameters out = new ane4j.model.Parameters(base.layout(), base.data().clone());
        mergeInto(out.data());
        return out;
    }

    /** The base matrix a target adapts: q → wq, …, w3 → w3. */
    static ParameterView baseMatrix(ParameterLayout.Layer w, String target) {
        return switch (target) {
            case "q" -> w.wq(); case "k" -> w.wk(); case "v" -> w.wv(); case "o" -> w.wo();
            case "w1" -> w.w1(); case "w2" -> w.w2(); case "w3" -> w.w3();
            default -> throw new IllegalArgumentException("[lora] no target " + target);
        };
    }

    public ModelConfig config() { return config; }

    public int rank() { return rank; }

    public float alpha() { return alpha; }

    /** s = α/r. */
    public float scale() { return scale; }

    public List<String> targets() { return targets; }

    /** The dropout of training steps on the adapters' input ({@link LoraDropout#NONE}: none). */
    public LoraDropout dropout() { return dropout; }

    /** The adapters, flat (A and B of each adapted matrix, layer by layer). */
    public float[] data() { return data; }

    public int size() { return data.length; }

    public List<ParameterView> views() { return views; }

    public boolean adapts(String target) { return targets.contains(target); }

    public ParameterView a(int layer, String target) { return a[layer][TrainOptions.LORA_TARGETS.indexOf(target)]; }

    public ParameterView b(int layer, String target) { return b[layer][TrainOptions.LORA_TARGETS.indexOf(target)]; }

    /** dst (out, in) ← W + s·B·A for one adapted matrix of layer {@code layer}; W read from {@code params} (static weights). */
    public void merge(float[] dst, float[] params, int layer, String target) {
        ParameterView w = baseMatrix(base.layer(layer), target), av = a(layer, target), bv = b(layer, target);
        System.arraycopy(params, w.offset(), dst, 0, w.size());
        // dst (out,in) += s · B (out,r) · A (r,in)
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, w.rows(), w.cols(), rank, scale, data, bv.offset(), rank, data, av.offset(), w.cols(), 1f, dst, 0, w.cols());
    }

    /** Adds s·B·A to every adapted matrix of {@code params} (the fused model of {@code export --merge}). */
    public void mergeInto(float[] params) {
        for (int l = 0; l < config.nLayers(); l++)
            for (String t : targets) {
                ParameterView w = baseMatrix(base.layer(l), t), av = a(l, t), bv = b(l, t);
                Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, w.rows(), w.cols(), rank, scale, data, bv.offset(), rank, data, av.offset(), w.cols(), 1f, params, w.offset(), w.cols());
            }
    }

    /** u (r, S) = A · x (in, S) for one adapted matrix. */
    public void project(int layer, String target, float[] x, float[] u) {
        ParameterView av = a(layer, target);
        int in = av.cols(), s = config.seqLen();
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, rank, s, in, 1f, data, av.offset(), in, x, 0, s, 0f, u, 0, s);
    }

    /** y (out, S) += mul · B · u (r, S). */
    public void addUp(int layer, String target, float[] u, float mul, float[] y) {
        ParameterView bv = b(layer, target);
        int s = config.seqLen();
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, bv.rows(), s, rank, mul, data, bv.offset(), rank, u, 0, s, 1f, y, 0, s);
    }

    /** g (r, S) = Bᵀ · dY (out, S). */
    public void backProject(int layer, String target, float[] dY, float[] g) {
        ParameterView bv = b(layer, target);
        int s = config.seqLen();
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.YES, Transpose.NO, rank, s, bv.rows(), 1f, data, bv.offset(), rank, dY, 0, s, 0f, g, 0, s);
    }

    /** dx (in, S) = mul · Aᵀ · g (r, S) + beta · dx: the adapter path's share of the input gradient (before dropout's mask). */
    public void backDown(int layer, String target, float[] g, float mul, float beta, float[] dx) {
        ParameterView av = a(layer, target);
        int in = av.cols(), s = config.seqLen();
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.YES, Transpose.NO, in, s, rank, mul, data, av.offset(), in, g, 0, s, beta, dx, 0, s);
    }

    /**
     * The adapter gradients of one adapted matrix, ACCUMULATED into {@code grads}, from what the step already has: the
     * output gradient dY (out, S), u = A·drop(x) (r, S) of the forward, g = Bᵀ·dY (r, S) and the input drop(x) (in, S):
     * <pre>
     *   dB (out, r) += s · dY · uᵀ
     *   dA (r, in)  += s · g · drop(x)ᵀ
     * </pre>
     */
    public void accumulateGradients(float[] grads, int layer, String target, float[] dY, float[] u, float[] g, float[] droppedX) {
        ParameterView av = a(layer, target), bv = b(layer, target);
        int out = bv.rows(), in = av.cols(), s = config.seqLen();
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, out, rank, s, scale, dY, 0, s, u, 0, s, 1f, grads, bv.offset(), rank);
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, rank, in, s, scale, g, 0, s, droppedX, 0, s, 1f, grads, av.offset(), in);
    }

    /**
     * The adapter gradients of one adapted matrix, ACCUMULATED into {@code grads} (laid out as {@link #data}), from the
     * gradient dY (out, S) of its output and its input x (in, S), no dropout (the merged static-weights path); the base
     * matrix's dW (out·in·S) is never formed:
     * <pre>
     *   u  (r, S)   = A · x
     *   dB (out, r) += s · dY · uᵀ
     *   g  (r, S)   = Bᵀ · dY
     *   dA (r, in)  += s · g · xᵀ
     * </pre>
     * 2·r·S·(in + out) multiply-adds instead of out·in·S.
     */
    public void accumulateGradients(float[] grads, int layer, String target, float[] dY, float[] x) {
        ParameterView av = a(layer, target), bv = b(layer, target);
        int out = bv.rows(), in = av.cols(), s = config.seqLen();
        float[][] sc = scratch.get();
        float[] u = sc[0], g = sc[1];
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, rank, s, in, 1f, data, av.offset(), in, x, 0, s, 0f, u, 0, s);
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, out, rank, s, scale, dY, 0, s, u, 0, s, 1f, grads, bv.offset(), rank);
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.YES, Transpose.NO, rank, s, out, 1f, data, bv.offset(), rank, dY, 0, s, 0f, g, 0, s);
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, rank, in, s, scale, g, 0, s, x, 0, s, 1f, grads, av.offset(), in);
    }
}
