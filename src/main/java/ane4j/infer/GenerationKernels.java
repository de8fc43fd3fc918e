package ane4j.infer;

import ane4j.mil.DType;
import ane4j.mil.FunctionBuilder;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import ane4j.model.ModelConfig;
import ane4j.train.PackedLayout;
import ane4j.train.RopeTables;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static ane4j.train.HeadOps.fromHeads;
import static ane4j.train.HeadOps.fromRows;
import static ane4j.train.HeadOps.tileHeads;
import static ane4j.train.HeadOps.toHeads;
import static ane4j.train.HeadOps.toRows;

/**
 * The MIL kernels of generation on a backend: one transformer layer as two programs, its attention half and its FFN half,
 * for a prefill width S (the prompt padded to a bucket) or for decoding one token against a fixed-size KV cache of T
 * positions. Compiled once per (kernel, width) and run once per layer: every layer's weights come in through the input.
 * <pre>
 * Legend: S = bucket width, T = cache capacity, D = dim, H = hiddenDim, Q = nHeads·headDim, KV = nKvHeads·headDim,
 *         NH = nHeads, NKV = nKvHeads, HD = headDim, HDp = HD rounded up to 32, r = LoRA rank, rp = r rounded up to 32.
 * prefill attention  in  [1, D, 1, S + WA + 3S (+NH·S)] x | weights | cos | sin | pos (| zero)
 *                    out [1, D + 2KV, 1, S]             x + α·Wo·attn(rmsnorm(x)) | k after RoPE | v
 * decode attention   in  [1, D, 1, 1 + WA + 2 + 3T (+NH·T)] x | weights | cos | sin | mask | kCache | vCache (| zero)
 *                    out [1, (D + 2KV)/32, 1, 32]        the same three vectors, one row (a wide-short output avoided)
 * FFN                in  [1, D, 1, S + WF]              x | weights;  out x + α·W2(silu(W1 xn) ⊙ W3 xn), xn = rmsnorm(x)
 * </pre>
 * <b>No weight file.</b> macOS 27 refuses programs with two or more BLOBFILE files (docs/generation.md, "macOS 27"), so
 * nothing here is a {@code weight}: the projection matrices, the norm weights, the RoPE rotation matrix, the cos/sin
 * tables and the causal mask all arrive in the one packed input, the way the training kernels' dynamic weights do. One
 * packed input and not several: every input surface of a program must have the same allocation size (status 0x1d,
 * Orion #2/#12, as {@code TrainingKernels.LoraInputs} notes). The weight block ({@link Layout#weights()}) has the same
 * columns in every width, so a layer's block is built once and written into any of its kernels.
 * <p>
 * The prefill mask is computed in the kernel from two rows of positions: m[i][j] = −65504·clamp(key_j − query_i, 0, 1),
 * with key_j = j for a prompt token and j + S for a pad, so a query sees the keys at or before it and never a pad
 * (positions are integers ≤ 2048, exact in fp16). clamp(d, 0, 1) of an integer d is relu(d) − relu(d − 1).
 * Activations sit in the first columns, as in the training kernels: on M1–M3 a slice at a non-zero width offset saturates
 * |v| &gt; 4094 (chip rule slice-clamp), and the residual stream is the one tensor that can hold values that large.
 */
public final class GenerationKernels {
    public static final String INPUT = "x";
    public static final String OUTPUT = "out";
    public static final float MASK_VALUE = -65504f;
    /** LoRA targets of the attention and the FFN kernel. */
    static final List<String> ATTN_TARGETS = List.of("q", "k", "v", "o"), FFN_TARGETS = List.of("w1", "w2", "w3");

    /** Where a kernel's input and output sit: its packed input, the weight block's columns, its output's packed channels. */
    public record Layout(String name, PackedLayout input, PackedLayout.Range weights, PackedLayout output, int width) {}

    /** A kernel's program with its layout. */
    public record Spec(Layout layout, Program program) {}

    /** LoRA A (r, IC) and Bᵀ (r, OC) of target {@code target}: channels [channel, channel + rp) of segments {@code a} and {@code bT}. */
    public record LoraSlot(String target, String a, String bT, int channel, int ic, int oc) {}

    private final ModelConfig c;
    private final int d, h, q, kv, nh, nkv, hd, hdp;
    private final float alpha;
    private final int rank;                       // 0: no LoRA
    private final List<String> loraTargets;
    private final DType io;

    /** fp16 kernels without LoRA. */
    public GenerationKernels(ModelConfig config) { this(config, 0, List.of(), DType.FP16); }

    /**
     * @param rank        LoRA rank, 0 for none; the kernels contract over it rounded up to 32 (zero channels after r)
     * @param loraTargets the adapted matrices (of q,k,v,o,w1,w2,w3)
     * @param io          fp16 (the ANE's) or fp32 (exact comparisons on the reference backend)
     */
    public GenerationKernels(ModelConfig config, int rank, List<String> loraTargets, DType io) {
        this.c = config;
        this.d = config.dim();
        this.h = config.hiddenDim();
        this.q = config.qDim();
        this.kv = config.kvDim();
        this.nh = config.nHeads();
        this.nkv = config.nKvHeads();
        this.hd = config.headDim();
        this.hdp = (hd + 31) / 32 * 32;
        this.alpha = config.residualScale();
        this.rank = rank;
        this.loraTargets = List.copyOf(loraTargets);
        this.io = io;
        if (kv > d)
            throw new IllegalArgumentException("[generate] " + c.name() + ": the KV cache rides the kernel input's " + d + " channels (dim), but kvDim is " + kv
                    + "; the backend generator needs nKvHeads·headDim ≤ dim (use --backend cpu)");
        if (hdp > d)
            throw new IllegalArgumentException("[generate] " + c.name() + ": headDim " + hd + " padded to " + hdp + " does not fit the kernel input's " + d
                    + " channels; use --backend cpu");
        if (rank > 0 && (rank + 31) / 32 * 32 > d)
            throw new IllegalArgumentException("[generate] LoRA rank " + rank + " takes " + (rank + 31) / 32 * 32 + " channels, more than dim " + d + "; use --backend cpu");
    }

    public ModelConfig config() { return c; }

    int paddedRank() { return (rank + 31) / 32 * 32; }

    // -----------------------------------------------------------------------------------------------------------------
    // layouts

    /** The weight block of the attention kernel (columns, D channels); the same in every width. */
    private void attnWeights(Segments in) {
        in.add("wqT", q).add("wkT", kv).add("wvT", kv).add("wo", q).add("rms", 1).add("rot", hd);
        if (c.qkNorm()) in.add("qkNorm", 2 * hd);
        addLora(in, ATTN_TARGETS);
    }

    private void ffnWeights(Segments in) {
        in.add("w1T", h).add("w3T", h).add("w2", h).add("rms", 1);
        addLora(in, FFN_TARGETS);
    }

    /** Input and IC/OC of each adapted target of a kernel: region i of ⌊D/rp⌋ targets, target j of it in channels [j·rp, j·rp + rp). */
    public List<LoraSlot> loraSlots(List<String> kernelTargets) {
        List<LoraSlot> slots = new ArrayList<>();
        if (rank == 0) return slots;
        int rp = paddedRank(), perRegion = d / rp, i = 0;
        for (String t : kernelTargets) {
            if (!loraTargets.contains(t)) continue;
            int[] io = inOut(t);
            slots.add(new LoraSlot(t, "loraA" + i / perRegion, "loraBT" + i / perRegion, i % perRegion * rp, io[0], io[1]));
            i++;
        }
        return slots;
    }

    /** {IC, OC} of the matrix a target adapts. */
    private int[] inOut(String t) {
        return switch (t) {
            case "q" -> new int[] {d, q};
            case "k", "v" -> new int[] {d, kv};
            case "o" -> new int[] {q, d};
            case "w1", "w3" -> new int[] {d, h};
            case "w2" -> new int[] {h, d};
            default -> throw new IllegalArgumentException("[generate] no LoRA target " + t);
        };
    }

    private void addLora(Segments in, List<String> kernelTargets) {
        Map<String, int[]> widths = new LinkedHashMap<>();   // region → {max IC, max OC}
        for (LoraSlot s : loraSlots(kernelTargets)) {
            int[] w = widths.computeIfAbsent(s.a(), k -> new int[2]);
            w[0] = Math.max(w[0], s.ic());
            w[1] = Math.max(w[1], s.oc());
        }
        for (var e : widths.entrySet()) in.add(e.getKey(), e.getValue()[0]).add(e.getKey().replace("loraA", "loraBT"), e.getValue()[1]);
    }

    /** The prefill attention kernel's layout for width S. */
    public Layout prefillAttnLayout(int s) {
        Segments in = new Segments().add("x", s);
        int w0 = in.size();
        attnWeights(in);
        int w1 = in.size();
        in.add("cos", s).add("sin", s).add("pos", s);
        if (hdp != hd) in.add("zero", nh * s);
        PackedLayout out = new Segments().add("x", d).add("k", kv).add("v", kv).channels(s);
        return new Layout("genAttn" + s, in.columns(d), new PackedLayout.Range(w0, w1 - w0), out, s);
    }

    /** The decode attention kernel's layout for a cache of T positions (T a multiple of 32: P·V contracts over it). */
    public Layout decodeAttnLayout(int t) {
        Segments in = new Segments().add("x", 1);
        int w0 = in.size();
        attnWeights(in);
        int w1 = in.size();
        in.add("cos", 1).add("sin", 1).add("mask", t).add("kCache", t).add("vCache", t);
        if (hdp != hd) in.add("zero", nh * t);
        PackedLayout out = new Segments().add("x", d).add("k", kv).add("v", kv).channels(1);
        return new Layout("genDecode" + t, in.columns(d), new PackedLayout.Range(w0, w1 - w0), out, 1);
    }

    /** The FFN kernel's layout for width S (1 when decoding). */
    public Layout ffnLayout(int s) {
        Segments in = new Segments().add("x", s);
        int w0 = in.size();
        ffnWeights(in);
        int w1 = in.size();
        PackedLayout out = new Segments().add("x", d).channels(s);
        return new Layout("genFfn" + s, in.columns(d), new PackedLayout.Range(w0, w1 - w0), out, s);
    }

    /** The output tensor of a layout: [1, C, 1, S], or one row [1, C/32, 1, 32] for a single position when C allows. */
    static int[] outputShape(Layout l) {
        int ch = l.output().channels();
        if (l.width() == 1 && ch % 32 == 0) return new int[] {1, ch / 32, 1, 32};
        return new int[] {1, ch, 1, l.width()};
    }

    // -----------------------------------------------------------------------------------------------------------------
    // programs

    /** Prefill attention for width S: rmsnorm, q/k/v (+LoRA), QK-norm, RoPE, causal attention with pads masked, Wo, residual. */
    public Spec prefillAttn(int s) {
        Layout l = prefillAttnLayout(s);
        PackedLayout in = l.input();
        Program p = Mil.program().function("main", f -> {
            Value x = f.input(INPUT, t(1, d, 1, in.width()));
            Value xs = cols(f, x, 0, d, in.start("x"), s);                               // (1,D,1,S)
            Value xnT = toRows(f, rmsnorm(f, xs, cols(f, x, 0, d, in.start("rms"), 1)), d, s); // (1,1,S,D)
            Map<String, LoraSlot> slots = bySlot(loraSlots(ATTN_TARGETS));
            Value qAll = project(f, x, in, xnT, "wqT", d, q, slots.get("q"), s);          // (1,1,S,Q)
            Value kAll = project(f, x, in, xnT, "wkT", d, kv, slots.get("k"), s);         // (1,1,S,KV)
            Value vAll = project(f, x, in, xnT, "wvT", d, kv, slots.get("v"), s);
            Value qh = toHeads(f, qAll, nh, hd, s), kh = toHeads(f, kAll, nkv, hd, s), vh = toHeads(f, vAll, nkv, hd, s);   // (1,n,S,HD)
            if (c.qkNorm()) {
                qh = headNorm(f, qh, qkNorm(f, x, in, 0));
                kh = headNorm(f, kh, qkNorm(f, x, in, hd));
            }
            Value cos = toRows(f, cols(f, x, 0, hd, in.start("cos"), s), hd, s);         // (1,1,S,HD)
            Value sin = toRows(f, cols(f, x, 0, hd, in.start("sin"), s), hd, s);
            Value rot = rotation(f, x, in);
            Value zeroQ = zeros(f, x, in, nh, s);
            Value qr = rope(f, qh, zeroQ, cos, sin, rot);
            Value kr = rope(f, kh, zeros(f, x, in, nkv, s), cos, sin, rot);
            // causal mask with pads: m[i][j] = −65504·clamp(key_j − query_i, 0, 1)
            Value qpos = f.reshape(cols(f, x, 0, 1, in.start("pos"), s), 1, 1, s, 1);    // (1,1,S,1)
            Value kpos = f.reshape(cols(f, x, 1, 1, in.start("pos"), s), 1, 1, 1, s);    // (1,1,1,S)
            Value diff = f.sub(kpos, qpos);                                              // (1,1,S,S)
            Value mask = f.mul(f.sub(f.relu(diff), f.relu(f.add(diff, -1f))), MASK_VALUE);
            Value scores = f.matmul(padded(f, qr, zeroQ), padded(f, tileHeads(f, kr, nh), zeroQ), false, true);  // (1,NH,S,S)
            Value probs = f.softmax(f.add(f.mul(scores, scale()), mask), -1);
            Value attn = f.matmul(probs, tileHeads(f, vh, nh));                          // (1,NH,S,HD)
            Value attnT = toRows(f, fromHeads(f, attn, hd, q, s), q, s);                 // (1,1,S,Q)
            Value o = withLora(f, x, in, slots.get("o"), attnT, f.matmul(attnT, block(f, x, in, "wo", d, q), false, true), s);   // (1,1,S,D)
            Value xOut = f.add(xs, f.mul(fromRows(f, o, d, s), alpha));                 // (1,D,1,S)
            f.output(f.named(OUTPUT, f.concat(1, xOut, fromHeads(f, kr, hd, kv, s), fromHeads(f, vh, hd, kv, s))));
        }).build();
        return new Spec(l, p);
    }

    /**
     * Decode attention for one token at position pos against a cache of T positions (those before pos filled, the rest
     * masked by the mask row): the new token's k and v join the attention as one more key, so the cache is written by the
     * caller after the call (at column pos), never by the kernel. P·V contracts over T; the new key is added elementwise.
     */
    public Spec decodeAttn(int t) {
        if (t % 32 != 0) throw new IllegalArgumentException("[generate] cache capacity " + t + " must be a multiple of 32 (P·V contracts over it)");
        Layout l = decodeAttnLayout(t);
        PackedLayout in = l.input();
        Program p = Mil.program().function("main", f -> {
            Value x = f.input(INPUT, t(1, d, 1, in.width()));
            Value xs = cols(f, x, 0, d, in.start("x"), 1);                               // (1,D,1,1)
            Value xn = f.reshape(rmsnorm(f, xs, cols(f, x, 0, d, in.start("rms"), 1)), 1, 1, 1, d);   // (1,1,1,D)
            Map<String, LoraSlot> slots = bySlot(loraSlots(ATTN_TARGETS));
            Value qAll = project(f, x, in, xn, "wqT", d, q, slots.get("q"), 1);          // (1,1,1,Q)
            Value kAll = project(f, x, in, xn, "wkT", d, kv, slots.get("k"), 1);
            Value vAll = project(f, x, in, xn, "wvT", d, kv, slots.get("v"), 1);
            Value qh = f.reshape(qAll, 1, nh, 1, hd), kh = f.reshape(kAll, 1, nkv, 1, hd), vh = f.reshape(vAll, 1, nkv, 1, hd);
            if (c.qkNorm()) {
                qh = headNorm(f, qh, qkNorm(f, x, in, 0));
                kh = headNorm(f, kh, qkNorm(f, x, in, hd));
            }
            Value cos = f.reshape(cols(f, x, 0, hd, in.start("cos"), 1), 1, 1, 1, hd);
            Value sin = f.reshape(cols(f, x, 0, hd, in.start("sin"), 1), 1, 1, 1, hd);
            Value rot = rotation(f, x, in);
            Value qr = rope(f, qh, zeros(f, x, in, nh, 1), cos, sin, rot);               // (1,NH,1,HD)
            Value kr = rope(f, kh, zeros(f, x, in, nkv, 1), cos, sin, rot);              // (1,NKV,1,HD)
            Value kc = tileHeads(f, channelHeads(f, x, in.start("kCache"), t), nh);      // (1,NH,T,HD)
            Value vc = tileHeads(f, channelHeads(f, x, in.start("vCache"), t), nh);
            Value zeroT = zeros(f, x, in, nh, t), zero1 = zeros(f, x, in, nh, 1);
            Value mask = f.reshape(cols(f, x, 0, 1, in.start("mask"), t), 1, 1, 1, t);  // (1,1,1,T)
            Value sCache = f.add(f.mul(f.matmul(padded(f, qr, zero1), padded(f, kc, zeroT), false, true), scale()), mask);   // (1,NH,1,T)
            Value sNew = f.mul(f.reduceSum(f.mul(qr, tileHeads(f, kr, nh)), true, -1), scale());                        // (1,NH,1,1)
            Value probs = f.softmax(f.concat(3, sCache, sNew), -1);                      // (1,NH,1,T+1)
            Value pCache = f.sliceBySize(probs, new int[] {0, 0, 0, 0}, new int[] {1, nh, 1, t});
            Value pNew = f.sliceBySize(probs, new int[] {0, 0, 0, t}, new int[] {1, nh, 1, 1});
            Value attn = f.add(f.matmul(pCache, vc), f.mul(pNew, tileHeads(f, vh, nh))); // (1,NH,1,HD)
            Value attnRow = f.reshape(attn, 1, 1, 1, q);
            Value o = withLora(f, x, in, slots.get("o"), attnRow, f.matmul(attnRow, block(f, x, in, "wo", d, q), false, true), 1);   // (1,1,1,D)
            Value xOut = f.add(f.reshape(xs, 1, 1, 1, d), f.mul(o, alpha));
            Value row = f.concat(3, xOut, f.reshape(kr, 1, 1, 1, kv), f.reshape(vh, 1, 1, 1, kv));   // (1,1,1,D+2KV)
            f.output(f.named(OUTPUT, f.reshape(row, outputShape(l))));
        }).build();
        return new Spec(l, p);
    }

    /** The FFN half for width S: x + α·W2(silu(W1 xn) ⊙ W3 xn) with xn = rmsnorm(x) (+LoRA on w1, w2, w3). */
    public Spec ffn(int s) {
        Layout l = ffnLayout(s);
        PackedLayout in = l.input();
        Program p = Mil.program().function("main", f -> {
            Value x = f.input(INPUT, t(1, d, 1, in.width()));
            Value xs = cols(f, x, 0, d, in.start("x"), s);                               // (1,D,1,S)
            Value xnT = toRows(f, rmsnorm(f, xs, cols(f, x, 0, d, in.start("rms"), 1)), d, s); // (1,1,S,D)
            Map<String, LoraSlot> slots = bySlot(loraSlots(FFN_TARGETS));
            Value h1 = project(f, x, in, xnT, "w1T", d, h, slots.get("w1"), s);          // (1,1,S,H)
            Value h3 = project(f, x, in, xnT, "w3T", d, h, slots.get("w3"), s);
            Value gate = f.mul(f.mul(h1, f.sigmoid(h1)), h3);                            // silu(h1) ⊙ h3
            Value y = withLora(f, x, in, slots.get("w2"), gate, f.matmul(gate, block(f, x, in, "w2", d, h), false, true), s);   // (1,1,S,D)
            Value out = s == 1 ? f.reshape(f.add(f.reshape(xs, 1, 1, 1, d), f.mul(y, alpha)), outputShape(l))
                    : f.add(xs, f.mul(fromRows(f, y, d, s), alpha));
            f.output(f.named(OUTPUT, out));
        }).build();
        return new Spec(l, p);
    }

    // -----------------------------------------------------------------------------------------------------------------
    // building blocks

    private static Map<String, LoraSlot> bySlot(List<LoraSlot> slots) {
        Map<String, LoraSlot> m = new LinkedHashMap<>();
        for (LoraSlot s : slots) m.put(s.target(), s);
        return m;
    }

    /** Channels [ch, ch+n) of columns [col, col+w) of x: (1,n,1,w). */
    private static Value cols(FunctionBuilder f, Value x, int ch, int n, int col, int w) {
        return f.sliceBySize(x, new int[] {0, ch, 0, col}, new int[] {1, n, 1, w});
    }

    /**
     * RMSNorm over the channels of each column: x (1,D,1,S), w (1,D,1,1). x/sqrt(mean(x²) + eps) ⊙ w, as CpuModel.rmsnorm.
     * reduce_mean rather than a sum times 1/D: in fp16 the sum of D squares overflows (65504) once the RMS passes
     * sqrt(65504/D), 8 for D = 1024, while the mean only at an RMS of 256.
     */
    private Value rmsnorm(FunctionBuilder f, Value x, Value w) {
        Value ms = f.reduceMean(f.mul(x, x), true, 1);                                   // (1,1,1,S) mean of squares
        return f.mul(f.mul(x, f.pow(f.add(ms, c.normEps()), -0.5f)), w);
    }

    /** The [IC, OC] block of segment {@code seg} as (1,1,IC,OC). */
    private static Value block(FunctionBuilder f, Value x, PackedLayout in, String seg, int ic, int oc) {
        return f.reshape(cols(f, x, 0, ic, in.start(seg), oc), 1, 1, ic, oc);
    }

    /** actT (1,1,S,IC)·[IC,OC] block of {@code seg}, plus the LoRA term when the target has a slot. */
    private Value project(FunctionBuilder f, Value x, PackedLayout in, Value actT, String seg, int ic, int oc, LoraSlot slot, int s) {
        return withLora(f, x, in, slot, actT, f.matmul(actT, block(f, x, in, seg, ic, oc)), s);
    }

    /**
     * proj + (actT·Aᵀ)·(s·B)ᵀ for an adapted target (proj unchanged without a slot): A (rp, IC) and s·Bᵀ (rp, OC) from
     * the slot's channels; the rows of A and Bᵀ past r are zero. LoRA unmerged: the base weights are the model's own.
     */
    private Value withLora(FunctionBuilder f, Value x, PackedLayout in, LoraSlot slot, Value actT, Value proj, int s) {
        if (slot == null) return proj;
        int rp = paddedRank();
        Value a = f.reshape(cols(f, x, slot.channel(), rp, in.start(slot.a()), slot.ic()), 1, 1, rp, slot.ic());
        Value bT = f.reshape(cols(f, x, slot.channel(), rp, in.start(slot.bT()), slot.oc()), 1, 1, rp, slot.oc());
        Value u = f.matmul(actT, a, false, true);                                        // (1,1,S,rp)
        return f.add(proj, f.matmul(u, bT));                                             // (1,1,S,OC)
    }

    /** KV channels × T columns of x from column {@code col} as (1,NKV,T,HD). */
    private Value channelHeads(FunctionBuilder f, Value x, int col, int t) {
        return f.transpose(f.reshape(cols(f, x, 0, kv, col, t), 1, nkv, hd, t), 0, 1, 3, 2);
    }

    /**
     * Zeros (1,n,S,HDp−HD) from the input's zero columns (never written: HDp−HD channels of NH·S columns, so they fit any
     * dim ≥ 32), or null when HD is a multiple of 32.
     */
    private Value zeros(FunctionBuilder f, Value x, PackedLayout in, int heads, int s) {
        if (hdp == hd) return null;
        return f.reshape(cols(f, x, 0, hdp - hd, in.start("zero"), heads * s), 1, heads, s, hdp - hd);
    }

    private static Value padded(FunctionBuilder f, Value x, Value pad) {
        return pad == null ? x : f.concat(3, x, pad);
    }

    /** QK-norm weights (1,1,1,HD) from channel 0 of segment qkNorm at offset {@code at}. */
    private Value qkNorm(FunctionBuilder f, Value x, PackedLayout in, int at) {
        return f.reshape(cols(f, x, 0, 1, in.start("qkNorm") + at, hd), 1, 1, 1, hd);
    }

    /** RMSNorm over the head dimension: x (1,n,S,HD), w (1,1,1,HD). */
    private Value headNorm(FunctionBuilder f, Value x, Value w) {
        Value ms = f.reduceMean(f.mul(x, x), true, -1);                                  // (1,n,S,1)
        return f.mul(f.mul(x, f.pow(f.add(ms, c.normEps()), -0.5f)), w);
    }

    /** The rotation P (HDp, HD) with x·P = rotate(x), from channels [0, HDp) of segment rot, as (1,1,HDp,HD). */
    private Value rotation(FunctionBuilder f, Value x, PackedLayout in) {
        return f.reshape(cols(f, x, 0, hdp, in.start("rot"), hd), 1, 1, hdp, hd);
    }

    /** x·cos + rotate(x)·sin, rotate(x) = pad(x)·P (TrainingKernels.rope: exact, each output is one ±x term). */
    private static Value rope(FunctionBuilder f, Value x, Value pad, Value cos, Value sin, Value rot) {
        return f.add(f.mul(x, cos), f.mul(f.matmul(padded(f, x, pad), rot), sin));
    }

    /** P (HDp, HD) row-major with pad(x)·P = rotate(x); rows ≥ HD zero. */
    float[] rotationMatrix() { return RopeTables.rotation(c, hdp, hd); }

    int paddedHeadDim() { return hdp; }

    private TensorType t(int... shape) { return TensorType.of(io, shape); }

    private float scale() { return (float) (1.0 / Math.sqrt(hd)); }

    /** Named ranges along one axis (PackedLayout's builder is train's own). */
    static final class Segments {
        private final Map<String, PackedLayout.Range> segments = new LinkedHashMap<>();
        private int next;

        Segments add(String name, int size) {
            segments.put(name, new PackedLayout.Range(next, size));
            next += size;
            return this;
        }

        int size() { return next; }

        PackedLayout columns(int channels) { return new PackedLayout(channels, next, segments); }

        PackedLayout channels(int width) { return new PackedLayout(next, width, segments); }
    }
}
