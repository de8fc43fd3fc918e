package ane4j.train;

import ane4j.backend.Backend;
import ane4j.backend.Fp16;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.blas.Parallel;
import ane4j.blas.Transposes;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.ParameterView;
import ane4j.run.SetupProgress;
import ane4j.train.TrainingKernels.Name;
import ane4j.train.TrainingStep.Phase;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import static ane4j.train.TrainingKernels.Name.*;

/**
 * How the weights reach the weight-bearing kernels of a {@link TrainingStep} ({@link Name#weighted()}: eight of the ten).
 * Three strategies:
 * <ul>
 * <li>{@link Bound}: where a separate input costs a copy at every evaluate (the ANE, {@link Kernel#prefersBoundInputs()}),
 *     each layer and weight-bearing kernel has a {@link Kernel#bind() bound} input of its own, as maderix's dynamic
 *     pipeline keeps {@code pls[L].*_in} surfaces with {@code plr[L].*} requests ({@code training/training_dynamic/train.m}):
 *     weights are written into it once after each {@link #stageWeights}, and a step writes only the activation columns;
 * <li>{@link OnDemand}: elsewhere (the reference backend) one input per kernel holds the weights of the layer about to
 *     run, staged when that layer runs: one layer's fp16 copy of the weights at a time, not L (for stories110m 28 MB
 *     instead of 340 MB);
 * <li>{@link Baked}: static weights, baked into the kernels as BLOBFILE constants and recompiled (8 per layer) at every
 *     {@link #stageWeights}: the maderix "static" pipeline, which spends compiles (docs/ane-facts.md §5.1).
 * </ul>
 * Writing a matrix into a buffer that holds floats (the reference backend's, or fp32) transposes straight into it
 * ({@link Dynamic#stageTransposed}); other buffers are written through a heap strip.
 */
sealed interface WeightStaging extends AutoCloseable permits WeightStaging.Dynamic, WeightStaging.Baked {
    /** The weight-bearing kernels, in the order of {@link Name#ten()}. */
    List<Name> WEIGHTED = Name.ten().stream().filter(Name::weighted).toList();

    /** The input of weight-bearing kernel {@code kernel} for layer {@code layer}, holding that layer's weights (staged now if it does not yet). */
    TensorBuffer input(int layer, Name kernel);

    /**
     * The weights the following steps use. Dynamic staging reads them lazily, layer by layer, as the step runs: call this
     * again after every change to {@code params}. Static weights recompile the weight-bearing kernels now.
     */
    void stageWeights(float[] params);

    /** Evaluates layer {@code layer}'s weight-bearing kernel on {@code in} (the buffer {@link #input} returned). */
    void evaluate(Name kernel, int layer, TensorBuffer in, Map<String, TensorBuffer> outputs);

    /** Weight bytes written into kernel inputs since {@link #resetWeightBytes()}. */
    long weightBytes();

    void resetWeightBytes();

    /** Kernels this strategy compiled itself (static weights: 8 per layer per {@link #stageWeights}). */
    default int compiles() { return 0; }

    @Override void close();

    // -----------------------------------------------------------------------------------------------------------------
    // which matrix each weight segment of a kernel's input holds

    /**
     * A weight segment of a kernel's packed input: the matrix of LoRA target {@code target} (q … w3) of the layer,
     * {@code transposed} (channel i, column o ← W[o, i]) or as stored (channel o, column i ← W[o, i]).
     * Its name in the layout: {@code wqT} = wqᵀ (D, Q), {@code w2} = w2 (D, H).
     */
    record Segment(String target, boolean transposed) {
        String name() { return (target.length() == 1 ? "w" + target : target) + (transposed ? "T" : ""); }
    }

    /** The weight segments of each weight-bearing kernel (and sdpaFwd's qkNorm weights, when the model has them). */
    Map<Name, List<Segment>> SEGMENTS = Collections.unmodifiableMap(new EnumMap<>(Map.of(
            SDPA_FWD, List.of(new Segment("q", true), new Segment("k", true), new Segment("v", true)),
            WO_FWD, List.of(new Segment("o", true)),
            FFN_FUSED, List.of(new Segment("w1", true), new Segment("w3", true), new Segment("w2", false)),
            FFN_BWD_W2T, List.of(new Segment("w2", false)),
            FFN_BWD_W13T, List.of(new Segment("w1", false), new Segment("w3", false)),
            WOT_BWD, List.of(new Segment("o", false)),
            Q_BWD, List.of(new Segment("q", false)),
            KV_BWD, List.of(new Segment("k", false), new Segment("v", false)))));

    // -----------------------------------------------------------------------------------------------------------------
    // dynamic weights: compiled once, the weights written into the kernels' inputs

    /** Bound and on-demand staging: both write a layer's weight segments into an input when that layer first needs them. */
    abstract sealed class Dynamic implements WeightStaging permits Bound, OnDemand {
        /** Rows (or transposed columns) per parallel staging task. */
        private static final int STAGE_ROWS = 64;

        final ModelConfig c;
        final int nl;
        private final ParameterLayout layout;
        final Map<Name, TrainingKernels.Spec> specs;
        private final StepTimer timer;
        /** LoRA: the base weights are frozen, so what was staged of them stays valid across updates. */
        private final boolean frozen;
        private final LongAdder weightBytes = new LongAdder();        // staging tasks add from several threads
        private final ThreadLocal<float[]> transposeScratch = ThreadLocal.withInitial(() -> new float[0]);   // (STAGE_ROWS, rows) per staging thread: a strip transposed
        private float[] params;                                     // the weights of the last stageWeights; null before it

        Dynamic(ModelConfig c, Map<Name, TrainingKernels.Spec> specs, StepTimer timer, boolean frozen) {
            this.c = c;
            this.nl = c.nLayers();
            this.layout = new ParameterLayout(c);
            this.specs = specs;
            this.timer = timer;
            this.frozen = frozen;
        }

        /** The buffer that holds {@code kernel}'s weights for {@code layer}, staged or not. */
        abstract TensorBuffer buffer(int layer, Name kernel);

        /** Whether {@link #buffer} holds layer {@code layer}'s current weights. */
        abstract boolean holds(int layer, Name kernel);

        abstract void markStaged(int layer, Name kernel);

        /** After new weights: no buffer holds them. */
        abstract void invalidate();

        @Override
        public final TensorBuffer input(int layer, Name kernel) {
            TensorBuffer in = buffer(layer, kernel);
            if (!holds(layer, kernel)) {
                if (params == null) throw new IllegalStateException("[train] stageWeights was not called before the first step");
                try (var _ = timer.phase(Phase.IO)) {
                    stageLayer(in, kernel, layout.layer(layer), params);
                    markStaged(layer, kernel);
                }
            }
            return in;
        }

        @Override
        public final void stageWeights(float[] params) {
            // LoRA with the adapters as inputs: the base is frozen, so what was staged of it stays valid (each forward writes
            // the adapters' regions itself); on the ANE each layer's bound surfaces then get the base once per run
            if (frozen && params == this.params) return;
            this.params = params;
            invalidate();
        }

        @Override public final long weightBytes() { return weightBytes.sum(); }

        @Override public final void resetWeightBytes() { weightBytes.reset(); }

        /** Writes the weight segments of one kernel's input for layer w, in parallel (transposed where the kernel reads Wᵀ). */
        private void stageLayer(TensorBuffer in, Name kernel, ParameterLayout.Layer w, float[] params) {
            List<Segment> segments = SEGMENTS.get(kernel);
            Parallel.forEach(segments.size(), i -> {
                Segment seg = segments.get(i);
                PackedLayout.Range r = specs.get(kernel).input().get(seg.name());
                ParameterView m = LoraAdapters.baseMatrix(w, seg.target());
                if (seg.transposed() && r.padded())
                    // Wqᵀ, Wkᵀ with heads padded (head dim not a multiple of 32, ane-audit-2 R4): head b's rows [b·HD, (b+1)·HD)
                    // of W at the start of its HDp columns; the zero columns after it are written once with the constants
                    for (int b = 0; b < r.blocks(); b++)
                        stageTransposed(in, r.at(b * r.block()), params, new ParameterView(m.name(), m.offset() + b * r.block() * m.cols(), new int[] {r.block(), m.cols()}, m.decay()));
                else if (seg.transposed()) stageTransposed(in, r.start(), params, m);
                else stage(in, r.start(), params, m);
            });
            if (kernel == SDPA_FWD && c.qkNorm()) {
                int hd = c.headDim();
                PackedLayout.Range norms = specs.get(kernel).input().get("qkNorm");   // two heads, padded or not
                in.writeColumns(0, 1, norms.at(0), hd, params, w.qNorm().offset(), hd);
                in.writeColumns(0, 1, norms.at(hd), hd, params, w.kNorm().offset(), hd);
                weightBytes.add(2L * hd * in.dtype().byteSize());
            }
        }

        /** Matrix m (rows, cols) as stored: channel r, columns [at, at+cols); blocks of rows in parallel. */
        private void stage(TensorBuffer dst, int at, float[] params, ParameterView m) {
            int rows = m.rows(), cols = m.cols(), blocks = (rows + STAGE_ROWS - 1) / STAGE_ROWS;
            weightBytes.add((long) rows * cols * dst.dtype().byteSize());
            Parallel.forEach(blocks, b -> {
                int r0 = b * STAGE_ROWS, n = Math.min(STAGE_ROWS, rows - r0);
                dst.writeColumns(r0, n, at, cols, params, m.offset() + r0 * cols, cols);
            });
        }

        /** Matrix m (rows, cols) transposed: channel j, column at+i ← m[i, j]; strips of STAGE_ROWS channels in parallel. */
        private void stageTransposed(TensorBuffer dst, int at, float[] params, ParameterView m) {
            int rows = m.rows(), cols = m.cols(), off = m.offset(), strips = (cols + STAGE_ROWS - 1) / STAGE_ROWS;
            weightBytes.add((long) rows * cols * dst.dtype().byteSize());
            boolean fp16 = dst.dtype() == DType.FP16;
            if (dst.floatHeld() || dst.dtype() == DType.FP32) {
                // the segment holds floats: transposed straight into it (OpenBLAS's omatcopy where it runs), then each
                // channel's run rounded to fp16 in place: faster than the heap strips below (docs/benchmarks.md, "Transposes through omatcopy")
                MemorySegment seg = dst.segment();
                int cs = dst.channelSize();
                Parallel.forEach(strips, b -> {
                    int j0 = b * STAGE_ROWS, jw = Math.min(STAGE_ROWS, cols - j0);
                    Transposes.copy(params, off + j0, rows, jw, cols, seg, (long) j0 * cs + at, cs);
                    if (fp16) for (int j = j0; j < j0 + jw; j++) Fp16.round(seg, (long) j * cs + at, rows);
                });
                return;
            }
            Parallel.forEach(strips, b -> {
                int j0 = b * STAGE_ROWS, jw = Math.min(STAGE_ROWS, cols - j0);
                float[] t = transposeScratch.get();
                if (t.length < jw * rows) transposeScratch.set(t = new float[jw * rows]);
                // t (jw, rows) ← m[:, j0..j0+jw)ᵀ, in 32-row tiles so both sides stay in cache
                for (int i0 = 0; i0 < rows; i0 += 32)
                    for (int j = 0; j < jw; j++)
                        for (int i = i0, ie = Math.min(rows, i0 + 32); i < ie; i++) t[j * rows + i] = params[off + i * cols + j0 + j];
                dst.writeColumns(j0, jw, at, rows, t, 0, rows);
            });
        }
    }

    /** Each (layer, weight-bearing kernel) has its own bound input; weights are written once per {@link #stageWeights}. */
    final class Bound extends Dynamic {
        private final Kernel.Binding[][] bindings;                  // [layer][kernel ordinal]
        private final boolean[][] staged;                           // whether bindings[l][k] holds the current weights

        Bound(ModelConfig c, Map<Name, TrainingKernels.Spec> specs, Map<Name, Kernel> kernels, StepTimer timer, boolean frozen) {
            super(c, specs, timer, frozen);
            bindings = new Kernel.Binding[nl][Name.values().length];
            staged = new boolean[nl][Name.values().length];
            for (int l = 0; l < nl; l++)
                for (Name k : WEIGHTED) {
                    bindings[l][k.ordinal()] = kernels.get(k).bind();
                    specs.get(k).writeConstants(bindings[l][k.ordinal()].input(TrainingKernels.INPUT));   // once per bound set, like the weights
                }
        }

        @Override TensorBuffer buffer(int layer, Name kernel) { return bindings[layer][kernel.ordinal()].input(TrainingKernels.INPUT); }

        @Override boolean holds(int layer, Name kernel) { return staged[layer][kernel.ordinal()]; }

        @Override void markStaged(int layer, Name kernel) { staged[layer][kernel.ordinal()] = true; }

        @Override void invalidate() { for (boolean[] row : staged) Arrays.fill(row, false); }

        @Override
        public void evaluate(Name kernel, int layer, TensorBuffer in, Map<String, TensorBuffer> outputs) {
            bindings[layer][kernel.ordinal()].evaluate(outputs);
        }

        @Override
        public void close() {
            for (Kernel.Binding[] row : bindings) for (Kernel.Binding b : row) if (b != null) b.close();
        }
    }

    /** One input per weight-bearing kernel, holding the weights of the layer about to run. */
    final class OnDemand extends Dynamic {
        private final Map<Name, Kernel> kernels;                    // the step's, compiled once
        private final TensorBuffer[] inputs = new TensorBuffer[Name.values().length];   // by kernel ordinal
        private final int[] stagedLayer = new int[Name.values().length];               // the layer whose weights it holds, −1 none

        OnDemand(ModelConfig c, Map<Name, TrainingKernels.Spec> specs, Map<Name, Kernel> kernels, StepTimer timer, boolean frozen) {
            super(c, specs, timer, frozen);
            this.kernels = kernels;
            Arrays.fill(stagedLayer, -1);
            for (Name k : WEIGHTED) {
                inputs[k.ordinal()] = kernels.get(k).allocateDirectInput(TrainingKernels.INPUT);
                specs.get(k).writeConstants(inputs[k.ordinal()]);
            }
        }

        @Override TensorBuffer buffer(int layer, Name kernel) { return inputs[kernel.ordinal()]; }

        @Override boolean holds(int layer, Name kernel) { return stagedLayer[kernel.ordinal()] == layer; }

        @Override void markStaged(int layer, Name kernel) { stagedLayer[kernel.ordinal()] = layer; }

        @Override void invalidate() { Arrays.fill(stagedLayer, -1); }

        @Override
        public void evaluate(Name kernel, int layer, TensorBuffer in, Map<String, TensorBuffer> outputs) {
            kernels.get(kernel).evaluate(Map.of(TrainingKernels.INPUT, in), outputs);
        }

        @Override public void close() {}   // the kernels are the step's
    }

    // -----------------------------------------------------------------------------------------------------------------
    // static weights: baked into the kernels, recompiled after every update

    /**
     * Static weights: every weight-bearing kernel of every layer compiled with the layer's weights baked in; its input
     * carries the activations only (the weight columns are unused). With LoRA the kernels bake W + s·B·A.
     */
    final class Baked implements WeightStaging {
        private final ModelConfig c;
        private final DType io;
        private final boolean threeStage;
        private final Backend backend;
        private final LoraAdapters lora;                            // null: no adapters to merge
        private final StepTimer timer;
        private final ParameterLayout layout;
        private final TensorBuffer[] inputs = new TensorBuffer[Name.values().length];   // by kernel ordinal: activations
        private final Kernel[][] kernels;                           // [layer][kernel ordinal], null before stageWeights
        private final Map<String, float[]> merged = new ConcurrentHashMap<>();           // LoRA, per target: W_eff (out, in)
        private int compiles;

        /** @param specs the dynamic kernels' specs: their input layouts are the baked kernels' */
        Baked(ModelConfig c, DType io, boolean threeStage, Map<Name, TrainingKernels.Spec> specs, Backend backend, LoraAdapters lora, StepTimer timer) {
            this.c = c;
            this.io = io;
            this.threeStage = threeStage;
            this.backend = backend;
            this.lora = lora;
            this.timer = timer;
            this.layout = new ParameterLayout(c);
            this.kernels = new Kernel[c.nLayers()][Name.values().length];
            for (Name k : WEIGHTED) {
                inputs[k.ordinal()] = TensorBuffer.allocate(specs.get(k).program().main().inputs().get(0).type());
                specs.get(k).writeConstants(inputs[k.ordinal()]);
            }
        }

        @Override public TensorBuffer input(int layer, Name kernel) { return inputs[kernel.ordinal()]; }

        /** Recompiles every weight-bearing kernel of every layer with the current weights baked in. */
        @Override
        public void stageWeights(float[] params) {
            int nl = c.nLayers(), n = WEIGHTED.size();
            try (var _ = timer.phase(Phase.IO)) {
                for (int l = 0; l < nl; l++) {
                    ParameterLayout.Layer w = layout.layer(l);
                    TrainingKernels baked = new TrainingKernels(c, io, seg -> block(w, seg, params), threeStage);
                    for (int i = 0; i < n; i++) {
                        Name k = WEIGHTED.get(i);
                        SetupProgress.reportCompiling(l * n + i + 1, nl * n, k.id() + " · layer " + (l + 1));
                        Kernel compiled = backend.compile(baked.build(k).program());
                        compiles++;
                        if (kernels[l][k.ordinal()] != null) kernels[l][k.ordinal()].close();
                        kernels[l][k.ordinal()] = compiled;
                    }
                }
            }
        }

        @Override
        public void evaluate(Name kernel, int layer, TensorBuffer in, Map<String, TensorBuffer> outputs) {
            kernels[layer][kernel.ordinal()].evaluate(Map.of(TrainingKernels.INPUT, in), outputs);
        }

        @Override public long weightBytes() { return 0; }

        @Override public void resetWeightBytes() {}

        @Override public int compiles() { return compiles; }

        /** The block a weight segment holds, as it would be staged: "wqT" = wqᵀ (D, Q); "w2" = w2 as stored; "qNorm" = qNorm. */
        private float[] block(ParameterLayout.Layer w, String name, float[] params) {
            if (name.equals("qNorm") || name.equals("kNorm")) {
                ParameterView m = name.equals("qNorm") ? w.qNorm() : w.kNorm();
                return Arrays.copyOfRange(params, m.offset(), m.offset() + m.size());
            }
            Segment seg = SEGMENTS.values().stream().flatMap(List::stream).filter(x -> x.name().equals(name)).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("[train] no weight for segment " + name));
            ParameterView base = LoraAdapters.baseMatrix(w, seg.target()), m = base;
            float[] src = params;
            if (lora != null && lora.adapts(seg.target())) {
                // W + s·B·A, merged into a scratch of the matrix's shape
                src = merged.computeIfAbsent(seg.target(), t -> new float[base.size()]);
                lora.merge(src, params, w.index(), seg.target());
                m = new ParameterView(base.name(), 0, base.shape(), base.decay());
            }
            float[] out = new float[m.size()];
            if (!seg.transposed()) System.arraycopy(src, m.offset(), out, 0, m.size());
            else for (int i = 0; i < m.rows(); i++) for (int j = 0; j < m.cols(); j++) out[j * m.rows() + i] = src[m.offset() + i * m.cols() + j];
            return out;
        }

        @Override
        public void close() {
            for (Kernel[] row : kernels) for (Kernel k : row) if (k != null) k.close();
        }
    }
}
