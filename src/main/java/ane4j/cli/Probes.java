package ane4j.cli;

import ane4j.mil.FunctionBuilder;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.Value;
import ane4j.model.ModelConfig;
import ane4j.train.TrainingKernels;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The ladder of programs {@code ane4j doctor} runs, simplest first: one conv (works on every ANE generation), one dynamic
 * matmul (weights staged in the input, as training does), attention with an explicit causal mask, then every training
 * kernel at the model size. Sizes respect the ANE rules of anchors.md §1.3 (spatial a multiple of 16, matmul inner
 * dimensions multiples of 32). All fp16 I/O, so M1/M2 (no cast) can run them.
 */
public final class Probes {
    private Probes() {}

    /** One rung: a name, a program, and the scale of its uniform random inputs. */
    public record Probe(String name, Program program, float inputScale) {}

    static final int C = 256, S = 64, HEADS = 4;

    public static List<Probe> ladder(ModelConfig model) {
        List<Probe> l = new ArrayList<>();
        l.add(new Probe("conv", conv(C, S), 1f));
        l.add(new Probe("dynamic-matmul", dynamicMatmul(C, S, C), 1f));
        l.add(new Probe("attention-mask", attention(C, HEADS, S), 1f));
        for (TrainingKernels.Kernel k : new TrainingKernels(model).all()) l.add(new Probe("train/" + k.name(), k.program(), TRAIN_SCALE));
        return l;
    }

    /** Training inputs pack activations and weights; ±0.25 keeps the fp16 sums of the widest kernels far from overflow. */
    static final float TRAIN_SCALE = 0.25f;

    /** y [1,c,1,s] = W·x with a 1×1 conv, W [c,c,1,1] uniform ±1/√c from a fixed seed. */
    public static Program conv(int c, int s) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(1, c, 1, s));
            var w = f.weight("W", Mil.fp16(c, c, 1, 1), uniform(1, c * c, (float) (1 / Math.sqrt(c))));
            f.output(f.named("y", f.conv(x, w)));
        }).build();
    }

    /** x [1,ic,1,s+oc] = (act [ic,s] | W [ic,oc]); y [1,oc,1,s] = Wᵀ·act. */
    public static Program dynamicMatmul(int ic, int s, int oc) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(1, ic, 1, s + oc));
            var act = f.sliceBySize(x, new int[] {0, 0, 0, 0}, new int[] {1, ic, 1, s});    // [1,IC,1,S]
            var w = f.sliceBySize(x, new int[] {0, 0, 0, s}, new int[] {1, ic, 1, oc});     // [1,IC,1,OC]
            var at = f.transpose(f.reshape(act, 1, 1, ic, s), 0, 1, 3, 2);                  // [1,1,S,IC]
            var y = f.matmul(at, f.reshape(w, 1, 1, ic, oc));                               // [1,1,S,OC]
            f.output(f.named("y", f.reshape(f.transpose(y, 0, 1, 3, 2), 1, oc, 1, s)));    // [1,OC,1,S]
        }).build();
    }

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

    /** [1,H·HD,1,S] → [1,H,S,HD] */
    private static Value toHeads(FunctionBuilder f, Value x, int heads) {
        int c = x.shape()[1], s = x.shape()[3];
        return f.transpose(f.reshape(x, 1, heads, c / heads, s), 0, 1, 3, 2);
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
