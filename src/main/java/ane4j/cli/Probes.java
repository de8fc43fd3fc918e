package ane4j.cli;

import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.programs.AcceptancePrograms;
import ane4j.mil.FunctionBuilder;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.Value;
import ane4j.model.ModelConfig;
import ane4j.train.TrainingKernels;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The ladder {@code ane4j doctor} walks, simplest first: one conv (works on every ANE generation), one dynamic matmul
 * (weights staged in the input, as training does), attention with an explicit causal mask, the A2 conv chain; then one
 * probe per assumption the first Mac run must confirm (audit F4, F5, F8, F12, F14 and the minimum surface: each a small
 * program whose outcome on the ANE, compared with the reference backend, answers it); then every training kernel of the
 * model. Rungs must match the reference; probes observe (a probe that fails to compile or differs is an answer, not a
 * ladder failure). All fp16 I/O except the probe of {@code cast}, so M1/M2 (no cast) can run the rest.
 */
public final class Probes {
    private Probes() {}

    /** A rung must compile and match the reference; a probe records what happened for the assumption it tests. */
    public enum Kind { RUNG, PROBE }

    /** How a probe's inputs are made from the kernel's input specs (null in {@link Probe}: uniform ±inputScale). */
    @FunctionalInterface
    public interface Inputs { Map<String, TensorBuffer> make(List<TensorSpec> specs); }

    /**
     * One step of the ladder.
     * @param reference  what the reference backend runs (usually {@code program}; the int8 code-1 probe's reference is the
     *                   code-4 program, since only the ANE reads fp16-labelled int8 blobs)
     * @param assumption the audit finding it answers (e.g. {@code F8}), null for plain rungs
     * @param rule       the chip rule ({@code ane4j.chip.Rule} id) the probe tests, null when none
     */
    /**
     * How the ANE backend is set for one probe, so that it observes what it tests: {@code SEPARATE_WEIGHT_FILES} sends the
     * program's weight files as they are (no packing on macOS 27), {@code PACKED_ROWS} writes short rows packed (no
     * 64-byte stride on macOS 27), {@code EXACT_SURFACES} allocates each surface at its own size (no 48 KB floor, R2).
     */
    public enum Knob { SEPARATE_WEIGHT_FILES, PACKED_ROWS, EXACT_SURFACES }

    public record Probe(String name, Kind kind, Program program, Program reference, Inputs inputs, float inputScale,
                        String assumption, String rule, java.util.Set<Knob> knobs) {
        public Probe {
            if (reference == null) reference = program;
            knobs = knobs == null ? java.util.Set.of() : java.util.Set.copyOf(knobs);
        }

        public Probe(String name, Kind kind, Program program, Program reference, Inputs inputs, float inputScale, String assumption, String rule) {
            this(name, kind, program, reference, inputs, inputScale, assumption, rule, null);
        }

        Probe with(Knob... k) { return new Probe(name, kind, program, reference, inputs, inputScale, assumption, rule, java.util.Set.of(k)); }

        /** The weight files the program carries (what macOS 27's bundle check counts). */
        public int weightFiles() { return program.weights().files().size(); }

        static Probe rung(String name, Program p, float scale) { return new Probe(name, Kind.RUNG, p, p, null, scale, null, null); }

        static Probe probe(String name, Program p, Inputs in, String assumption, String rule) {
            return new Probe(name, Kind.PROBE, p, p, in, 1f, assumption, rule);
        }
    }

    static final int C = 256, S = 64, HEADS = 4;

    /** Training inputs pack activations and weights; ±0.25 keeps the fp16 sums of the widest kernels far from overflow. */
    static final float TRAIN_SCALE = 0.25f;

    public static List<Probe> ladder(ModelConfig model) {
        List<Probe> l = new ArrayList<>();
        l.add(Probe.rung("conv", conv(C, S), 1f));
        // F2: the same program again: the daemon has it compiled (identifier = content hash), so it should load without compiling
        l.add(Probe.probe("conv-reload", conv(C, S), null, "F2", null));
        // macOS 27 (docs/macos27-ane.md): two weight files as they are (C2: Code=10 expected on 27), the same two blobs in one
        // packed file with the second conv's output compared by value (C3: "blobs after the first read back wrong"), and
        // 32-byte rows written packed (C7: 27 reads rows at a 64-byte stride)
        l.add(Probe.probe("weights-2-files", twoConvs(C, S, false), null, "C2", null).with(Knob.SEPARATE_WEIGHT_FILES));
        l.add(Probe.probe("weights-packed-2", twoConvs(C, S, true), null, "C3", null));
        l.add(Probe.probe("row-32B", scale(64, 16), null, "C7", null).with(Knob.PACKED_ROWS));
        l.add(Probe.rung("dynamic-matmul", dynamicMatmul(C, S, C), 1f));
        l.add(Probe.rung("attention-mask", attention(C, HEADS, S), 1f));
        l.add(Probe.rung("a2-conv-chain", AcceptancePrograms.a2PeakConvChain(C, S, 4), 1f));
        l.addAll(assumptionProbes());
        for (TrainingKernels.Spec k : new TrainingKernels(model).all()) l.add(trainRung(k));
        return l;
    }

    /** One probe per assumption with a program that can answer it on the ANE. */
    static List<Probe> assumptionProbes() {
        List<Probe> l = new ArrayList<>();
        // F12: fp32 I/O with cast (maderix PR #6: not on M1/M2) and all weights in one file (maderix's report: FAIL on M1)
        l.add(Probe.probe("a2-fp32-cast", AcceptancePrograms.a2PeakConvChain(C, S, 4, AcceptancePrograms.Io.FP32_CAST, AcceptancePrograms.WeightFiles.PER_WEIGHT), null, "F12", "cast"));
        l.add(Probe.probe("a2-packed-blob", AcceptancePrograms.a2PeakConvChain(C, S, 4, AcceptancePrograms.Io.FP16, AcceptancePrograms.WeightFiles.PACKED), null, "F12", "packed-blob"));
        // F12: the int8 blob's mil_dtype, coremltools' 4 and maderix's 1, on the same MIL (the reference runs code 4)
        Program int8 = AcceptancePrograms.a3Int8Chain(64, 8, 8, 2);
        l.add(Probe.probe("int8-blob-code4", int8, null, "F12", null));
        l.add(new Probe("int8-blob-code1", Kind.PROBE,
                AcceptancePrograms.a3Int8Chain(64, 8, 8, 2, AcceptancePrograms.WeightFiles.PER_WEIGHT, AcceptancePrograms.Int8BlobCode.CODE_1),
                int8, null, 1f, "F12", null));
        // F8: matmul contraction 32 and 16 (maderix #47, M1: not a multiple of 32 silently gives zeros)
        l.add(Probe.probe("matmul-k32", dynamicMatmul(32, S, 64), null, "F8", null));
        l.add(Probe.probe("matmul-k16", dynamicMatmul(16, S, 64), null, "F8", "matmul-contraction-32"));
        // F4: |v| > 4094 read through a width-offset slice (ANEForge #164/#178: ±inf on M1–M3); matmul outputs of 40000
        l.add(Probe.probe("slice-clamp-4094", sliceAtWidthOffset(64, S), Probes::sliceClampInputs, "F4", "slice-clamp"));
        l.add(Probe.probe("matmul-saturation", dynamicMatmul(32, S, 64), Probes::saturationInputs, "F4", "matmul-saturation"));
        // F5/F6: an axis of exactly 16384 and one of 32768 (ANEForge _targets.py: cap 16384 on M1–M3, 65536 on M4/M5)
        l.add(Probe.probe("width-16384", wideAxis(2, 8192), null, "F5", "axis-cap"));
        l.add(Probe.probe("width-32768", wideAxis(4, 8192), null, "F5", "axis-cap"));
        // F14: several inputs/outputs of equal, ascending and descending sizes (Orion: equal sizes; maderix #47: ascending)
        l.add(Probe.probe("multi-input-equal", twoInputs(S, S), null, "F14", null).with(Knob.EXACT_SURFACES));
        l.add(Probe.probe("multi-input-ascending", twoInputs(S / 2, S), null, "F14", null).with(Knob.EXACT_SURFACES));
        l.add(Probe.probe("multi-input-descending", twoInputs(S, S / 2), null, "F14", null).with(Knob.EXACT_SURFACES));
        l.add(Probe.probe("multi-output-descending", twoOutputs(S, S / 2), null, "F14", null).with(Knob.EXACT_SURFACES));
        l.add(Probe.probe("multi-output-ascending", twoOutputs(S / 2, S), null, "F14", null).with(Knob.EXACT_SURFACES));
        // minimum surface: a 512-byte tensor (ane4j pads surfaces to 48 KB; Orion: 0x1d below ~48 KB; ironmill: 16 KB)
        l.add(Probe.probe("small-surface", scale(16, 16), null, "surface", "min-surface").with(Knob.EXACT_SURFACES));
        return l;
    }

    /** y [1,c,1,s] = W·x with a 1×1 conv, W [c,c,1,1] uniform ±1/√c from a fixed seed. */
    public static Program conv(int c, int s) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(1, c, 1, s));
            var w = f.weight("W", Mil.fp16(c, c, 1, 1), uniform(1, c * c, (float) (1 / Math.sqrt(c))));
            f.output(f.named("y", f.conv(x, w)));
        }).build();
    }

    /**
     * y1 = W1·x and y2 = W2·x, two 1×1 convs side by side, so that each output reads one blob: in two weight files, or
     * with {@code packed} both blobs in one file (the second at a non-64 BLOBFILE offset), where y2 checks the second blob
     * by value.
     */
    public static Program twoConvs(int c, int s, boolean packed) {
        Program p = Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(1, c, 1, s));
            var w1 = f.weight("W1", Mil.fp16(c, c, 1, 1), uniform(3, c * c, (float) (1 / Math.sqrt(c))));
            var w2 = f.weight("W2", Mil.fp16(c, c, 1, 1), uniform(4, c * c, (float) (1 / Math.sqrt(c))));
            f.output(f.named("y1", f.conv(x, w1)));
            f.output(f.named("y2", f.conv(x, w2)));
        }).build();
        return packed ? p.packedWeights("weight.bin") : p;
    }

    /** A4 of the acceptance programs: x [1,ic,1,s+oc] = (act [ic,s] | W [ic,oc]); y [1,oc,1,s] = Wᵀ·act (contraction ic). */
    public static Program dynamicMatmul(int ic, int s, int oc) { return AcceptancePrograms.a4DynamicMatmul(ic, s, oc); }

    /** x [1,3·dim,1,s] = (q | k | v); y [1,dim,1,s] = softmax(q·kᵀ/√hd + causal mask)·v per head. */
    public static Program attention(int dim, int heads, int s) {
        int hd = dim / heads;
        return Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(1, 3 * dim, 1, s));
            var q = toHeads(f, f.sliceBySize(x, new int[] {0, 0, 0, 0}, new int[] {1, dim, 1, s}), heads);        // [1,H,S,HD]
            var k = toHeads(f, f.sliceBySize(x, new int[] {0, dim, 0, 0}, new int[] {1, dim, 1, s}), heads);
            var v = toHeads(f, f.sliceBySize(x, new int[] {0, 2 * dim, 0, 0}, new int[] {1, dim, 1, s}), heads);
            var scores = f.mul(f.matmul(q, k, false, true), (float) (1 / Math.sqrt(hd)));                         // [1,H,S,S]
            var mask = f.weight("mask", Mil.fp16(1, 1, s, s), causalMask(s));
            var probs = f.softmax(f.add(scores, mask), -1);
            var att = f.matmul(probs, v);                                                                         // [1,H,S,HD]
            f.output(f.named("y", f.reshape(f.transpose(att, 0, 1, 3, 2), 1, dim, 1, s)));                      // [1,DIM,1,S]
        }).build();
    }

    /** x [1,c,1,2s] = (a | b); y [1,c,1,s] = a + b, b read through a slice at width offset s. */
    static Program sliceAtWidthOffset(int c, int s) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(1, c, 1, 2 * s));
            var a = f.sliceBySize(x, new int[] {0, 0, 0, 0}, new int[] {1, c, 1, s});
            var b = f.sliceBySize(x, new int[] {0, 0, 0, s}, new int[] {1, c, 1, s});
            f.output(f.named("y", f.add(a, b)));
        }).build();
    }

    /** x [1,c,1,w] → [1,1,1,c·w] (the wide axis) → ×2 → back to [1,c,1,w]. */
    static Program wideAxis(int c, int w) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(1, c, 1, w));
            var wide = f.mul(f.reshape(x, 1, 1, 1, c * w), 2f);   // [1,1,1,C·W]
            f.output(f.named("y", f.reshape(wide, 1, c, 1, w)));
        }).build();
    }

    /** a [1,64,1,sa], b [1,64,1,sb]; y [1,64,1,min] = a + 2·b over the first min(sa, sb) columns (a swap shows). */
    static Program twoInputs(int sa, int sb) {
        int s = Math.min(sa, sb);
        return Mil.program().function("main", f -> {
            var a = f.input("a", Mil.fp16(1, 64, 1, sa));
            var b = f.input("b", Mil.fp16(1, 64, 1, sb));
            f.output(f.named("y", f.add(columns(f, a, s), f.mul(columns(f, b, s), 2f))));
        }).build();
    }

    /** x [1,64,1,max]; p [1,64,1,sp] = 2·x, q [1,64,1,sq] = x + 1 (first columns of each). */
    static Program twoOutputs(int sp, int sq) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(1, 64, 1, Math.max(sp, sq)));
            var p = f.named("p", f.mul(columns(f, x, sp), 2f));
            var q = f.named("q", f.add(columns(f, x, sq), 1f));
            f.output(p, q);
        }).build();
    }

    /** y [1,c,1,s] = 2·x: a tensor far below every minimum-surface figure. */
    static Program scale(int c, int s) {
        return Mil.program().function("main", f -> f.output(f.named("y", f.mul(f.input("x", Mil.fp16(1, c, 1, s)), 2f)))).build();
    }

    /** The first {@code s} columns of x [1,C,1,W] (x itself when W = s). */
    private static Value columns(FunctionBuilder f, Value x, int s) {
        if (x.shape()[3] == s) return x;
        return f.sliceBySize(x, new int[] {0, 0, 0, 0}, new int[] {1, x.shape()[1], 1, s});
    }

    /** [1,H·HD,1,S] → [1,H,S,HD] */
    private static Value toHeads(FunctionBuilder f, Value x, int heads) {
        int c = x.shape()[1], s = x.shape()[3];
        return f.transpose(f.reshape(x, 1, heads, c / heads, s), 0, 1, 3, 2);
    }

    /** x [1,c,1,2s]: a (first s columns) uniform ±1, b (last s) of magnitude 4100–6000 with random signs. */
    static Map<String, TensorBuffer> sliceClampInputs(List<TensorSpec> specs) {
        TensorSpec x = specs.get(0);
        int c = x.type().shape()[1], w = x.type().shape()[3];
        TensorBuffer b = TensorBuffer.allocate(x.type());
        SplittableRandom r = new SplittableRandom(4094);
        for (int ch = 0; ch < c; ch++)
            for (int col = 0; col < w; col++) {
                double v = col < w / 2 ? r.nextDouble() * 2 - 1 : (4100 + r.nextDouble() * 1900) * (r.nextBoolean() ? 1 : -1);
                b.set((long) ch * w + col, (float) v);
            }
        return Map.of(x.name(), b);
    }

    /** x [1,32,1,s+oc]: activations 25, weights 50, so every output is 32·25·50 = 40000 (exact in fp16, above 32752). */
    static Map<String, TensorBuffer> saturationInputs(List<TensorSpec> specs) {
        TensorSpec x = specs.get(0);
        int c = x.type().shape()[1], w = x.type().shape()[3];
        TensorBuffer b = TensorBuffer.allocate(x.type());
        for (int ch = 0; ch < c; ch++) for (int col = 0; col < w; col++) b.set((long) ch * w + col, col < S ? 25f : 50f);
        return Map.of(x.name(), b);
    }

    /**
     * A training kernel as a rung: uniform ±{@link #TRAIN_SCALE} activations and weights, with the kernel's constants (RoPE
     * tables, rotation, mask, head pads) written into their input regions as training writes them.
     */
    static Probe trainRung(TrainingKernels.Spec k) {
        Inputs in = specs -> {
            Map<String, TensorBuffer> m = uniformInputs(specs, ("train/" + k.name()).hashCode(), TRAIN_SCALE);
            k.writeConstants(m.get(TrainingKernels.INPUT));
            return m;
        };
        return new Probe("train/" + k.name(), Kind.RUNG, k.program(), k.program(), in, TRAIN_SCALE, null, null);
    }

    /** Uniform ±scale inputs, one seed per input. */
    static Map<String, TensorBuffer> uniformInputs(List<TensorSpec> specs, long seed, float scale) {
        Map<String, TensorBuffer> m = new LinkedHashMap<>();
        long n = 0;
        for (TensorSpec s : specs) m.put(s.name(), TensorBuffer.random(s.type(), seed + n++, scale));
        return m;
    }

    /** [s,s]: 0 where key ≤ query, −65504 (fp16 lowest) otherwise. */
    static float[] causalMask(int s) {
        float[] m = new float[s * s];
        for (int q = 0; q < s; q++) for (int k = q + 1; k < s; k++) m[q * s + k] = TrainingKernels.MASK_VALUE;
        return m;
    }

    static float[] uniform(long seed, int n, float scale) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] w = new float[n];
        for (int i = 0; i < n; i++) w[i] = (float) ((r.nextDouble() * 2 - 1) * scale);
        return w;
    }
}
