package ane4j.train;

import ane4j.mil.DType;
import ane4j.mil.FunctionBuilder;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import ane4j.model.ModelConfig;
import ane4j.model.RopeStyle;

import java.util.List;

/**
 * The ten dynamic-weight kernels of the training step (docs/ane-facts.md §5.3), built with the fluent MIL API for any config.
 * Each takes one fp16 input {@code [1, IC, 1, W]}: activations in the first SEQ columns of every channel and weight rows in
 * the columns after them, so the kernels are compiled once and new weights are simply written into the input.
 * <pre>
 * Legend: S = seqLen, D = dim, H = hiddenDim, Q = nHeads·headDim, KV = nKvHeads·headDim, NH = nHeads, HD = headDim.
 * forward : sdpaFwd (attention with RoPE, GQA, optional QK-norm), woFwd, ffnFused (SwiGLU + residual)
 * backward: ffnBwdW2t, ffnBwdW13t, wotBwd, sdpaBwd1, sdpaBwd2, qBwd, kvBwd
 * </pre>
 * Causal masking is an explicit add of a mask (−65504 above the diagonal): the ANE ignores the mask of
 * scaled_dot_product_attention (docs/ane-facts.md §5.5).
 * <p>
 * No kernel carries a weight file (a BLOBFILE constant) in dynamic-weights mode: the RoPE tables, the rotation and the
 * causal mask are {@link Constant}s, column (or channel) regions of the packed input that the caller
 * writes once into every input set it allocates ({@link Spec#writeConstants}), like the weights, never per step. macOS 27
 * fails the compile of a program with two or more weight files (Code=10 {@code verifyBundleAtPath}; docs/macos27-ane.md
 * C2), and an input region is a layout that works on every OS and chip. The values are the same fp16/fp32 numbers the
 * constants held, so the kernels compute the same bits (TrainingKernelsConstantsTest).
 * <p>
 * Patterns and the hardware-run projects that used them (docs/ane-audit-2.md; none ran here):
 * <ul>
 * <li>weights as input columns, sliced and reshaped to [IC, OC], activations transposed into the matmul: maderix
 *     {@code training/training_dynamic/mil_dynamic.h} (M4, M1 Pro/Max); the constants reuse that slice + reshape;
 * <li>causal mask as an explicit add before softmax: maderix's SDPA kernels (the ANE ignores SDPA's mask, docs/ane-facts.md §5.5);
 * <li>GQA by slicing KV heads on axis 1 and concatenating copies: rustane {@code tile_kv_heads} (M4);
 * <li>RoPE rotation by reshape/slice/concat: maderix and rustane (M4), where the axis fits; the ±1 permutation matmul
 *     beyond it: described by rustane PR #9 (M3 Ultra), run by no code we could open ({@link #provenRotation});
 * <li>head dims that are not a multiple of 32 (stories15m: 48) padded through the staged inputs, not in the graph
 *     (ane-audit-2 R4): Wqᵀ and Wkᵀ are staged with zero columns after each head ({@link PackedLayout.Builder#addPadded}),
 *     so the q and k projections come out of the matmul as whole padded heads, and sdpaBwd1's q, k, v and dA regions
 *     hold zero channels after each head; the RoPE tables and rotation have zero columns there. No kernel concatenates
 *     on the width axis at a head boundary any more; the padded heads leave as channels (a slice on the head-dim axis
 *     after the transpose to channels, {@link #fromHeads}). Zero columns in a matmul operand are maderix's
 *     dynamic-weight layout itself; padding a head this way ran on no hardware we know of. QK-norm as
 *     reduce_sum/pow/mul: no hardware-run ANE kernel we could open.
 * </ul>
 * Every pad position is an exact zero, so each head-dim contraction adds the same products and zeros, and the outputs
 * drop the pads: the forward (and the loss) is the same bits as with the in-graph concat; sdpaBwd1's score product now
 * reads its operands transposed in place, which BLAS may sum in another order (last-bit differences in the gradients
 * on the reference backend). Checked against PyTorch by TrainingGoldenTest (heads of 8 and 16) and HeadPaddingTest.
 */
public final class TrainingKernels {
    /**
     * A training kernel built for one config: its program, where inputs and outputs sit in its packed tensors, and the
     * constants its input carries.
     */
    public record Spec(String name, Program program, PackedLayout input, PackedLayout output, List<Constant> constants) {
        public Spec {
            constants = List.copyOf(constants);
        }

        public Spec(String name, Program program, PackedLayout input, PackedLayout output) {
            this(name, program, input, output, List.of());
        }

        /**
         * Writes every constant into {@code in}, an input of this kernel, and zeros the pads of its head-padded segments:
         * once per allocated or bound input set.
         */
        public void writeConstants(ane4j.backend.TensorBuffer in) {
            input.zeroPads(in);
            for (Constant k : constants) in.writeColumns(k.channel(), k.rows(), k.column(), k.cols(), k.values(), 0, k.cols());
        }
    }

    /**
     * A constant carried by the packed input: {@code values} (row-major, rows × cols) in channels
     * [channel, channel + rows) and columns [column, column + cols) of segment {@code segment}. The kernel slices that
     * block and reshapes it to the constant's shape (row-major order is kept, so any factorisation rows × cols of the
     * element count is the same tensor).
     */
    public record Constant(String segment, int channel, int column, int rows, int cols, float[] values) {}

    /**
     * LoRA adapters that reach sdpaFwd (q, k, v) and ffnFused (w1, w3) as inputs: the LoRA variants of those two kernels
     * read u = s·A·drop(x) (r, S) and Bᵀ (r, OC) from extra column regions of their one packed input and add B·u to the
     * projection (o and w2 meet the residual on the CPU, every backward kernel keeps the base W: no variant). One packed
     * input, not extra inputs: every input surface of a program must have the same allocation size, else status 0x1d
     * (docs/anchors.md point 7: Orion #2, #12; maderix packs everything into one input for that reason). Chip rules as for
     * every kernel (TrainingKernelsChipRulesTest); not yet run on Apple hardware.
     *
     * @param rank    r; the kernels contract over r rounded up to a multiple of 32 ({@link #paddedRank}), zero channels after r
     * @param targets the adapted matrices (of q,k,v,o,w1,w2,w3)
     */
    public record LoraInputs(int rank, List<String> targets) {
        /** r rounded up to a multiple of 32: the matmul contraction rule (chip rule matmul-contraction-32). */
        public int paddedRank() { return (rank + 31) / 32 * 32; }
    }

    /**
     * Where one target's LoRA inputs sit in a LoRA variant's input: u (r, S) in columns of segment {@code u}, Bᵀ (r, OC)
     * in the first {@code width} columns of segment {@code bT}, both in channels [channel, channel + r) (zeros up to the
     * padded rank). Column o of Bᵀ sits at {@link #column(int) column(o)}: q's and k's Bᵀ have the zero columns of their
     * padded heads ({@code block} values every {@code stride}), as their projections do.
     */
    public record LoraSlot(String u, String bT, int channel, int width, int block, int stride) {
        /** The column, within the Bᵀ region, of output o. */
        public int column(int o) { return o / block * stride + o % block; }
    }

    /**
     * The training kernels by name: the ten of every step, and {@link #ATTN_VALUES} of three-stage attention only.
     * {@link #id()} is the name metrics, doctor probes ({@code train/<id>}) and benchmarks print.
     */
    public enum Name {
        SDPA_FWD("sdpaFwd", true), WO_FWD("woFwd", true), FFN_FUSED("ffnFused", true),
        FFN_BWD_W2T("ffnBwdW2t", true), FFN_BWD_W13T("ffnBwdW13t", true), WOT_BWD("wotBwd", true),
        SDPA_BWD1("sdpaBwd1", false), SDPA_BWD2("sdpaBwd2", false), Q_BWD("qBwd", true), KV_BWD("kvBwd", true),
        ATTN_VALUES("attnValues", false);

        private final String id;
        private final boolean weighted;

        Name(String id, boolean weighted) {
            this.id = id;
            this.weighted = weighted;
        }

        /** The kernel's name in metrics, probes and reports ({@code sdpaFwd}, {@code woFwd}, …). */
        public String id() { return id; }

        /** Whether its input carries weight rows (staged per layer after each update). */
        public boolean weighted() { return weighted; }

        /** The ten kernels of every training step (not {@link #ATTN_VALUES}). */
        public static List<Name> ten() { return List.of(values()).subList(0, 10); }

        public static Name of(String id) {
            for (Name n : values()) if (n.id.equals(id)) return n;
            throw new IllegalArgumentException("[kernels] no training kernel '" + id + "'; known: "
                    + java.util.Arrays.stream(values()).map(Name::id).toList());
        }
    }

    public static final float MASK_VALUE = -65504f;
    public static final String INPUT = "x";
    public static final String OUTPUT = "out";

    private final ModelConfig c;
    private final int s, d, h, q, kv, nh, nkv, hd;
    /** The head dim rounded up to a multiple of 32: matmuls contracting over the head dim see zero-padded heads (chip rule matmul-contraction-32). */
    private final int hdp;
    private final float alpha;
    private final DType io;
    private final java.util.function.Function<String, float[]> staticWeights;
    private final boolean threeStage;
    private final LoraInputs lora;                   // null: no LoRA variants

    /** fp16 kernels, as the ANE runs them. */
    public TrainingKernels(ModelConfig config) { this(config, DType.FP16); }

    /** Kernels whose tensors and constants are {@code io} (fp16 for the ANE; fp32 for exact comparisons on the reference backend). */
    public TrainingKernels(ModelConfig config, DType io) { this(config, io, null); }

    /**
     * Static-weights kernels (docs/ane-facts.md §5.1): each weight segment named in the input layout is baked in as a BLOBFILE
     * constant taken from {@code staticWeights} (segment name → the block as it would be staged, row-major (IC, OC); also
     * "qNorm"/"kNorm"), so a weight update means a recompile. The input layout is unchanged; its weight columns are unused.
     */
    public TrainingKernels(ModelConfig config, DType io, java.util.function.Function<String, float[]> staticWeights) {
        this(config, io, staticWeights, false);
    }

    /**
     * @param threeStage the three-stage attention variant (docs/ane-facts.md §5.5): sdpaFwd stops at the scaled scores
     *                   Q·Kᵀ/sqrt(HD), the CPU applies the causal mask and softmax, and {@link #attnValues()} computes P·V
     */
    public TrainingKernels(ModelConfig config, DType io, java.util.function.Function<String, float[]> staticWeights, boolean threeStage) {
        this(config, io, staticWeights, threeStage, null);
    }

    /**
     * @param lora LoRA adapters brought in as inputs (dynamic weights only: null, or ignored with {@code staticWeights},
     *             whose kernels bake the merged weights): sdpaFwd and ffnFused become their LoRA variants when they
     *             compute an adapted projection; every other kernel is unchanged
     */
    public TrainingKernels(ModelConfig config, DType io, java.util.function.Function<String, float[]> staticWeights, boolean threeStage, LoraInputs lora) {
        this.lora = staticWeights == null ? lora : null;
        this.threeStage = threeStage;
        this.staticWeights = staticWeights;
        if (!io.isFloat()) throw new IllegalArgumentException("[kernels] io type must be fp16 or fp32, got " + io);
        this.io = io;
        this.c = config;
        this.s = config.seqLen();
        this.d = config.dim();
        this.h = config.hiddenDim();
        this.q = config.qDim();
        this.kv = config.kvDim();
        this.nh = config.nHeads();
        this.nkv = config.nKvHeads();
        this.hd = config.headDim();
        this.hdp = (hd + 31) / 32 * 32;
        this.alpha = config.residualScale();
    }

    /** One kernel by name ({@code sdpaFwd}, {@code woFwd}, …). */
    public Spec byName(String name) { return build(Name.of(name)); }

    public Spec build(Name kernel) {
        return switch (kernel) {
            case SDPA_FWD -> sdpaFwd();
            case WO_FWD -> woFwd();
            case FFN_FUSED -> ffnFused();
            case FFN_BWD_W2T -> ffnBwdW2t();
            case FFN_BWD_W13T -> ffnBwdW13t();
            case WOT_BWD -> wotBwd();
            case SDPA_BWD1 -> sdpaBwd1();
            case SDPA_BWD2 -> sdpaBwd2();
            case Q_BWD -> qBwd();
            case KV_BWD -> kvBwd();
            case ATTN_VALUES -> attnValues();
        };
    }

    /** The ten kernels (eleven with three-stage attention). */
    public List<Spec> all() {
        List<Spec> k = new java.util.ArrayList<>();
        for (Name n : Name.ten()) k.add(build(n));
        if (threeStage) k.add(attnValues());
        return k;
    }

    // -----------------------------------------------------------------------------------------------------------------
    // forward

    /**
     * xnorm (D,S) with Wqᵀ, Wkᵀ, Wvᵀ → concat(attnOut Q, qRope Q, kRope KV, v KV [, qRaw Q, kRaw KV]); with three-stage
     * attention the first block is the scaled scores (NH·S, S) instead of attnOut.
     */
    public Spec sdpaFwd() {
        var in = heads(heads(new PackedLayout.Builder().add("xnorm", s), "wqT", nh), "wkT", nkv).add("wvT", kv);
        if (c.qkNorm()) heads(in, "qkNorm", 2);
        java.util.Map<String, LoraSlot> slots = addLoraSegments(in, "sdpaFwd");
        var out = new PackedLayout.Builder().add(threeStage ? "scores" : "attn", threeStage ? nh * s : q).add("qRope", q).add("kRope", kv).add("v", kv);
        if (c.qkNorm()) out.add("qRaw", q).add("kRaw", kv);
        Consts k = new Consts(in, d);
        k.add("ropeCos", padHeads(RopeTables.cos(c), s));                              // (S, HDp), zero pad columns
        k.add("ropeSin", padHeads(RopeTables.sin(c), s));
        if (!provenRotation()) k.add("ropeRotation", RopeTables.rotation(c, hdp, hdp));
        if (!threeStage) k.add("mask", RopeTables.causalMask(s));
        PackedLayout input = in.columns(d), output = out.channels(s);
        List<Constant> constants = k.placed(input);
        Program p = Mil.program().function("main", f -> {
            Value x = f.input(INPUT, t(1, d, 1, input.width()));
            Value xnT = activationT(f, x, d, 0);                                       // (1,1,S,D)
            // q and k come out of the matmuls as whole heads of HDp (zero columns after HD where Wqᵀ, Wkᵀ were staged so)
            Value qAll = withLora(f, x, input, slots.get("q"), project(f, xnT, x, input, "wqT", d, nh * hdp), nh * hdp);   // (1,1,S,NH·HDp)
            Value kAll = withLora(f, x, input, slots.get("k"), project(f, xnT, x, input, "wkT", d, nkv * hdp), nkv * hdp); // (1,1,S,NKV·HDp)
            Value vAll = withLora(f, x, input, slots.get("v"), project(f, xnT, x, input, "wvT", d, kv), kv);                // (1,1,S,KV)
            Value qh = toHeads(f, qAll, nh, hdp), kh = toHeads(f, kAll, nkv, hdp), vh = toHeads(f, vAll, nkv, hd);  // (1,n,S,HDp), v (1,NKV,S,HD)
            Value qn = qh, kn = kh;
            if (c.qkNorm()) {
                PackedLayout.Range norms = input.get("qkNorm");                              // qNorm, kNorm: a padded head each
                Value qw = staticWeights != null ? f.weight("qNorm", t(1, 1, 1, hdp), padHeads(staticWeights.apply("qNorm"), 1))
                        : f.reshape(f.sliceBySize(x, new int[] {0, 0, 0, norms.at(0)}, new int[] {1, 1, 1, hdp}), 1, 1, 1, hdp);
                Value kw = staticWeights != null ? f.weight("kNorm", t(1, 1, 1, hdp), padHeads(staticWeights.apply("kNorm"), 1))
                        : f.reshape(f.sliceBySize(x, new int[] {0, 0, 0, norms.at(hd)}, new int[] {1, 1, 1, hdp}), 1, 1, 1, hdp);
                qn = headNorm(f, qh, qw);
                kn = headNorm(f, kh, kw);
            }
            Value cos = constant(f, x, constants, "ropeCos", 1, 1, s, hdp);
            Value sin = constant(f, x, constants, "ropeSin", 1, 1, s, hdp);
            Value rotation = provenRotation() ? null : constant(f, x, constants, "ropeRotation", 1, 1, hdp, hdp);
            Value qr = rope(f, qn, cos, sin, rotation), kr = rope(f, kn, cos, sin, rotation);         // (1,n,S,HDp)
            Value kp = tileHeads(f, kr);                                                              // (1,NH,S,HDp)
            Value first = threeStage
                    ? f.reshape(f.mul(f.matmul(qr, kp, false, true), scale()), 1, nh * s, 1, s)            // (1,NH·S,1,S)
                    : fromHeads(f, attention(f, qr, kp, tileHeads(f, vh), constant(f, x, constants, "mask", 1, 1, s, s)), q);   // (1,Q,1,S)
            Value y = f.concat(1, c.qkNorm()
                    ? new Value[] {first, fromHeads(f, qr, q), fromHeads(f, kr, kv), fromHeads(f, vh, kv), fromHeads(f, qh, q), fromHeads(f, kh, kv)}
                    : new Value[] {first, fromHeads(f, qr, q), fromHeads(f, kr, kv), fromHeads(f, vh, kv)});
            f.output(f.named(OUTPUT, y));
        }).build();
        return new Spec("sdpaFwd", p, input, output, constants);
    }

    /** Three-stage attention, last stage: probs (NH·S, S) and vTiled (Q, S) → attnOut (Q, S) = P·V per head. */
    public Spec attnValues() {
        PackedLayout input = new PackedLayout.Builder().add("probs", nh * s).add("v", q).channels(s);
        PackedLayout output = new PackedLayout.Builder().add("attn", q).channels(s);
        Program p = Mil.program().function("main", f -> {
            Value x = f.input(INPUT, t(1, input.channels(), 1, s));
            Value probs = f.reshape(channels(f, x, 0, nh * s), 1, nh, s, s);           // (1,NH,S,S)
            Value vh = channelHeads(f, x, input.get("v"));                             // (1,NH,S,HD)
            f.output(f.named(OUTPUT, fromHeads(f, f.matmul(probs, vh), q)));
        }).build();
        return new Spec("attnValues", p, input, output);
    }

    /** attnOut (Q,S) with Woᵀ → o (D,S). */
    public Spec woFwd() { return dynamicMatmul("woFwd", q, "attn", "woT", d, "o"); }

    /** x2norm, x2 (D,S) with W1ᵀ, W3ᵀ, W2 → concat(xNext D, h1 H, h3 H, gate H); xNext = x2 + α·W2(silu(W1 x2n) ⊙ W3 x2n). */
    public Spec ffnFused() {
        var in = new PackedLayout.Builder().add("x2norm", s).add("x2", s).add("w1T", h).add("w3T", h).add("w2", h);
        java.util.Map<String, LoraSlot> slots = addLoraSegments(in, "ffnFused");
        PackedLayout input = in.columns(d);
        PackedLayout output = new PackedLayout.Builder().add("xNext", d).add("h1", h).add("h3", h).add("gate", h).channels(s);
        Program p = Mil.program().function("main", f -> {
            Value x = f.input(INPUT, t(1, d, 1, input.width()));
            Value xnT = activationT(f, x, d, 0);                                        // (1,1,S,D)
            Value h1 = withLora(f, x, input, slots.get("w1"), project(f, xnT, x, input, "w1T", d, h), h);   // (1,1,S,H)
            Value h3 = withLora(f, x, input, slots.get("w3"), project(f, xnT, x, input, "w3T", d, h), h);   // (1,1,S,H)
            Value gate = f.mul(f.mul(h1, f.sigmoid(h1)), h3);                          // silu(h1) ⊙ h3
            Value w2 = weightBlock(f, x, input, "w2", d, h);                           // (1,1,D,H) as stored
            Value ffn = f.matmul(gate, w2, false, true);                               // (1,1,S,D) = gate·W2ᵀ
            Value x2 = f.sliceBySize(x, new int[] {0, 0, 0, s}, new int[] {1, d, 1, s});
            Value xNext = f.add(x2, f.mul(fromRows(f, ffn, d), alpha));                // (1,D,1,S)
            Value y = f.concat(1, xNext, fromRows(f, h1, h), fromRows(f, h3, h), fromRows(f, gate, h));
            f.output(f.named(OUTPUT, y));
        }).build();
        return new Spec("ffnFused", p, input, output);
    }

    // -----------------------------------------------------------------------------------------------------------------
    // backward

    /** dffn (D,S) with W2 → dsilu (H,S) = W2ᵀ·dffn. */
    public Spec ffnBwdW2t() { return dynamicMatmul("ffnBwdW2t", d, "dffn", "w2", h, "dsilu"); }

    /** dh1, dh3 (H,S) with W1, W3 → dx (D,S) = W1ᵀ·dh1 + W3ᵀ·dh3. */
    public Spec ffnBwdW13t() { return twoTermMatmul("ffnBwdW13t", h, "dh1", "dh3", "w1", "w3", d); }

    /** α·dx2 (D,S) with Wo → da (Q,S) = Woᵀ·(α·dx2). */
    public Spec wotBwd() { return dynamicMatmul("wotBwd", d, "dx2", "wo", q, "da"); }

    /** dq (Q,S) with Wq → dx (D,S) = Wqᵀ·dq. */
    public Spec qBwd() { return dynamicMatmul("qBwd", q, "dq", "wq", d, "dx"); }

    /** dk, dv (KV,S) with Wk, Wv → dx (D,S) = Wkᵀ·dk + Wvᵀ·dv. */
    public Spec kvBwd() { return twoTermMatmul("kvBwd", kv, "dk", "dv", "wk", "wv", d); }

    /** (qRope, kTiled, vTiled, da) each (Q,S) → concat(dv Q, probs NH·S, dp NH·S): probs recomputed, dV = Pᵀ·dA, dP = dA·Vᵀ. */
    public Spec sdpaBwd1() {
        var in = heads(heads(heads(heads(new PackedLayout.Builder(), "q", nh), "k", nh), "v", nh), "da", nh);   // zero channels after each head
        Consts k = new Consts(in, 0);
        k.add("mask", RopeTables.causalMask(s));
        PackedLayout input = in.channels(s);
        List<Constant> constants = k.placed(input);
        PackedLayout output = new PackedLayout.Builder().add("dv", q).add("probs", nh * s).add("dp", nh * s).channels(s);
        Program p = Mil.program().function("main", f -> {
            Value x = f.input(INPUT, t(1, input.channels(), 1, s));
            Value qh = channelHeads(f, x, input.get("q")), kh = channelHeads(f, x, input.get("k"));     // (1,NH,S,HDp)
            Value vh = channelHeads(f, x, input.get("v")), dah = channelHeads(f, x, input.get("da"));
            Value scores = f.matmul(qh, kh, false, true);                                                // (1,NH,S,S)
            Value probs = f.softmax(f.add(f.mul(scores, scale()), constant(f, x, constants, "mask", 1, 1, s, s)), -1);
            // dV from dA's HD channels per head (the pads are not a contraction here): the same product, so the same bits
            Value dv = f.matmul(probs, channelHeads(f, x, input.get("da"), hd), true, false);           // (1,NH,S,HD)
            Value dp = f.matmul(dah, vh, false, true);                                                   // (1,NH,S,S)
            Value y = f.concat(1, fromHeads(f, dv, q), f.reshape(probs, 1, nh * s, 1, s), f.reshape(dp, 1, nh * s, 1, s));
            f.output(f.named(OUTPUT, y));
        }).build();
        return new Spec("sdpaBwd1", p, input, output, constants);
    }

    /** (probs, dp) (NH·S,S), (qRope, kTiled) (Q,S) → concat(dq Q, dk Q): dS = P ⊙ (dP − rowsum(P ⊙ dP))·scale, dQ = dS·K, dK = dSᵀ·Q. */
    public Spec sdpaBwd2() {
        PackedLayout input = new PackedLayout.Builder().add("probs", nh * s).add("dp", nh * s).add("q", q).add("k", q).channels(s);
        PackedLayout output = new PackedLayout.Builder().add("dq", q).add("dk", q).channels(s);
        Program p = Mil.program().function("main", f -> {
            Value x = f.input(INPUT, t(1, input.channels(), 1, s));
            Value probs = f.reshape(channels(f, x, input.start("probs"), nh * s), 1, nh, s, s);         // (1,NH,S,S)
            Value dp = f.reshape(channels(f, x, input.start("dp"), nh * s), 1, nh, s, s);
            Value qh = channelHeads(f, x, input.get("q")), kh = channelHeads(f, x, input.get("k"));
            Value rowDot = f.reduceSum(f.mul(probs, dp), true, -1);                                       // (1,NH,S,1)
            Value ds = f.mul(f.mul(f.sub(dp, rowDot), probs), scale());                                  // (1,NH,S,S)
            Value dq = f.matmul(ds, kh, false, false);                                                   // (1,NH,S,HD)
            Value dk = f.matmul(ds, qh, true, false);
            f.output(f.named(OUTPUT, f.concat(1, fromHeads(f, dq, q), fromHeads(f, dk, q))));
        }).build();
        return new Spec("sdpaBwd2", p, input, output);
    }

    // -----------------------------------------------------------------------------------------------------------------
    // building blocks

    /** A4: act (IC,S) with an [IC, OC] weight block → (OC,S) = Wᵀ·act. */
    private Spec dynamicMatmul(String name, int ic, String act, String weight, int oc, String result) {
        PackedLayout input = new PackedLayout.Builder().add(act, s).add(weight, oc).columns(ic);
        PackedLayout output = new PackedLayout.Builder().add(result, oc).channels(s);
        Program p = Mil.program().function("main", f -> {
            Value x = f.input(INPUT, t(1, ic, 1, input.width()));
            Value y = project(f, activationT(f, x, ic, 0), x, input, weight, ic, oc);  // (1,1,S,OC)
            f.output(f.named(OUTPUT, fromRows(f, y, oc)));
        }).build();
        return new Spec(name, p, input, output);
    }

    /** A5: act1, act2 (IC,S) with two [IC, OC] blocks → (OC,S) = W1ᵀ·act1 + W2ᵀ·act2. */
    private Spec twoTermMatmul(String name, int ic, String act1, String act2, String w1, String w2, int oc) {
        PackedLayout input = new PackedLayout.Builder().add(act1, s).add(act2, s).add(w1, oc).add(w2, oc).columns(ic);
        PackedLayout output = new PackedLayout.Builder().add("dx", oc).channels(s);
        Program p = Mil.program().function("main", f -> {
            Value x = f.input(INPUT, t(1, ic, 1, input.width()));
            Value y1 = project(f, activationT(f, x, ic, 0), x, input, w1, ic, oc);
            Value y2 = project(f, activationT(f, x, ic, s), x, input, w2, ic, oc);
            f.output(f.named(OUTPUT, fromRows(f, f.add(y1, y2), oc)));
        }).build();
        return new Spec(name, p, input, output);
    }

    /** The projections of a kernel that can take LoRA inputs, with their output widths. */
    private java.util.Map<String, Integer> loraOutputs(String kernel) {
        var m = new java.util.LinkedHashMap<String, Integer>();
        if (kernel.equals("sdpaFwd")) { m.put("q", nh * hdp); m.put("k", nkv * hdp); m.put("v", kv); }   // q, k: padded heads
        else if (kernel.equals("ffnFused")) { m.put("w1", h); m.put("w3", h); }
        return m;
    }

    /**
     * Where the LoRA inputs of {@code kernel} ("sdpaFwd" or "ffnFused") sit: target → slot, empty when the kernel is not
     * a LoRA variant. Targets share regions by channel: a u region (S columns) and a Bᵀ region (the widest OC) hold
     * ⌊D / rp⌋ targets, target i of a region in channels [i·rp, i·rp + r). Stacking on channels instead of adding two
     * regions per target keeps the width inside the axis cap: qwen3-0.6b's ffnFused is 2S + 3H = 9728 columns (S 256,
     * H 3072); one region pair per target would add 2S + 2H = 6656 (16384, at the cap; over it at S 512), stacked it
     * adds S + H = 3328 (13056). The cap is 16384 on M1–M3 (chip rule axis-cap: docs/ane-audit.md F5/F6, maderix and
     * rustane reports), checked over these variants by TrainingKernelsChipRulesTest.
     */
    public java.util.Map<String, LoraSlot> loraSlots(String kernel) {
        var slots = new java.util.LinkedHashMap<String, LoraSlot>();
        if (lora == null) return slots;
        List<String> adapted = loraOutputs(kernel).keySet().stream().filter(lora.targets()::contains).toList();
        if (adapted.isEmpty()) return slots;
        int rp = lora.paddedRank(), perRegion = d / rp;
        if (perRegion == 0)
            throw new IllegalArgumentException("[lora] rank " + lora.rank() + " takes " + rp + " channels in the kernels (a multiple of 32, for the matmul contraction), more than "
                    + c.name() + "'s dim " + d + "; use a rank of at most " + d / 32 * 32);
        var widths = loraOutputs(kernel);
        for (int i = 0; i < adapted.size(); i++) {
            String t = adapted.get(i);
            boolean paddedHeads = (t.equals("q") || t.equals("k")) && hdp != hd;
            int w = widths.get(t);
            slots.put(t, new LoraSlot("loraU" + i / perRegion, "loraBT" + i / perRegion, i % perRegion * rp, w, paddedHeads ? hd : w, paddedHeads ? hdp : w));
        }
        return slots;
    }

    /** Adds the LoRA variant's regions to a kernel's input columns; returns the slots (empty: the plain kernel). */
    private java.util.Map<String, LoraSlot> addLoraSegments(PackedLayout.Builder in, String kernel) {
        var slots = loraSlots(kernel);
        var outs = loraOutputs(kernel);
        var widths = new java.util.LinkedHashMap<String, Integer>();
        for (var e : slots.entrySet()) widths.merge(e.getValue().bT(), outs.get(e.getKey()), Math::max);
        for (var bT : widths.entrySet()) in.add(bT.getKey().replace("loraBT", "loraU"), s).add(bT.getKey(), bT.getValue());
        return slots;
    }

    /**
     * proj (1,1,S,OC) + u·Bᵀ for a target with a LoRA slot (proj unchanged without one): u (rp, S) and Bᵀ (rp, OC) sliced
     * from the slot's channels, the same channel contraction as the base projection.
     */
    private Value withLora(FunctionBuilder f, Value x, PackedLayout in, LoraSlot slot, Value proj, int oc) {
        if (slot == null) return proj;
        int rp = lora.paddedRank();
        Value u = f.sliceBySize(x, new int[] {0, slot.channel(), 0, in.start(slot.u())}, new int[] {1, rp, 1, s});
        Value uT = f.transpose(f.reshape(u, 1, 1, rp, s), 0, 1, 3, 2);                  // (1,1,S,rp)
        Value bT = f.reshape(f.sliceBySize(x, new int[] {0, slot.channel(), 0, in.start(slot.bT())}, new int[] {1, rp, 1, oc}), 1, 1, rp, oc);   // oc = slot.width()
        return f.add(proj, f.matmul(uT, bT));                                           // (1,1,S,OC)
    }

    /** Columns [col, col+S) of x (1,C,1,W) as (1,1,S,C). */
    private Value activationT(FunctionBuilder f, Value x, int channels, int col) {
        return HeadOps.toRows(f, f.sliceBySize(x, new int[] {0, 0, 0, col}, new int[] {1, channels, 1, s}), channels, s);
    }

    /** actT (1,1,S,IC) times the [IC, OC] weight block of segment {@code seg} → (1,1,S,OC). */
    private Value project(FunctionBuilder f, Value actT, Value x, PackedLayout in, String seg, int ic, int oc) {
        return f.matmul(actT, weightBlock(f, x, in, seg, ic, oc));
    }

    /** The [IC, OC] block of segment {@code seg} as (1,1,IC,OC): sliced from the input, or a BLOBFILE constant when static. */
    private Value weightBlock(FunctionBuilder f, Value x, PackedLayout in, String seg, int ic, int oc) {
        if (staticWeights != null) {
            float[] w = staticWeights.apply(seg);
            return f.weight(seg, t(1, 1, ic, oc), w.length == ic * oc ? w : padHeads(w, ic));      // Wqᵀ, Wkᵀ: zero columns after each head
        }
        return f.reshape(f.sliceBySize(x, new int[] {0, 0, 0, in.start(seg)}, new int[] {1, ic, 1, oc}), 1, 1, ic, oc);
    }

    /** (1,1,S,C) → (1,C,1,S). */
    private Value fromRows(FunctionBuilder f, Value y, int channels) { return HeadOps.fromRows(f, y, channels, s); }

    /** (1,1,S,n·W) → (1,n,S,W), W = HD or the padded HDp. */
    private Value toHeads(FunctionBuilder f, Value y, int heads, int w) { return HeadOps.toHeads(f, y, heads, w, s); }

    /** (1,n,S,W) → (1,n·HD,1,S): padded heads (W = HDp) drop their zero columns ({@link HeadOps#fromHeads}). */
    private Value fromHeads(FunctionBuilder f, Value heads, int width) { return HeadOps.fromHeads(f, heads, hd, width, s); }

    private Value channels(FunctionBuilder f, Value x, int from, int count) {
        return f.sliceBySize(x, new int[] {0, from, 0, 0}, new int[] {1, count, 1, s});
    }

    /** Channel segment r of x (NH heads, padded or not) as (1,NH,S,W), W = r.size / NH. */
    private Value channelHeads(FunctionBuilder f, Value x, PackedLayout.Range r) {
        return channelHeads(f, x, r, r.size() / nh);
    }

    /** The first w channels of each head of segment r as (1,NH,S,w): a slice on the channel axis of (1,NH,W,S), before the transpose. */
    private Value channelHeads(FunctionBuilder f, Value x, PackedLayout.Range r, int w) {
        int stride = r.size() / nh;
        Value heads = f.reshape(channels(f, x, r.start(), r.size()), 1, nh, stride, s);   // (1,NH,W,S)
        if (w != stride) heads = f.sliceBySize(heads, new int[] {0, 0, 0, 0}, new int[] {1, nh, w, s});
        return f.transpose(heads, 0, 1, 3, 2);
    }

    /** Adds segment {@code name} of n heads: n·HD plain, or n heads of HD each followed by HDp − HD zeros (R4). */
    private PackedLayout.Builder heads(PackedLayout.Builder b, String name, int n) {
        return hdp == hd ? b.add(name, n * hd) : b.addPadded(name, n, hd, hdp);
    }

    /** m (rows, n·HD) row-major → (rows, n·HDp) with zero columns after each head (m itself when HD is a multiple of 32). */
    private float[] padHeads(float[] m, int rows) {
        if (hdp == hd) return m;
        int n = m.length / rows / hd;
        float[] out = new float[rows * n * hdp];
        for (int r = 0; r < rows * n; r++) System.arraycopy(m, r * hd, out, r * hdp, hd);
        return out;
    }

    /** KV heads (1,NKV,S,W) repeated to NH query heads ({@link HeadOps#tileHeads}). */
    private Value tileHeads(FunctionBuilder f, Value kvHeads) { return HeadOps.tileHeads(f, kvHeads, nh); }

    /**
     * RMSNorm over the head dimension (QK-norm): x (1,n,S,HDp), w (1,1,1,HDp); the pad columns add zeros to the sum of
     * squares (the mean still divides by HD) and stay zero (w is zero there).
     */
    private Value headNorm(FunctionBuilder f, Value x, Value w) {
        Value ms = f.mul(f.reduceSum(f.mul(x, x), true, -1), 1f / hd);                 // (1,n,S,1) mean of squares
        Value r = f.pow(f.add(ms, c.normEps()), -0.5f);
        return f.mul(f.mul(x, r), w);
    }

    /**
     * The largest S·HD/2 axis the reshape rotation may make: 16384, the axis cap of M1–M3 (ANEForge {@code _targets.py}
     * {@code max_tensor_dim}; 65536 on M4/M5). The kernels are built for every chip, so the smallest cap applies.
     */
    static final int ROTATION_AXIS_CAP = 16384;

    /**
     * Whether RoPE's rotation is the pattern hardware-run projects used (ane-audit-2 R3): maderix's
     * {@code training/training_dynamic/mil_dynamic.h} and rustane's {@code crates/engine/src/kernels/sdpa_fwd.rs} (M4,
     * stories110m) reshape to (1,n,S·HD/2,2), slice the pair and concat (−odd, even) on axis 3. Used where that axis fits
     * {@link #ROTATION_AXIS_CAP}; beyond it (stories42m: S·HD/2 = 32768) the ±1 permutation matmul, which only rustane PR
     * #9 describes (M3 Ultra) and no code we could open runs. Half-style RoPE (qwen3) has no pair reshape: its proven-style
     * form is two half slices and a concat on axis 3 (HD/2 columns, 64-byte aligned for HD ≥ 64). On padded heads the
     * pairs are taken over HDp (the pad pairs rotate zeros); the half form would need a concat at HD/2 and HD, the odd
     * width offsets R4 removes, so padded half-style heads take the permutation matmul.
     */
    private boolean provenRotation() {
        return !matmulRotation && (hdp == hd || c.ropeStyle() == RopeStyle.INTERLEAVED) && (long) s * hdp / 2 <= ROTATION_AXIS_CAP;
    }

    /** Tests only: the permutation matmul for every config, to compare the two rotations bit for bit. */
    boolean matmulRotation;

    /**
     * RoPE on (1,n,S,HDp) with cos/sin tables (1,1,S,HDp), zero in the pad columns: x·cos + rotate(x)·sin. rotate(x) is
     * the reshape/slice/concat of maderix and rustane where the axis fits ({@link #provenRotation}), else x·P with the
     * constant ±1 permutation P (HDp,HDp) (rustane PR #9: a reshape to (1,n,S·HD/2,2) makes an axis over the cap,
     * docs/ane-audit.md F6). Both exact: each output is one ±x term, so the two give the same bits; pad columns stay zero.
     */
    private Value rope(FunctionBuilder f, Value x, Value cos, Value sin, Value rotation) {
        int n = x.shape()[1], w = x.shape()[3];
        Value rotated;
        if (rotation != null) rotated = f.matmul(x, rotation);                             // (1,n,S,HDp)
        else if (c.ropeStyle() == RopeStyle.INTERLEAVED) {
            Value pairs = f.reshape(x, 1, n, s * w / 2, 2);                                 // (1,n,S·W/2,2)
            Value even = f.sliceBySize(pairs, new int[] {0, 0, 0, 0}, new int[] {1, n, s * w / 2, 1});
            Value odd = f.sliceBySize(pairs, new int[] {0, 0, 0, 1}, new int[] {1, n, s * w / 2, 1});
            rotated = f.reshape(f.concat(3, f.mul(odd, -1f), even), 1, n, s, w);           // (−x[2i+1], x[2i])
        } else {
            Value lo = f.sliceBySize(x, new int[] {0, 0, 0, 0}, new int[] {1, n, s, hd / 2});
            Value hi = f.sliceBySize(x, new int[] {0, 0, 0, hd / 2}, new int[] {1, n, s, hd / 2});
            rotated = f.concat(3, f.mul(hi, -1f), lo);                                      // (−x[i+HD/2], x[i])
        }
        return f.add(f.mul(x, cos), f.mul(rotated, sin));
    }

    /** softmax(Q·Kᵀ·scale + mask)·V on (1,NH,S,HD). */
    private Value attention(FunctionBuilder f, Value qh, Value kh, Value vh, Value mask) {
        Value scores = f.add(f.mul(f.matmul(qh, kh, false, true), scale()), mask);
        return f.matmul(f.softmax(scores, -1), vh);
    }

    /** The constant named {@code segment} of {@code constants}, sliced from the input x and reshaped to {@code shape}. */
    private static Value constant(FunctionBuilder f, Value x, List<Constant> constants, String segment, int... shape) {
        for (Constant k : constants)
            if (k.segment().equals(segment))
                return f.reshape(f.sliceBySize(x, new int[] {0, k.channel(), 0, k.column()}, new int[] {1, k.rows(), 1, k.cols()}), shape);
        throw new IllegalStateException("[kernels] no constant " + segment);
    }

    /**
     * Constants placed in a packed input. Column layouts (the dynamic-weights inputs, C channels): a constant of E values
     * takes rows = the largest divisor of E not above C, cols = E / rows, in a segment of cols rounded up to 32 columns so
     * every row of the input stays a multiple of 64 bytes in fp16 (macOS 27's I/O row rule, docs/macos27-ane.md C7). Channel
     * layouts (width S): rows = E / S channels of S columns.
     */
    private final class Consts {
        private final PackedLayout.Builder in;
        private final int channels;                      // 0: a channel layout
        private final java.util.Map<String, float[]> values = new java.util.LinkedHashMap<>();
        private final java.util.Map<String, int[]> dims = new java.util.LinkedHashMap<>();

        Consts(PackedLayout.Builder in, int channels) {
            this.in = in;
            this.channels = channels;
        }

        void add(String segment, float[] v) {
            int rows, cols;
            if (channels == 0) {
                if (v.length % s != 0) throw new IllegalStateException("[kernels] constant " + segment + " of " + v.length + " values is not whole rows of " + s);
                rows = v.length / s;
                cols = s;
                in.add(segment, rows);
            } else {
                rows = 1;
                for (int r = Math.min(channels, v.length); r >= 1; r--) if (v.length % r == 0) { rows = r; break; }
                cols = v.length / rows;
                in.add(segment, (cols + 31) / 32 * 32);
            }
            values.put(segment, v);
            dims.put(segment, new int[] {rows, cols});
        }

        List<Constant> placed(PackedLayout layout) {
            List<Constant> out = new java.util.ArrayList<>();
            for (var e : values.entrySet()) {
                int[] rc = dims.get(e.getKey());
                int start = layout.start(e.getKey());
                out.add(channels == 0 ? new Constant(e.getKey(), start, 0, rc[0], rc[1], e.getValue())
                        : new Constant(e.getKey(), 0, start, rc[0], rc[1], e.getValue()));
            }
            return out;
        }
    }

    private TensorType t(int... shape) { return TensorType.of(io, shape); }

    private float scale() { return (float) (1.0 / Math.sqrt(hd)); }
}
