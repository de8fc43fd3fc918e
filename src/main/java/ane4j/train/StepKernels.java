package ane4j.train;

import ane4j.backend.AneException;
import ane4j.backend.Backend;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.model.ModelConfig;
import ane4j.run.SetupProgress;
import ane4j.train.TrainingKernels.Name;
import ane4j.train.TrainingStep.Phase;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

import static ane4j.train.TrainingKernels.INPUT;
import static ane4j.train.TrainingKernels.Name.*;
import static ane4j.train.TrainingKernels.OUTPUT;

/**
 * The kernels of a {@link TrainingStep} on its backend: compiled once (static weights: the weight-bearing ones by
 * {@link WeightStaging.Baked}), their outputs, the weight-free kernels' inputs, and the copies between the step's
 * channel-first (C,S) float arrays and the kernels' buffers. Copies are timed as {@link Phase#IO} and their activation
 * bytes counted; evaluations are timed as the phase the step names.
 * <pre>Legend: S = seqLen, Q = nHeads·headDim, NH = nHeads.</pre>
 */
final class StepKernels implements AutoCloseable {
    private final ModelConfig c;
    private final int s;
    private final Map<Name, Kernel> kernels = new EnumMap<>(Name.class);                 // compiled here (static weights: not the weighted ones)
    private final Map<Name, TrainingKernels.Spec> specs = new EnumMap<>(Name.class);      // each kernel's program and packed layouts
    private final Map<Name, TensorBuffer> outputs = new EnumMap<>(Name.class);             // each kernel's output (C,S), reused by every evaluation
    private final WeightStaging staging;
    private final StepTimer timer;
    private int compiles;
    private long activationBytes;                      // written into kernel inputs since resetCounts (LoRA's apart)

    // the weight-free kernels' inputs
    private final TensorBuffer bwd1In;                 // sdpaBwd1 (4·Q, S): q, k, v tiled to NH heads, da
    private final TensorBuffer bwd2In;                 // sdpaBwd2 (2·NH·S + 2·Q, S): probs, dP, q, k
    /** Whether sdpaBwd1's output and sdpaBwd2's input share the probs and dP channels (buffers of floats). */
    private final boolean probsShared;
    private final TensorBuffer valuesIn;               // attnValues (NH·S + Q, S): probs and V tiled, three-stage attention only

    /**
     * Compiles the step's kernels and picks its {@link WeightStaging}: bound inputs where the backend prefers them,
     * staged on demand elsewhere, baked with static weights.
     * @param loraInputs whether the adapters reach the kernels as inputs (the frozen base is then staged once)
     */
    StepKernels(ModelConfig c, Backend backend, TrainingStep.Options o, TrainingKernels built, boolean loraInputs, StepTimer timer) {
        this.c = c;
        this.s = c.seqLen();
        this.timer = timer;
        List<Name> names = new ArrayList<>(Name.ten());
        if (o.threeStage()) names.add(ATTN_VALUES);
        int toCompile = o.staticWeights() ? names.size() - WeightStaging.WEIGHTED.size() : names.size(), compiling = 0;
        for (Name name : names) {
            TrainingKernels.Spec k = built.build(name);
            specs.put(name, k);
            if (o.staticWeights() && name.weighted()) {
                outputs.put(name, TensorBuffer.allocate(k.program().main().outputs().get(0).type()));
                continue;
            }
            SetupProgress.reportCompiling(++compiling, toCompile, name.id());
            Kernel compiled;
            try {
                compiled = backend.compile(k.program());
            } catch (AneException e) {
                if (!e.isBundleCheck()) throw e;
                throw e.withMessage("[train] kernel " + name.id() + ": " + e.getMessage());   // which kernel, in the one line
            }
            kernels.put(name, compiled);
            compiles++;
            outputs.put(name, compiled.allocateDirectOutput(OUTPUT));   // the ANE: its output surface; ref: floats
        }
        this.staging = o.staticWeights() ? new WeightStaging.Baked(c, o.io(), o.threeStage(), specs, backend, o.lora(), timer)
                : kernels.get(SDPA_FWD).prefersBoundInputs() ? new WeightStaging.Bound(c, specs, kernels, timer, loraInputs)
                : new WeightStaging.OnDemand(c, specs, kernels, timer, loraInputs);

        bwd1In = kernels.get(SDPA_BWD1).allocateDirectInput(INPUT);
        specs.get(SDPA_BWD1).writeConstants(bwd1In);                  // the mask and head pads: once, never per step
        TensorBuffer in2 = kernels.get(SDPA_BWD2).allocateDirectInput(INPUT), out1 = outputs.get(SDPA_BWD1);
        // buffers of floats (the reference backend): sdpaBwd1 writes probs and dP where sdpaBwd2 reads them, two views of
        // one buffer [dv | probs, dP | q, k], instead of a copy of 2·NH·S channels per layer between them
        int shift = specs.get(SDPA_BWD1).output().start("probs") - specs.get(SDPA_BWD2).input().start("probs");
        probsShared = in2.floatHeld() && out1.floatHeld() && shift >= 0 && in2.channelSize() == out1.channelSize()
                && out1.channelCount() <= shift + specs.get(SDPA_BWD2).input().start("q");
        if (probsShared) {
            int[] shape = in2.type().shape();
            shape[1] = shift + in2.channelCount();
            TensorBuffer both = TensorBuffer.allocateFloatHeld(in2.type().withShape(shape));
            outputs.put(SDPA_BWD1, both.channels(0, out1.channelCount()));
            in2 = both.channels(shift, in2.channelCount());
        }
        bwd2In = in2;
        valuesIn = o.threeStage() ? kernels.get(ATTN_VALUES).allocateDirectInput(INPUT) : null;
    }

    WeightStaging staging() { return staging; }

    /** Kernels compiled so far (10 here; static weights add 8 per layer per weight update). */
    int compiles() { return compiles + staging.compiles(); }

    /** Before a forward: the byte counts start again. */
    void resetCounts() {
        activationBytes = 0;
        staging.resetWeightBytes();
    }

    /** Activation bytes written into kernel inputs since {@link #resetCounts()} (LoRA's apart). */
    long activationBytes() { return activationBytes; }

    /** The input layout of {@code kernel}. */
    PackedLayout inputLayout(Name kernel) { return specs.get(kernel).input(); }

    // -----------------------------------------------------------------------------------------------------------------
    // the weight-bearing kernels: one input per layer (or staged when the layer runs), its first S columns the activation

    /** Layer {@code layer}'s input of weight-bearing {@code kernel}, holding its weights (see {@link WeightStaging#input}). */
    TensorBuffer input(int layer, Name kernel) { return staging.input(layer, kernel); }

    /** Writes act (C,S) into the input's columns of segment {@code segment}, its first C channels. */
    void write(TensorBuffer in, Name kernel, String segment, int channels, float[] act) {
        try (var _ = timer.phase(Phase.IO)) {
            writeColumns(in, channels, specs.get(kernel).input().start(segment), act);
        }
    }

    /** Writes act (C,S) into the first S columns of {@code in}, then evaluates layer {@code layer}'s {@code kernel} on it. */
    void run(Name kernel, int layer, TensorBuffer in, float[] act, Phase phase) {
        try (var _ = timer.phase(Phase.IO)) {
            writeColumns(in, in.channelCount(), 0, act);
        }
        eval(kernel, layer, in, phase);
    }

    /** {@link #run} on the layer's input as the staging holds it. */
    void run(Name kernel, int layer, float[] act, Phase phase) { run(kernel, layer, input(layer, kernel), act, phase); }

    /** Output segment {@code segment} of {@code kernel}'s last evaluation into dst (C,S). */
    void read(Name kernel, String segment, float[] dst) {
        try (var _ = timer.phase(Phase.IO)) {
            read(outputs.get(kernel), specs.get(kernel).output().start(segment), dst);
        }
    }

    /** The first channels of {@code kernel}'s last output into dst (C,S): a one-result kernel's result. */
    void read(Name kernel, float[] dst) {
        try (var _ = timer.phase(Phase.IO)) {
            read(outputs.get(kernel), 0, dst);
        }
    }

    // -----------------------------------------------------------------------------------------------------------------
    // the weight-free kernels: attention backward (and three-stage attention's P·V)

    /**
     * sdpaBwd1, recomputing the probabilities from q, k, v (Q,S) tiled to NH heads and the attention output's gradient
     * da (Q,S): dv (Q,S) into dv; probs and dP stay for {@link #sdpaBwd2}, and q, k are handed to it.
     */
    void sdpaBwd1(float[] q, float[] k, float[] v, float[] da, float[] dv) {
        PackedLayout b1 = specs.get(SDPA_BWD1).input(), b2 = specs.get(SDPA_BWD2).input();
        try (var _ = timer.phase(Phase.IO)) {
            // head by head where sdpaBwd1's heads are padded (R4)
            b1.writeChannels(bwd1In, "q", q, 0);
            b1.writeChannels(bwd1In, "k", k, 0);
            b1.writeChannels(bwd1In, "v", v, 0);
            b1.writeChannels(bwd1In, "da", da, 0);
            activationBytes += 4L * c.qDim() * s * bwd1In.dtype().byteSize();
        }
        TensorBuffer o1 = eval(SDPA_BWD1, -1, bwd1In, Phase.BACKWARD_BACKEND);
        try (var _ = timer.phase(Phase.IO)) {
            read(o1, specs.get(SDPA_BWD1).output().start("dv"), dv);
            int o1probs = specs.get(SDPA_BWD1).output().start("probs");
            if (!probsShared) bwd2In.copyChannels(o1, o1probs, b2.start("probs"), 2 * c.nHeads() * s);   // probs and dp, adjacent in both
            PackedLayout.Range hq = b1.get("q");                   // q and k tiled, adjacent in both; sdpaBwd2's heads unpadded
            for (int i = 0; i < 2 * hq.blocks(); i++) bwd2In.copyChannels(bwd1In, hq.start() + i * hq.stride(), b2.start("q") + i * hq.block(), hq.block());
            activationBytes += ((probsShared ? 0 : 2L * c.nHeads() * s) + 2L * c.qDim()) * s * bwd2In.dtype().byteSize();
        }
    }

    /** sdpaBwd2 on the probabilities, dP, q and k sdpaBwd1 left: dq, dk (Q,S), heads tiled to NH. */
    void sdpaBwd2(float[] dq, float[] dk) {
        eval(SDPA_BWD2, -1, bwd2In, Phase.BACKWARD_BACKEND);
        read(SDPA_BWD2, "dq", dq);
        read(SDPA_BWD2, "dk", dk);
    }

    /**
     * Three-stage attention's stages 2 and 3 (docs/ane-facts.md §5.5): the causal softmax of sdpaFwd's scaled scores
     * (NH·S, S) on the CPU, then attn (Q,S) = P·V on attnValues, vTiled (Q,S) the values tiled to NH heads.
     */
    void attnValues(float[] vTiled, float[] attn) {
        TensorBuffer sdpaOut = outputs.get(SDPA_FWD);
        int scores = specs.get(SDPA_FWD).output().start("scores");
        try (var _ = timer.phase(Phase.CPU)) {
            float[] row = new float[s];
            for (int r = 0; r < c.nHeads() * s; r++) {
                sdpaOut.copyTo((long) (scores + r) * s, row, 0, s);
                CpuOps.causalSoftmax(row, r % s, s);                        // query position r mod S
                valuesIn.copyFrom(row, 0, (long) r * s, s);
            }
            activationBytes += (long) c.nHeads() * s * s * valuesIn.dtype().byteSize();
            valuesIn.copyFrom(vTiled, 0, (long) specs.get(ATTN_VALUES).input().start("v") * s, vTiled.length);
            activationBytes += (long) vTiled.length * valuesIn.dtype().byteSize();
        }
        eval(ATTN_VALUES, -1, valuesIn, Phase.FORWARD_BACKEND);
        read(ATTN_VALUES, attn);
    }

    // -----------------------------------------------------------------------------------------------------------------

    /** act (C,S) into columns [column, column+S) of the first C channels of in. */
    private void writeColumns(TensorBuffer in, int channels, int column, float[] act) {
        in.writeColumns(0, channels, column, s, act, 0, s);
        activationBytes += (long) channels * s * in.dtype().byteSize();
    }

    /** Evaluates a kernel: a weight-bearing one as the staging holds it for the layer, a weight-free one (layer −1) on in. */
    private TensorBuffer eval(Name kernel, int layer, TensorBuffer in, Phase phase) {
        try (var _ = timer.phase(phase)) {
            TensorBuffer out = outputs.get(kernel);
            Map<String, TensorBuffer> outs = Map.of(OUTPUT, out);
            if (kernel.weighted()) staging.evaluate(kernel, layer, in, outs);
            else kernels.get(kernel).evaluate(Map.of(INPUT, in), outs);
            return out;
        }
    }

    /** Channels [from, from + dst.length/S) of a (C,S) output into dst; timed by the caller. */
    private void read(TensorBuffer out, int fromChannel, float[] dst) {
        out.copyTo((long) fromChannel * s, dst, 0, dst.length);
    }

    @Override public void close() {
        staging.close();
        for (Kernel k : kernels.values()) k.close();
    }
}
