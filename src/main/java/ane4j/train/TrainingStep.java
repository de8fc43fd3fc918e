package ane4j.train;

import ane4j.run.TrainOptions;
import ane4j.run.SetupProgress;
import ane4j.backend.Backend;
import ane4j.backend.Fp16;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.blas.Blas;
import ane4j.blas.Layout;
import ane4j.blas.Parallel;
import ane4j.blas.Transpose;
import ane4j.blas.Transposes;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.ParameterView;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Forward and backward of one sequence, ANE-shaped (docs/ane-facts.md §5.3): the ten kernels run on the backend with weights
 * staged into their inputs; embedding, RMSNorm, classifier, cross-entropy, SwiGLU/RoPE/QK-norm backward and every dW
 * run on the CPU, the dW sgemms on a background thread overlapping the backend's work.
 * <pre>Legend: S = seqLen, D = dim, H = hiddenDim, V = vocab, Q = nHeads·headDim, KV = nKvHeads·headDim, L = nLayers.</pre>
 * Activations are channel-first (C, S) float arrays; matrices are row-major (out, in).
 *
 * <p>Weight staging is the backend's choice ({@link Kernel#prefersBoundInputs()}). Where a separate input costs a copy
 * at every evaluate (the ANE), each layer and weight-bearing kernel has a {@link Kernel#bind() bound} input of its own,
 * as maderix's dynamic pipeline keeps {@code pls[L].*_in} surfaces with {@code plr[L].*} requests
 * ({@code training/training_dynamic/train.m}): weights are written into it once after each {@link #stageWeights},
 * and a step writes only the activation columns. Elsewhere (the reference backend) one input per kernel holds the
 * weights of the layer about to run, staged on demand: one layer's fp16 copy instead of L.
 * {@link #stagedActivationBytes()} and {@link #stagedWeightBytes()} count what the last step wrote into kernel inputs.
 */
public final class TrainingStep implements AutoCloseable {
    /** Wall time of the phases of the last step, in nanoseconds (maderix-style breakdown). */
    public enum Phase { FORWARD_BACKEND, BACKWARD_BACKEND, IO, CPU, DW_WAIT, CLASSIFIER }

    private final ModelConfig c;
    private final ParameterLayout layout;
    private final int s, d, h, q, kv, v, nl;
    private final Map<String, Kernel> kernels = new java.util.HashMap<>();
    private final Map<String, TrainingKernels.Spec> specs = new java.util.HashMap<>();
    private final Map<String, TensorBuffer> outputs = new java.util.HashMap<>();
    // on demand: one input per weight-bearing kernel, holding the weights of the layer about to run (one layer's fp16
    // copy of the weights at a time, not all L: for stories110m that is 28 MB instead of 340 MB)
    private TensorBuffer[] weightedInput;
    private int[] stagedLayer;                         // per weight-bearing kernel: the layer whose weights it holds, −1 none
    // bound: [layer][weight-bearing kernel] inputs that keep their weights until the next stageWeights
    private Kernel.Binding[][] bound;
    private boolean[][] boundStaged;                   // whether bound[l][i] holds the current weights
    private long activationBytes;                      // written into kernel inputs by the last step
    private final java.util.concurrent.atomic.LongAdder weightBytes = new java.util.concurrent.atomic.LongAdder();
    private float[] stagedParams;                      // the weights of the last stageWeights
    private final Backend backend;
    private final DType io;
    private final boolean staticWeights;
    private final boolean threeStage;
    private TensorBuffer valuesIn;                     // three-stage attention: probs and tiled V
    private Kernel[][] staticKernels;                  // [layer][weight-bearing kernel], static mode only
    private final TensorBuffer bwd1In, bwd2In;
    /** Whether sdpaBwd1's output and sdpaBwd2's input share the probs and dP channels (buffers of floats). */
    private final boolean probsShared;
    private final float[] cosT, sinT;                  // RoPE tables (HD, S)
    private final Activations[] acts;
    private final ExecutorService dwThread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "ane4j-dw");
        t.setDaemon(true);
        return t;
    });
    private final List<Future<?>> pendingDw = new ArrayList<>();
    private final Map<Phase, Long> phaseNanos = new EnumMap<>(Phase.class);
    private int compiles;
    // scratch reused by every step (no per-step garbage): classifier (V,S), residual-stream gradients (D,S), heads (Q,S)
    private float[] logits, dlogits;
    private final ThreadLocal<float[]> transposeScratch = ThreadLocal.withInitial(() -> new float[0]);
    private final float[] dxLora;                      // LoRA: the q,k,v adapter paths' dx (D,S)
    private final float[] dxf, dy, dtmp, dxq, da, kTiled, vTiled, dvFull, dkFull, dqRaw, dkRaw;

    /** Vocabulary rows per classifier sgemm. */
    private static final int CLS_BLOCK = 4096;

    /** The weight-bearing kernels, staged per layer. */
    private static final String[] WEIGHTED = TrainingKernels.Name.ten().stream()
            .filter(TrainingKernels.Name::weighted).map(TrainingKernels.Name::id).toArray(String[]::new);

    /** Saved forward activations of one layer. */
    private static final class Activations {
        float[] x, xnorm, rrmsAtt, attn, qRope, kRope, vh, qRaw, kRaw, x2, x2norm, rrmsFfn, h1, h3, gate;
    }

    /**
     * Backward scratch of one layer. Two sets serve all layers (layer l uses set l mod 2): the weight-gradient thread
     * may still read layer l+1's set while layer l runs, and layer l−1 waits for layer l+1's last dW before reusing it.
     */
    private static final class Gradients {
        final float[] dffn, dgate, dh1, dh3, dx2, dO, dq, dk, dv;
        float[][] lora;                                // LoRA as inputs, [target]: g = Bᵀ·dY (r,S)
        Future<?> lastReader;                          // the last dW task that reads this set

        Gradients(int d, int h, int q, int kv, int s) {
            dffn = new float[d * s]; dgate = new float[h * s]; dh1 = new float[h * s]; dh3 = new float[h * s];
            dx2 = new float[d * s]; dO = new float[d * s]; dq = new float[q * s]; dk = new float[kv * s]; dv = new float[kv * s];
        }
    }

    private final Gradients[] gradSets;

    // LoRA (null: every weight trains): the base is frozen and staged as in full training; the rank-r term reaches
    // sdpaFwd/ffnFused as inputs (their LoRA variants) and meets o's and w2's outputs on the CPU, its share of each input
    // gradient is added on the CPU, adapter gradients replace dW. Static weights merge W + s·B·A into the baked kernels.
    private final LoraAdapters lora;
    private final boolean loraInputs;                  // LoRA with dynamic weights: adapters as kernel inputs, no merge
    private final LoraDropout dropout;                 // of this step's adapters (training steps only)
    private long sequence = -1;                        // the dropout masks' sequence number; −1: no dropout (validation)
    private final float[] frozenNormGrads;             // LoRA: the norm-weight gradients RMSNorm backward computes, unused
    private final Map<String, float[]> merged = new java.util.concurrent.ConcurrentHashMap<>();   // static mode, per target: W_eff (out, in)
    private Map<String, TrainingKernels.LoraSlot> sdpaSlots = Map.of(), ffnSlots = Map.of();
    private float[][][] loraU;                         // [layer][target] u = A·drop(x) (r,S) of the forward
    private long[][][] loraMask;                       // [layer][target] keep bits of the last training forward (dropout)
    private float[] loraPad, loraX, loraDx;            // scratch: padded kernel rows (rp, max(S, OC)); drop(x), dx (maxIn, S)
    private final ThreadLocal<float[]> droppedX = ThreadLocal.withInitial(() -> new float[0]);  // weight-gradient thread: drop(x)

    public TrainingStep(ModelConfig config, Backend backend, DType io) { this(config, backend, io, false); }

    /**
     * @param staticWeights bake weights into the weight-bearing kernels as BLOBFILE constants and recompile them (8 per
     *                      layer) at every {@link #stageWeights}: the maderix "static" pipeline, which spends compiles
     */
    public TrainingStep(ModelConfig config, Backend backend, DType io, boolean staticWeights) {
        this(config, backend, io, staticWeights, false);
    }

    /** @param threeStage scores on the backend, causal mask and softmax on the CPU, P·V on the backend (docs/ane-facts.md §5.5) */
    public TrainingStep(ModelConfig config, Backend backend, DType io, boolean staticWeights, boolean threeStage) {
        this(config, backend, io, staticWeights, threeStage, null);
    }

    /**
     * @param lora adapters to train instead of the model's weights, or null. With adapters {@code grads} of
     *             {@link #forwardBackward} is laid out as {@link LoraAdapters#data()}: no gradient of a frozen weight is formed
     */
    public TrainingStep(ModelConfig config, Backend backend, DType io, boolean staticWeights, boolean threeStage, LoraAdapters lora) {
        if (lora != null && !lora.config().equals(config)) throw new IllegalArgumentException("[lora] the adapters are for model " + lora.config().name() + ", not " + config.name());
        this.lora = lora;
        this.loraInputs = lora != null && !staticWeights;
        this.dropout = lora != null ? lora.dropout() : LoraDropout.NONE;
        if (dropout.active() && !loraInputs)
            throw new IllegalArgumentException("[train] loraDropout = " + dropout.p() + " with weights = static: the adapters are merged into the baked weights, which cannot drop their input per step; use weights = dynamic (the default) for dropout");
        this.frozenNormGrads = lora != null ? new float[Math.max(config.dim(), config.headDim())] : null;
        this.threeStage = threeStage;
        this.c = config;
        this.backend = backend;
        this.io = io;
        this.staticWeights = staticWeights;
        this.layout = new ParameterLayout(config);
        this.s = config.seqLen();
        this.d = config.dim();
        this.h = config.hiddenDim();
        this.q = config.qDim();
        this.kv = config.kvDim();
        this.v = config.vocabSize();
        this.nl = config.nLayers();
        TrainingKernels.LoraInputs loraIn = loraInputs ? new TrainingKernels.LoraInputs(lora.rank(), lora.targets()) : null;
        TrainingKernels built = new TrainingKernels(config, io, null, threeStage, loraIn);
        List<TrainingKernels.Spec> all = built.all();
        if (loraInputs) {
            sdpaSlots = built.loraSlots("sdpaFwd");
            ffnSlots = built.loraSlots("ffnFused");
            int n = TrainOptions.LORA_TARGETS.size(), r = lora.rank(), maxIn = Math.max(Math.max(config.dim(), config.hiddenDim()), config.qDim());
            loraU = new float[config.nLayers()][n][];
            for (float[][] row : loraU) for (String t : lora.targets()) row[TrainOptions.LORA_TARGETS.indexOf(t)] = new float[r * config.seqLen()];
            if (dropout.active()) {
                loraMask = new long[config.nLayers()][n][];
                loraX = new float[maxIn * config.seqLen()];
            }
            loraDx = new float[maxIn * config.seqLen()];
            int widest = java.util.stream.Stream.concat(sdpaSlots.values().stream(), ffnSlots.values().stream()).mapToInt(TrainingKernels.LoraSlot::width).max().orElse(0);
            loraPad = new float[new TrainingKernels.LoraInputs(r, lora.targets()).paddedRank() * Math.max(config.seqLen(), Math.max(widest, Math.max(config.qDim(), config.hiddenDim())))];
        }
        int toCompile = staticWeights ? all.size() - WEIGHTED.length : all.size(), compiling = 0;
        for (TrainingKernels.Spec k : all) {
            specs.put(k.name(), k);
            // static mode compiles its own weight-bearing kernels at every stageWeights
            if (!staticWeights || java.util.Arrays.asList(WEIGHTED).indexOf(k.name()) < 0) {
                SetupProgress.reportCompiling(++compiling, toCompile, k.name());
                Kernel compiled;
                try {
                    compiled = backend.compile(k.program());
                } catch (ane4j.backend.AneException e) {
                    if (!e.isBundleCheck()) throw e;
                    throw e.withMessage("[train] kernel " + k.name() + ": " + e.getMessage());   // which kernel, in the one line
                }
                kernels.put(k.name(), compiled);
                compiles++;
                outputs.put(k.name(), compiled.allocateDirectOutput(TrainingKernels.OUTPUT));   // the ANE: its output surface; ref: floats
            } else outputs.put(k.name(), TensorBuffer.allocate(k.program().main().outputs().get(0).type()));
        }
        if (!staticWeights && kernels.get(WEIGHTED[0]).prefersBoundInputs()) {
            bound = new Kernel.Binding[nl][WEIGHTED.length];
            boundStaged = new boolean[nl][WEIGHTED.length];
            for (int l = 0; l < nl; l++) for (int i = 0; i < WEIGHTED.length; i++) {
                bound[l][i] = kernels.get(WEIGHTED[i]).bind();
                specs.get(WEIGHTED[i]).writeConstants(bound[l][i].input(TrainingKernels.INPUT));   // once per bound set, like the weights
            }
        } else {
            weightedInput = new TensorBuffer[WEIGHTED.length];
            stagedLayer = new int[WEIGHTED.length];
            java.util.Arrays.fill(stagedLayer, -1);
            for (int i = 0; i < WEIGHTED.length; i++) {
                weightedInput[i] = staticWeights ? TensorBuffer.allocate(specs.get(WEIGHTED[i]).program().main().inputs().get(0).type())
                        : kernels.get(WEIGHTED[i]).allocateDirectInput(TrainingKernels.INPUT);
                specs.get(WEIGHTED[i]).writeConstants(weightedInput[i]);
            }
        }
        bwd1In = kernels.get("sdpaBwd1").allocateDirectInput(TrainingKernels.INPUT);
        specs.get("sdpaBwd1").writeConstants(bwd1In);                 // the mask and head pads: once, never per step
        TensorBuffer in2 = kernels.get("sdpaBwd2").allocateDirectInput(TrainingKernels.INPUT), out1 = outputs.get("sdpaBwd1");
        // buffers of floats (the reference backend): sdpaBwd1 writes probs and dP where sdpaBwd2 reads them, two views of
        // one buffer [dv | probs, dP | q, k], instead of a copy of 2·NH·S channels per layer between them
        int shift = specs.get("sdpaBwd1").output().start("probs") - specs.get("sdpaBwd2").input().start("probs");
        probsShared = in2.floatHeld() && out1.floatHeld() && shift >= 0 && in2.channelSize() == out1.channelSize()
                && out1.channelCount() <= shift + specs.get("sdpaBwd2").input().start("q");
        if (probsShared) {
            int[] shape = in2.type().shape();
            shape[1] = shift + in2.channelCount();
            TensorBuffer both = TensorBuffer.allocateFloatHeld(in2.type().withShape(shape));
            outputs.put("sdpaBwd1", both.channels(0, out1.channelCount()));
            in2 = both.channels(shift, in2.channelCount());
        }
        bwd2In = in2;
        if (threeStage) valuesIn = kernels.get("attnValues").allocateDirectInput(TrainingKernels.INPUT);
        cosT = CpuOps.channelFirst(RopeTables.cos(config), s, config.headDim());
        sinT = CpuOps.channelFirst(RopeTables.sin(config), s, config.headDim());
        gradSets = new Gradients[] {new Gradients(d, h, q, kv, s), new Gradients(d, h, q, kv, s)};
        if (loraInputs)
            for (Gradients g : gradSets) {
                g.lora = new float[TrainOptions.LORA_TARGETS.size()][];
                for (String t : lora.targets()) g.lora[TrainOptions.LORA_TARGETS.indexOf(t)] = new float[lora.rank() * s];
            }
        acts = new Activations[nl + 1];
        for (int l = 0; l <= nl; l++) acts[l] = allocate(l == nl);
        dxf = new float[d * s]; dy = new float[d * s]; dtmp = new float[d * s]; dxq = new float[d * s];
        da = new float[q * s];
        dxLora = loraInputs ? new float[d * s] : null;
        // grouped-query attention only: K and V tiled to the query heads, and their gradients before the group sums
        boolean gqa = c.nKvHeads() != c.nHeads();
        kTiled = gqa ? new float[q * s] : null; vTiled = gqa ? new float[q * s] : null;
        dvFull = gqa ? new float[q * s] : null; dkFull = gqa ? new float[q * s] : null;
        dqRaw = c.qkNorm() ? new float[q * s] : null;
        dkRaw = c.qkNorm() ? new float[kv * s] : null;
    }

    private Activations allocate(boolean last) {
        Activations a = new Activations();
        a.x = new float[d * s];
        a.xnorm = new float[d * s];
        a.rrmsAtt = new float[s];
        if (last) return a;
        a.attn = new float[q * s]; a.qRope = new float[q * s]; a.kRope = new float[kv * s]; a.vh = new float[kv * s];
        if (c.qkNorm()) { a.qRaw = new float[q * s]; a.kRaw = new float[kv * s]; }
        a.x2 = new float[d * s]; a.x2norm = new float[d * s]; a.rrmsFfn = new float[s];
        a.h1 = new float[h * s]; a.h3 = new float[h * s]; a.gate = new float[h * s];
        return a;
    }

    /** Kernels compiled by this step (10 at construction; static mode adds 8 per layer per weight update). */
    public int compiles() { return compiles; }

    public Map<Phase, Long> phaseNanos() { return phaseNanos; }

    /** Whether each layer's weight-bearing kernels have bound inputs of their own (the backend prefers them). */
    public boolean boundInputs() { return bound != null; }

    /** Activation bytes the last step wrote into kernel inputs (the S columns of the weight-bearing ones, all of the rest). */
    public long stagedActivationBytes() { return activationBytes; }

    /** Weight bytes the last step wrote into kernel inputs (bound inputs: once per {@link #stageWeights}). */
    public long stagedWeightBytes() { return weightBytes.sum(); }

    /** The input of a weight-bearing kernel, holding layer {@code layer}'s weights (staged now if it does not yet). */
    private TensorBuffer input(int layer, String kernel) {
        int i = weighted(kernel);
        if (staticWeights) return weightedInput[i];
        boolean staged = bound != null ? boundStaged[layer][i] : stagedLayer[i] == layer;
        TensorBuffer in = bound != null ? bound[layer][i].input(TrainingKernels.INPUT) : weightedInput[i];
        if (!staged) {
            if (stagedParams == null) throw new IllegalStateException("[train] stageWeights was not called before the first step");
            long t0 = System.nanoTime();
            stageLayer(in, kernel, layout.layer(layer), stagedParams);
            if (bound != null) boundStaged[layer][i] = true;
            else stagedLayer[i] = layer;
            add(Phase.IO, t0);
        }
        return in;
    }

    private static int weighted(String kernel) {
        int i = java.util.Arrays.asList(WEIGHTED).indexOf(kernel);
        if (i < 0) throw new IllegalArgumentException(kernel);
        return i;
    }

    private int col(String kernel, String segment) { return specs.get(kernel).input().start(segment); }

    // -----------------------------------------------------------------------------------------------------------------
    // weights → kernel inputs: after every optimizer update the staged copies are stale; each layer's are written when
    // its kernel is about to run

    /**
     * The weights the following steps use. Dynamic mode reads them lazily, layer by layer, inside {@link #forwardBackward}:
     * call this again after every change to {@code params}. Static mode recompiles the weight-bearing kernels now.
     */
    public void stageWeights(float[] params) {
        if (staticWeights) {
            compileStatic(params);
            return;
        }
        // LoRA with the adapters as inputs: the base is frozen, so what was staged of it stays valid (each forward writes
        // the adapters' regions itself); on the ANE each layer's bound surfaces then get the base once per run
        if (loraInputs && params == stagedParams) return;
        stagedParams = params;
        if (bound != null) for (boolean[] row : boundStaged) java.util.Arrays.fill(row, false);
        else java.util.Arrays.fill(stagedLayer, -1);
    }

    /** Writes the weight segments of one kernel's input for layer w (transposed where the kernel reads Wᵀ). */
    private void stageLayer(TensorBuffer in, String kernel, ParameterLayout.Layer w, float[] params) {
        switch (kernel) {
            case "sdpaFwd" -> {
                parallel(() -> stageHeads(in, kernel, "wqT", weight(params, w, "q")),                          // channel d, column o ← wq[o, d]
                        () -> stageHeads(in, kernel, "wkT", weight(params, w, "k")),
                        () -> stageTransposed(in, col(kernel, "wvT"), weight(params, w, "v")));
                if (c.qkNorm()) {
                    int hd = c.headDim();
                    PackedLayout.Range norms = specs.get(kernel).input().get("qkNorm");           // two heads, padded or not
                    in.writeColumns(0, 1, norms.at(0), hd, params, w.qNorm().offset(), hd);
                    in.writeColumns(0, 1, norms.at(hd), hd, params, w.kNorm().offset(), hd);
                    weightBytes.add(2L * hd * in.dtype().byteSize());
                }
            }
            case "woFwd" -> stageTransposed(in, col(kernel, "woT"), weight(params, w, "o"));
            case "ffnFused" -> parallel(() -> stageTransposed(in, col(kernel, "w1T"), weight(params, w, "w1")),
                    () -> stageTransposed(in, col(kernel, "w3T"), weight(params, w, "w3")),
                    () -> stage(in, col(kernel, "w2"), weight(params, w, "w2")));
            case "ffnBwdW2t" -> stage(in, col(kernel, "w2"), weight(params, w, "w2"));
            case "ffnBwdW13t" -> parallel(() -> stage(in, col(kernel, "w1"), weight(params, w, "w1")), () -> stage(in, col(kernel, "w3"), weight(params, w, "w3")));
            case "wotBwd" -> stage(in, col(kernel, "wo"), weight(params, w, "o"));
            case "qBwd" -> stage(in, col(kernel, "wq"), weight(params, w, "q"));
            case "kvBwd" -> parallel(() -> stage(in, col(kernel, "wk"), weight(params, w, "k")), () -> stage(in, col(kernel, "wv"), weight(params, w, "v")));
            default -> throw new IllegalArgumentException(kernel);
        }
    }

    /** A matrix to stage: where it lives and its view there. */
    private record Weight(float[] array, ParameterView view) {}

    /** Layer w's matrix of a LoRA target (q … w3): W from params, or in static mode W + s·B·A merged into a scratch when adapted. */
    private Weight weight(float[] params, ParameterLayout.Layer w, String target) {
        ParameterView m = LoraAdapters.baseMatrix(w, target);
        if (lora == null || loraInputs || !lora.adapts(target)) return new Weight(params, m);
        float[] dst = merged.computeIfAbsent(target, t -> new float[m.size()]);
        lora.merge(dst, params, w.index(), target);
        return new Weight(dst, new ParameterView(m.name(), 0, m.shape(), m.decay()));
    }

    private static void parallel(Runnable... jobs) { Parallel.forEach(jobs.length, i -> jobs[i].run()); }

    /** Static mode: recompiles every weight-bearing kernel of every layer with the current weights baked in. */
    private void compileStatic(float[] params) {
        long t0 = System.nanoTime();
        if (staticKernels == null) staticKernels = new Kernel[nl][WEIGHTED.length];
        for (int l = 0; l < nl; l++) {
            ParameterLayout.Layer w = layout.layer(l);
            TrainingKernels baked = new TrainingKernels(c, io, seg -> staticBlock(w, seg, params), threeStage);
            for (int i = 0; i < WEIGHTED.length; i++) {
                SetupProgress.reportCompiling(l * WEIGHTED.length + i + 1, nl * WEIGHTED.length, WEIGHTED[i] + " · layer " + (l + 1));
                Kernel k = backend.compile(baked.byName(WEIGHTED[i]).program());
                compiles++;
                if (staticKernels[l][i] != null) staticKernels[l][i].close();
                staticKernels[l][i] = k;
            }
        }
        add(Phase.IO, t0);
    }

    /** The block a weight segment holds, as it would be staged: "wqT" = wqᵀ (D, Q); "w2" = w2 as stored; "qNorm" = qNorm. */
    private float[] staticBlock(ParameterLayout.Layer w, String seg, float[] params) {
        boolean transposed = seg.endsWith("T");
        Weight wt = switch (transposed ? seg.substring(0, seg.length() - 1) : seg) {
            case "wq" -> weight(params, w, "q"); case "wk" -> weight(params, w, "k"); case "wv" -> weight(params, w, "v"); case "wo" -> weight(params, w, "o");
            case "w1" -> weight(params, w, "w1"); case "w2" -> weight(params, w, "w2"); case "w3" -> weight(params, w, "w3");
            case "qNorm" -> new Weight(params, w.qNorm()); case "kNorm" -> new Weight(params, w.kNorm());
            default -> throw new IllegalArgumentException("[train] no weight for segment " + seg);
        };
        ParameterView m = wt.view();
        float[] src = wt.array(), out = new float[m.size()];
        if (!transposed) System.arraycopy(src, m.offset(), out, 0, m.size());
        else for (int i = 0; i < m.rows(); i++) for (int j = 0; j < m.cols(); j++) out[j * m.rows() + i] = src[m.offset() + i * m.cols() + j];
        return out;
    }

    /** Matrix (rows, cols) as stored: channel r, columns [at, at+cols); blocks of rows in parallel. */
    private void stage(TensorBuffer dst, int at, Weight wt) {
        float[] params = wt.array();
        ParameterView m = wt.view();
        int rows = m.rows(), cols = m.cols(), blocks = (rows + STAGE_ROWS - 1) / STAGE_ROWS;
        weightBytes.add((long) rows * cols * dst.dtype().byteSize());
        Parallel.forEach(blocks, b -> {
            int r0 = b * STAGE_ROWS, n = Math.min(STAGE_ROWS, rows - r0);
            dst.writeColumns(r0, n, at, cols, params, m.offset() + r0 * cols, cols);
        });
    }

    /**
     * Wqᵀ or Wkᵀ into segment {@code seg}: where the kernel's heads are padded (head dim not a multiple of 32, ane-audit-2
     * R4) each head's HD columns at the start of its HDp, the zero columns after it written once with the constants.
     */
    private void stageHeads(TensorBuffer in, String kernel, String seg, Weight wt) {
        PackedLayout.Range r = specs.get(kernel).input().get(seg);
        if (!r.padded()) { stageTransposed(in, r.start(), wt); return; }
        ParameterView m = wt.view();
        for (int b = 0; b < r.blocks(); b++)                                                   // head b: rows [b·HD, (b+1)·HD) of W
            stageTransposed(in, r.at(b * r.block()), new Weight(wt.array(), new ParameterView(m.name(), m.offset() + b * r.block() * m.cols(), new int[] {r.block(), m.cols()}, m.decay())));
    }

    /** Rows (or transposed columns) per parallel staging task. */
    private static final int STAGE_ROWS = 64;

    /** Matrix (rows, cols) transposed: channel j, column at+i ← m[i, j]; strips of STAGE_ROWS channels in parallel. */
    private void stageTransposed(TensorBuffer dst, int at, Weight wt) {
        float[] params = wt.array();
        ParameterView m = wt.view();
        int rows = m.rows(), cols = m.cols(), off = m.offset(), strips = (cols + STAGE_ROWS - 1) / STAGE_ROWS;
        weightBytes.add((long) rows * cols * dst.dtype().byteSize());
        boolean fp16 = dst.dtype() == DType.FP16;
        if (dst.floatHeld() || dst.dtype() == DType.FP32) {
            // the segment holds floats: transposed straight into it (OpenBLAS's omatcopy where it runs), then each
            // channel's run rounded to fp16 in place: 0.6–0.76 ns a weight against the heap strips' 1.07–1.17 (two threads)
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

    // -----------------------------------------------------------------------------------------------------------------
    // one sequence: forward (shared by validation and training), loss, backward; gradients (times lossScale) are
    // ACCUMULATED into grads

    /**
     * The validation loss of one sequence: the forward kernels training compiled (no compile, no weight gradient),
     * the classifier and the mean cross-entropy over the counted targets; the gradient buffers and the weights staged
     * in the kernels are untouched.
     */
    public float forwardLoss(float[] params, int[] tokens, int[] targets) {
        forward(params, tokens, targets, -1);
        ParameterView cls = layout.classifier();
        Activations last = acts[nl];
        long tc = System.nanoTime();
        CpuOps.rmsnormForward(last.xnorm, last.rrmsAtt, last.x, params, layout.rmsFinal().offset(), d, s, c.normEps());
        if (logits == null) logits = dlogits = new float[v * s];
        // logits (V,S) = wcls (V,D) · xf (D,S), in the training step's blocks; the loss without its gradient
        for (int v0 = 0; v0 < v; v0 += CLS_BLOCK) {
            int vb = Math.min(CLS_BLOCK, v - v0);
            Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, vb, s, d, 1f, params, cls.offset() + v0 * d, d, last.xnorm, 0, s, 0f, logits, v0 * s, s);
        }
        float loss = CpuOps.crossEntropy(null, logits, targets, v, s, 1f);
        add(Phase.CLASSIFIER, tc);
        return loss;
    }

    /**
     * Embedding and the transformer blocks on the backend: acts[0..nl] hold the activations backward reads.
     * @param sequence the LoRA dropout masks' sequence number (the training step's), −1 for none (validation)
     */
    private void forward(float[] params, int[] tokens, int[] targets, long sequence) {
        this.sequence = dropout.active() ? sequence : -1;
        if (tokens.length != s || targets.length != s) throw new IllegalArgumentException("[train] expected " + s + " tokens and targets, got " + tokens.length + " and " + targets.length);
        for (int t = 0; t < s; t++)
            if (targets[t] < -1 || targets[t] >= v)
                throw new IllegalArgumentException("[train] target " + targets[t] + " at position " + t + " is outside the vocabulary of " + v + " (−1 means ignore); check the data's tokenizer against the model's vocabSize");
        phaseNanos.clear();
        activationBytes = 0;
        weightBytes.reset();
        float eps = c.normEps(), alpha = c.residualScale();
        ParameterView emb = layout.tokenEmbedding();

        // embedding: x0 (D,S) ← tokenEmbedding[token] columns
        float[] x0 = acts[0].x;
        for (int t = 0; t < s; t++) {
            int tok = tokens[t];
            if (tok < 0 || tok >= v) throw new IllegalArgumentException("[train] token " + tok + " at position " + t + " is outside the vocabulary of " + v);
            for (int ch = 0; ch < d; ch++) x0[ch * s + t] = params[emb.offset() + tok * d + ch];
        }

        // transformer blocks
        for (int l = 0; l < nl; l++) {
            Activations a = acts[l];
            ParameterLayout.Layer w = layout.layer(l);
            long t0 = System.nanoTime();
            CpuOps.rmsnormForward(a.xnorm, a.rrmsAtt, a.x, params, w.rmsAtt().offset(), d, s, eps);
            add(Phase.CPU, t0);
            // attention: sdpaFwd then woFwd
            TensorBuffer sdpaIn = input(l, "sdpaFwd");
            for (var e : sdpaSlots.entrySet()) loraInput(sdpaIn, "sdpaFwd", e.getValue(), l, e.getKey(), a.xnorm, d);   // u = s·A·drop(xnorm), Bᵀ
            TensorBuffer out = run("sdpaFwd", l, sdpaIn, 0, a.xnorm, Phase.FORWARD_BACKEND);
            long t1 = System.nanoTime();
            var lay = specs.get("sdpaFwd").output();
            read(out, lay.start("qRope"), a.qRope);
            read(out, lay.start("kRope"), a.kRope);
            read(out, lay.start("v"), a.vh);
            if (c.qkNorm()) { read(out, lay.start("qRaw"), a.qRaw); read(out, lay.start("kRaw"), a.kRaw); }
            add(Phase.IO, t1);
            if (threeStage) threeStageAttention(out, lay.start("scores"), a);
            else read(out, lay.start("attn"), a.attn);
            TensorBuffer o = run("woFwd", l, input(l, "woFwd"), 0, a.attn, Phase.FORWARD_BACKEND);
            long t2 = System.nanoTime();
            read(o, 0, a.x2);
            // residual: x2 = x + α·o
            for (int i = 0; i < d * s; i++) a.x2[i] = a.x[i] + alpha * a.x2[i];
            // LoRA o: x2 += α·s·Bo·(Ao·drop(attn))
            if (loraInputs && lora.adapts("o")) lora.addUp(l, "o", loraForward(l, "o", a.attn, q), alpha * lora.scale(), a.x2);
            CpuOps.rmsnormForward(a.x2norm, a.rrmsFfn, a.x2, params, w.rmsFfn().offset(), d, s, eps);
            add(Phase.CPU, t2);
            // feed-forward with residual: ffnFused
            TensorBuffer ffnIn = input(l, "ffnFused");
            long t3 = System.nanoTime();
            writeActivation(ffnIn, d, col("ffnFused", "x2"), a.x2);
            add(Phase.IO, t3);
            for (var e : ffnSlots.entrySet()) loraInput(ffnIn, "ffnFused", e.getValue(), l, e.getKey(), a.x2norm, d);      // u = s·A·drop(x2norm), Bᵀ
            TensorBuffer f = run("ffnFused", l, ffnIn, 0, a.x2norm, Phase.FORWARD_BACKEND);
            long t4 = System.nanoTime();
            var fl = specs.get("ffnFused").output();
            read(f, fl.start("xNext"), acts[l + 1].x);
            read(f, fl.start("h1"), a.h1);
            read(f, fl.start("h3"), a.h3);
            read(f, fl.start("gate"), a.gate);
            add(Phase.IO, t4);
            // LoRA w2: xNext += α·s·B2·(A2·drop(gate))
            if (loraInputs && lora.adapts("w2")) lora.addUp(l, "w2", loraForward(l, "w2", a.gate, h), alpha * lora.scale(), acts[l + 1].x);
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // LoRA as inputs: the rank-r term y += s·B·A·drop(x) beside the base W the kernels hold

    /** u (r,S) = A·drop(x) of layer l's adapted target, kept for the backward; x is (in,S). Draws the step's mask. */
    private float[] loraForward(int l, String target, float[] x, int in) {
        long t0 = System.nanoTime();
        int ti = TrainOptions.LORA_TARGETS.indexOf(target);
        float[] u = loraU[l][ti];
        if (sequence >= 0) {
            long[] bits = loraMask[l][ti];
            if (bits == null) bits = loraMask[l][ti] = new long[(in * s + 63) >>> 6];
            dropout.mask(dropout.key(sequence, l, ti), bits, in * s);
            dropout.apply(x, bits, loraX, in * s);
            lora.project(l, target, loraX, u);
        } else lora.project(l, target, x, u);
        add(Phase.CPU, t0);
        return u;
    }

    /** Writes a LoRA variant's inputs for one target: s·u (r,S) and Bᵀ (r,OC) into its slot, zero rows up to the padded rank. */
    private void loraInput(TensorBuffer in, String kernel, TrainingKernels.LoraSlot slot, int l, String target, float[] x, int inDim) {
        float[] u = loraForward(l, target, x, inDim);
        long t0 = System.nanoTime();
        int r = lora.rank(), rp = new TrainingKernels.LoraInputs(r, lora.targets()).paddedRank(), oc = lora.b(l, target).rows(), ocp = slot.width();
        float[] pad = loraPad, ad = lora.data();
        float sc = lora.scale();
        java.util.Arrays.fill(pad, 0, rp * Math.max(s, oc), 0f);
        for (int i = 0; i < r * s; i++) pad[i] = sc * u[i];
        in.writeColumns(slot.channel(), rp, col(kernel, slot.u()), s, pad, 0, s);
        activationBytes += (long) rp * s * in.dtype().byteSize();
        // Bᵀ (r, OC): channel j, column slot.column(o) ← B[o, j] (q, k: zero columns after each padded head)
        int bo = lora.b(l, target).offset();
        if (ocp != oc) java.util.Arrays.fill(pad, 0, r * ocp, 0f);
        for (int o = 0; o < oc; o++) for (int j = 0; j < r; j++) pad[j * ocp + slot.column(o)] = ad[bo + o * r + j];
        java.util.Arrays.fill(pad, r * ocp, rp * ocp, 0f);
        in.writeColumns(slot.channel(), rp, col(kernel, slot.bT()), ocp, pad, 0, ocp);
        weightBytes.add((long) rp * ocp * in.dtype().byteSize());
        add(Phase.IO, t0);
    }

    /**
     * The adapter path of one adapted target in the backward, dY (out,S) its output's gradient: g = Bᵀ·dY into the
     * gradient set, dx (in,S) += s·mask/(1−p) ⊙ (Aᵀ·g). The adapter gradients need g, u and drop(x): {@link #loraGrads}.
     */
    private void loraBackward(Gradients gs, int l, String target, float[] dY, float[] dx, int in) {
        long t0 = System.nanoTime();
        int ti = TrainOptions.LORA_TARGETS.indexOf(target);
        float[] g = gs.lora[ti];
        lora.backProject(l, target, dY, g);
        if (sequence < 0) lora.backDown(l, target, g, lora.scale(), 1f, dx);
        else {
            lora.backDown(l, target, g, 1f, 0f, loraDx);
            dropout.addMasked(dx, loraDx, lora.scale(), loraMask[l][ti], in * s);
        }
        add(Phase.CPU, t0);
    }

    /** On the weight-gradient thread: dB += s·dY·uᵀ, dA += s·g·drop(x)ᵀ, with drop(x) rebuilt from the forward's mask. */
    private void loraGrads(float[] grads, Gradients gs, int l, String target, float[] dY, float[] x, int in) {
        int ti = TrainOptions.LORA_TARGETS.indexOf(target);
        float[] xd = x;
        if (sequence >= 0) {
            xd = droppedX.get();
            if (xd.length < in * s) droppedX.set(xd = new float[in * s]);
            dropout.apply(x, loraMask[l][ti], xd, in * s);
        }
        lora.accumulateGradients(grads, l, target, dY, loraU[l][ti], gs.lora[ti], xd);
    }

    /**
     * @param targets the next token at each position, or −1 where the loss does not count (a prompt token under a
     *                completion mask): the loss is the mean over the counted positions, as torch's ignore_index
     */
    public float forwardBackward(float[] params, float[] grads, int[] tokens, int[] targets, float lossScale) {
        return forwardBackward(params, grads, tokens, targets, lossScale, 0);
    }

    /**
     * @param sequence the number of this training sequence in its run (the trainer's micro-step): with LoRA dropout it
     *                 selects the masks ({@link LoraDropout}), so a resumed run draws the same ones
     */
    public float forwardBackward(float[] params, float[] grads, int[] tokens, int[] targets, float lossScale, long sequence) {
        int gradCount = lora == null ? layout.size() : lora.size();
        if (grads.length != gradCount) throw new IllegalArgumentException("[train] grads has " + grads.length + " floats, " + (lora == null ? "the model " : "the adapters ") + gradCount);
        if (sequence < 0) throw new IllegalArgumentException("[train] sequence " + sequence + " must be at least 0");
        forward(params, tokens, targets, sequence);
        float eps = c.normEps(), alpha = c.residualScale();
        ParameterView emb = layout.tokenEmbedding(), cls = layout.classifier();

        // final norm, classifier, loss
        long tc = System.nanoTime();
        Activations last = acts[nl];
        CpuOps.rmsnormForward(last.xnorm, last.rrmsAtt, last.x, params, layout.rmsFinal().offset(), d, s, eps);
        // the loss gradient overwrites the logits in place: one (V,S) array, not two
        if (logits == null) logits = dlogits = new float[v * s];
        float[] logits = this.logits, dlogits = this.dlogits, dxf = this.dxf, dy = this.dy, dtmp = this.dtmp;
        // the classifier runs in blocks of CLS_BLOCK vocabulary rows: BLAS reads the float[] weights in place, and should
        // it copy heap operands instead (-Dane4j.blas.criticalMaxMacs) a block bounds the copy to CLS_BLOCK·D floats
        // logits (V,S) = wcls (V,D) · xf (D,S)
        for (int v0 = 0; v0 < v; v0 += CLS_BLOCK) {
            int vb = Math.min(CLS_BLOCK, v - v0);
            Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, vb, s, d, 1f, params, cls.offset() + v0 * d, d, last.xnorm, 0, s, 0f, logits, v0 * s, s);
        }
        float loss = CpuOps.crossEntropy(dlogits, logits, targets, v, s, lossScale);
        // dxf (D,S) = wclsᵀ · dlogits, summed over the blocks; dwcls (V,D) += dlogits · xfᵀ, block by block
        for (int v0 = 0; v0 < v; v0 += CLS_BLOCK) {
            int vb = Math.min(CLS_BLOCK, v - v0);
            Blas.sgemm(Layout.ROW_MAJOR, Transpose.YES, Transpose.NO, d, s, vb, 1f, params, cls.offset() + v0 * d, d, dlogits, v0 * s, s, v0 == 0 ? 0f : 1f, dxf, 0, s);
        }
        if (lora == null) dw(() -> {
            for (int v0 = 0; v0 < v; v0 += CLS_BLOCK) {
                int vb = Math.min(CLS_BLOCK, v - v0);
                Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, vb, d, s, 1f, dlogits, v0 * s, s, last.xnorm, 0, s, 1f, grads, cls.offset() + v0 * d, d);
            }
        });
        CpuOps.rmsnormBackward(dy, normGrads(grads), normOffset(layout.rmsFinal()), dxf, last.x, params, layout.rmsFinal().offset(), last.rrmsAtt, d, s);
        add(Phase.CLASSIFIER, tc);

        // transformer blocks in reverse
        for (int l = nl - 1; l >= 0; l--) {
            final int layer = l;
            Activations a = acts[l];
            ParameterLayout.Layer w = layout.layer(l);
            Gradients g = gradSets[l & 1];
            awaitReader(g);
            // FFN: dffn = α·dy → dgate = W2ᵀ·dffn
            for (int i = 0; i < d * s; i++) g.dffn[i] = alpha * dy[i];
            read(run("ffnBwdW2t", l, input(l, "ffnBwdW2t"), 0, g.dffn, Phase.BACKWARD_BACKEND), 0, g.dgate);
            if (loraAt("w2")) {
                loraBackward(g, l, "w2", g.dffn, g.dgate, h);                              // dgate += s·m ⊙ A2ᵀ·B2ᵀ·dffn
                dw(() -> loraGrads(grads, g, layer, "w2", g.dffn, a.gate, h));
            } else dw(() -> weightGrad(grads, w, "w2", g.dffn, a.gate));                   // dW2 (D,H) += dffn·gateᵀ
            long t0 = System.nanoTime();
            CpuOps.swigluBackward(g.dh1, g.dh3, g.dgate, a.h1, a.h3, h * s);
            add(Phase.CPU, t0);
            TensorBuffer w13 = input(l, "ffnBwdW13t");
            writeActivation(w13, h, col("ffnBwdW13t", "dh3"), g.dh3);
            read(run("ffnBwdW13t", l, w13, 0, g.dh1, Phase.BACKWARD_BACKEND), 0, dtmp);
            if (loraInputs) {
                // dx2norm += s·m ⊙ Aᵀ·Bᵀ·dh of w1 and w3
                if (lora.adapts("w1")) { loraBackward(g, l, "w1", g.dh1, dtmp, d); dw(() -> loraGrads(grads, g, layer, "w1", g.dh1, a.x2norm, d)); }
                if (lora.adapts("w3")) { loraBackward(g, l, "w3", g.dh3, dtmp, d); dw(() -> loraGrads(grads, g, layer, "w3", g.dh3, a.x2norm, d)); }
            } else dw(() -> { weightGrad(grads, w, "w1", g.dh1, a.x2norm); weightGrad(grads, w, "w3", g.dh3, a.x2norm); });
            // dx2 = rmsnorm_bwd(dffn path) + dy (residual)
            long t1 = System.nanoTime();
            CpuOps.rmsnormBackward(g.dx2, normGrads(grads), normOffset(w.rmsFfn()), dtmp, a.x2, params, w.rmsFfn().offset(), a.rrmsFfn, d, s);
            for (int i = 0; i < d * s; i++) { g.dx2[i] += dy[i]; g.dO[i] = alpha * g.dx2[i]; }
            add(Phase.CPU, t1);
            // attention output projection: da = Woᵀ·(α·dx2)
            read(run("wotBwd", l, input(l, "wotBwd"), 0, g.dO, Phase.BACKWARD_BACKEND), 0, da);
            if (loraAt("o")) {
                loraBackward(g, l, "o", g.dO, da, q);                                      // da += s·m ⊙ Aoᵀ·Boᵀ·dO, before sdpaBwd1 reads it
                dw(() -> loraGrads(grads, g, layer, "o", g.dO, a.attn, q));
            } else dw(() -> weightGrad(grads, w, "o", g.dO, a.attn));                      // dWo (D,Q) += α·dx2·attnᵀ
            // attention core: recompute probs, dV, dP (sdpaBwd1), then dQ, dK (sdpaBwd2), on heads tiled to NH
            long t2 = System.nanoTime();
            // (multi-head attention, NKV = NH: the heads are already tiled, K and V go in as they are)
            boolean mha = c.nKvHeads() == c.nHeads();
            if (!mha) {
                CpuOps.tileKv(kTiled, a.kRope, c.nHeads(), c.nKvHeads(), c.headDim(), s);
                CpuOps.tileKv(vTiled, a.vh, c.nHeads(), c.nKvHeads(), c.headDim(), s);
            }
            var b1 = specs.get("sdpaBwd1").input();                                     // head by head where its heads are padded (R4)
            b1.writeChannels(bwd1In, "q", a.qRope, 0);
            b1.writeChannels(bwd1In, "k", mha ? a.kRope : kTiled, 0);
            b1.writeChannels(bwd1In, "v", mha ? a.vh : vTiled, 0);
            b1.writeChannels(bwd1In, "da", da, 0);
            activationBytes += 4L * q * s * bwd1In.dtype().byteSize();
            add(Phase.IO, t2);
            TensorBuffer o1 = eval("sdpaBwd1", -1, bwd1In, Phase.BACKWARD_BACKEND);
            long t3 = System.nanoTime();
            var l1 = specs.get("sdpaBwd1").output();
            var b2 = specs.get("sdpaBwd2").input();
            read(o1, l1.start("dv"), mha ? g.dv : dvFull);
            if (!probsShared) bwd2In.copyChannels(o1, l1.start("probs"), b2.start("probs"), 2 * c.nHeads() * s);   // probs and dp, adjacent in both
            PackedLayout.Range hq = b1.get("q");                                       // q and k tiled, adjacent in both; sdpaBwd2's heads unpadded
            for (int i = 0; i < 2 * hq.blocks(); i++) bwd2In.copyChannels(bwd1In, hq.start() + i * hq.stride(), b2.start("q") + i * hq.block(), hq.block());
            activationBytes += ((probsShared ? 0 : 2L * c.nHeads() * s) + 2L * q) * s * bwd2In.dtype().byteSize();
            add(Phase.IO, t3);
            TensorBuffer o2 = eval("sdpaBwd2", -1, bwd2In, Phase.BACKWARD_BACKEND);
            long t4 = System.nanoTime();
            var l2 = specs.get("sdpaBwd2").output();
            read(o2, l2.start("dq"), g.dq);
            read(o2, l2.start("dk"), mha ? g.dk : dkFull);
            if (!mha) {
                CpuOps.reduceKv(g.dk, dkFull, c.nHeads(), c.nKvHeads(), c.headDim(), s);
                CpuOps.reduceKv(g.dv, dvFull, c.nHeads(), c.nKvHeads(), c.headDim(), s);
            }
            // RoPE backward, then QK-norm backward to the raw projections
            CpuOps.ropeBackward(g.dq, c, c.nHeads(), cosT, sinT);
            CpuOps.ropeBackward(g.dk, c, c.nKvHeads(), cosT, sinT);
            if (c.qkNorm()) {
                CpuOps.headNormBackward(dqRaw, normGrads(grads), normOffset(w.qNorm()), g.dq, a.qRaw, params, w.qNorm().offset(), c.nHeads(), c.headDim(), s, c.normEps());
                CpuOps.headNormBackward(dkRaw, normGrads(grads), normOffset(w.kNorm()), g.dk, a.kRaw, params, w.kNorm().offset(), c.nKvHeads(), c.headDim(), s, c.normEps());
                System.arraycopy(dqRaw, 0, g.dq, 0, q * s);
                System.arraycopy(dkRaw, 0, g.dk, 0, kv * s);
            }
            add(Phase.CPU, t4);
            if (loraInputs) {
                // the adapter paths' dx go to dxLora (D,S), added to the kernels' dx below
                java.util.Arrays.fill(dxLora, 0f);
                if (lora.adapts("q")) loraBackward(g, l, "q", g.dq, dxLora, d);
                if (lora.adapts("k")) loraBackward(g, l, "k", g.dk, dxLora, d);
                if (lora.adapts("v")) loraBackward(g, l, "v", g.dv, dxLora, d);
                g.lastReader = dw(() -> {
                    if (lora.adapts("q")) loraGrads(grads, g, layer, "q", g.dq, a.xnorm, d);
                    if (lora.adapts("k")) loraGrads(grads, g, layer, "k", g.dk, a.xnorm, d);
                    if (lora.adapts("v")) loraGrads(grads, g, layer, "v", g.dv, a.xnorm, d);
                });
            } else g.lastReader = dw(() -> { weightGrad(grads, w, "q", g.dq, a.xnorm); weightGrad(grads, w, "k", g.dk, a.xnorm); weightGrad(grads, w, "v", g.dv, a.xnorm); });
            // LoRA: nothing below layer 0's projections trains (embedding and norms are frozen), so its input gradient is unused
            if (lora != null && l == 0) continue;
            // dx through the projections: Wqᵀ·dq + Wkᵀ·dk + Wvᵀ·dv
            read(run("qBwd", l, input(l, "qBwd"), 0, g.dq, Phase.BACKWARD_BACKEND), 0, dxq);
            TensorBuffer kvIn = input(l, "kvBwd");
            writeActivation(kvIn, kv, col("kvBwd", "dv"), g.dv);
            read(run("kvBwd", l, kvIn, 0, g.dk, Phase.BACKWARD_BACKEND), 0, dtmp);
            long t5 = System.nanoTime();
            for (int i = 0; i < d * s; i++) dtmp[i] += dxq[i];
            if (loraInputs) for (int i = 0; i < d * s; i++) dtmp[i] += dxLora[i];
            // dy_prev = rmsnorm_bwd(dx_attn) + dx2 (residual); dy is not read after this point of the layer, so it is reused
            CpuOps.rmsnormBackward(dy, normGrads(grads), normOffset(w.rmsAtt()), dtmp, a.x, params, w.rmsAtt().offset(), a.rrmsAtt, d, s);
            for (int i = 0; i < d * s; i++) dy[i] += g.dx2[i];
            add(Phase.CPU, t5);
        }

        // every dW must land before the embedding scatter touches the (possibly tied) embedding gradient
        waitForDw();
        if (lora == null) for (int t = 0; t < s; t++) {
            int off = emb.offset() + tokens[t] * d;
            for (int ch = 0; ch < d; ch++) grads[off + ch] += dy[ch * s + t];
        }
        return loss;
    }

    /** Stages 2 and 3: causal mask + softmax of the scores on the CPU, then P·V on the backend into a.attn (Q,S). */
    private void threeStageAttention(TensorBuffer sdpaOut, int scoresChannel, Activations a) {
        long t0 = System.nanoTime();
        int nh = c.nHeads();
        float[] row = new float[s];
        for (int r = 0; r < nh * s; r++) {
            int i = r % s;                                                           // query position of this row
            sdpaOut.copyTo((long) (scoresChannel + r) * s, row, 0, s);
            // softmax over keys 0..i (the causal mask), zeros after
            float max = Float.NEGATIVE_INFINITY;
            for (int j = 0; j <= i; j++) max = Math.max(max, row[j]);
            double sum = 0;
            for (int j = 0; j <= i; j++) sum += (row[j] = (float) Math.exp(row[j] - max));
            for (int j = 0; j < s; j++) row[j] = j <= i ? (float) (row[j] / sum) : 0f;
            valuesIn.copyFrom(row, 0, (long) r * s, s);
        }
        activationBytes += (long) nh * s * s * valuesIn.dtype().byteSize();
        float[] vTiled = new float[c.qDim() * s];
        CpuOps.tileKv(vTiled, a.vh, nh, c.nKvHeads(), c.headDim(), s);
        valuesIn.copyFrom(vTiled, 0, (long) specs.get("attnValues").input().start("v") * s, vTiled.length);
        activationBytes += (long) vTiled.length * valuesIn.dtype().byteSize();
        add(Phase.CPU, t0);
        read(eval("attnValues", -1, valuesIn, Phase.FORWARD_BACKEND), 0, a.attn);
    }

    /** Whether target's adapter path runs on the CPU beside the base kernels (LoRA as inputs, target adapted). */
    private boolean loraAt(String target) { return loraInputs && lora.adapts(target); }

    /** The gradient of one projection: dW in full training; with LoRA the adapters' (if it is adapted), never the frozen dW. */
    private void weightGrad(float[] grads, ParameterLayout.Layer w, String target, float[] dY, float[] x) {
        if (lora == null) dW(grads, LoraAdapters.baseMatrix(w, target), dY, x);
        else if (lora.adapts(target)) lora.accumulateGradients(grads, w.index(), target, dY, x);
    }

    /** Where RMSNorm/QK-norm backward accumulate the norm weight's gradient: grads, or with LoRA (frozen norms) a scratch. */
    private float[] normGrads(float[] grads) { return lora == null ? grads : frozenNormGrads; }

    private int normOffset(ParameterView norm) { return lora == null ? norm.offset() : 0; }

    /** dW (out,in) += dY (out,S) · Xᵀ (S,in). */
    private void dW(float[] grads, ParameterView w, float[] dY, float[] x) {
        Blas.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.YES, w.rows(), w.cols(), s, 1f, dY, 0, s, x, 0, s, 1f, grads, w.offset(), w.cols());
    }

    private Future<?> dw(Runnable task) {
        Future<?> f = dwThread.submit(task);
        pendingDw.add(f);
        return f;
    }

    /** Waits until the weight-gradient thread has finished reading a scratch set (tasks run in order: the last one). */
    private void awaitReader(Gradients g) {
        if (g.lastReader == null) return;
        long t0 = System.nanoTime();
        await(g.lastReader);
        g.lastReader = null;
        add(Phase.DW_WAIT, t0);
    }

    private static void await(Future<?> f) {
        try {
            f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("[train] interrupted while waiting for weight gradients", e);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException("[train] a weight-gradient sgemm failed: " + e.getCause(), e.getCause());
        }
    }

    private void waitForDw() {
        long t0 = System.nanoTime();
        try {
            for (Future<?> f : pendingDw) await(f);
        } finally {
            pendingDw.clear();
            for (Gradients g : gradSets) g.lastReader = null;
        }
        add(Phase.DW_WAIT, t0);
    }

    /** Writes act (C,S) into the first S columns of in, then evaluates the kernel. */
    private TensorBuffer run(String kernel, int layer, TensorBuffer in, int column, float[] act, Phase phase) {
        long t0 = System.nanoTime();
        writeActivation(in, in.channelCount(), column, act);
        add(Phase.IO, t0);
        return eval(kernel, layer, in, phase);
    }

    /** act (C,S) into columns [column, column+S) of the first C channels of in. */
    private void writeActivation(TensorBuffer in, int channels, int column, float[] act) {
        in.writeColumns(0, channels, column, s, act, 0, s);
        activationBytes += (long) channels * s * in.dtype().byteSize();
    }

    /**
     * Evaluates a kernel (layer −1 for the weight-free ones): a weight-bearing one on the layer's bound input when it has
     * one (in is that input), in static mode the layer's own compiled kernel.
     */
    private TensorBuffer eval(String kernel, int layer, TensorBuffer in, Phase phase) {
        long t0 = System.nanoTime();
        TensorBuffer out = outputs.get(kernel);
        Map<String, TensorBuffer> outs = Map.of(TrainingKernels.OUTPUT, out);
        if (bound != null && layer >= 0) bound[layer][weighted(kernel)].evaluate(outs);
        else if (staticWeights && layer >= 0) staticKernels[layer][weighted(kernel)].evaluate(Map.of(TrainingKernels.INPUT, in), outs);
        else kernels.get(kernel).evaluate(Map.of(TrainingKernels.INPUT, in), outs);
        add(phase, t0);
        return out;
    }

    /** Channels [from, from + dst.length/S) of a (C,S) output into dst. */
    private void read(TensorBuffer out, int fromChannel, float[] dst) {
        out.copyTo((long) fromChannel * s, dst, 0, dst.length);
    }

    private void add(Phase p, long t0) { phaseNanos.merge(p, System.nanoTime() - t0, Long::sum); }

    @Override public void close() {
        dwThread.shutdownNow();
        if (bound != null) for (Kernel.Binding[] row : bound) for (Kernel.Binding b : row) b.close();
        for (Kernel k : kernels.values()) k.close();
        if (staticKernels != null) for (Kernel[] row : staticKernels) for (Kernel k : row) if (k != null) k.close();
    }
}
