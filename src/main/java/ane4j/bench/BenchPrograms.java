package ane4j.bench;

import static ane4j.mil.Mil.fp16;
import static ane4j.mil.Mil.fp32;

import ane4j.mil.DType;
import ane4j.mil.FunctionBuilder;
import ane4j.mil.Literal;
import ane4j.mil.Mil;
import ane4j.mil.MilBlob;
import ane4j.mil.Program;
import ane4j.mil.ProgramBuilder;
import ane4j.mil.Value;
import ane4j.mil.Weights;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The benchmark programs of ane-facts.md §9, built with the fluent API: A2 (peak conv chain), A3 (INT8 W8A8 chain and its
 * fp16 twin) and A4 (one dynamic matmul). These are the only definitions: {@code ane4j bench}, {@code ane4j doctor} and the
 * golden MIL tests use them. Weights are deterministic from fixed seeds and scaled so that activations stay finite on the
 * reference backend (the ANE's timing does not depend on the values).
 *
 * <p>Weight files (audit F12): by default each weight is its own file {@code @model_path/weights/W<i>.bin} with one blob at
 * offset 64, as every hardware-proven training kernel does (maderix {@code mil_dynamic.h}, Orion), because maderix's
 * benchmark report ({@code benchmarks/ANE_BENCHMARK_REPORT.md}, M1/M1 Pro/M1 Max) lists "Single-blob weights FAIL" and
 * "BLOBFILE offset refs FAIL" on M1. {@link WeightFiles#PACKED} keeps maderix's {@code inmem_peak.m}/{@code ane_int8_bench.m}
 * form (all weights in one {@code weight.bin} at offsets 64 + i·(64 + size)), which ran on M4, for {@code doctor} to try.
 */
public final class BenchPrograms {
    private BenchPrograms() {}

    /** The quantization scale of A3: weights, activations and dequantization all use 2^-3. */
    public static final float INT8_SCALE = 0x1p-3f;

    /** Where the weights go. */
    public enum WeightFiles {
        /** One file per weight, {@code W<i>.bin}, its blob at offset 64 (the default). */
        PER_WEIGHT,
        /** One {@code weight.bin} holding every blob (maderix's benchmarks; fails on M1 per maderix's benchmark report). */
        PACKED
    }

    /** A2's input and output type. */
    public enum Io {
        /** fp16 in and out, no {@code cast}: runs on M1/M2 (maderix PR #6: "M1/M2 ANE can't do the cast op"). */
        FP16,
        /** fp32 in and out with a {@code cast} at each end: acceptance text A2/A1 and maderix's {@code inmem_peak.m}. */
        FP32_CAST
    }

    /**
     * The {@code mil_dtype} an int8 blob's metadata carries. {@link #CODE_4} (the default) is coremltools' {@code
     * BlobDataType::Int8} ({@code mlmodel/src/MILBlob/Blob/StorageFormat.hpp}), which coremltools writes and its reader
     * checks against the tensor type. {@link #CODE_1} (fp16's code) is what maderix's {@code ane_int8_bench.m}
     * ({@code buildWeightBlobInt8}: {@code chunk[4]=0x01}) wrote on int8 data, and that ran on M4 — with a wrong size
     * field and data offset 0 as well, so the ANE compiler evidently takes type and size from the MIL text there. Which
     * codes a given Mac accepts is what {@code ane4j doctor}'s {@code int8-blob-code4}/{@code int8-blob-code1} rungs answer.
     */
    public enum Int8BlobCode { CODE_4, CODE_1 }

    /** Uniform in ±sqrt(3/c) (unit gain per 1×1 conv of c channels) from a seed. */
    static float[] convWeights(long seed, int c) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] w = new float[c * c];
        double a = Math.sqrt(3.0 / c);
        for (int i = 0; i < w.length; i++) w[i] = (float) ((r.nextDouble() * 2 - 1) * a);
        return w;
    }

    /** The int8 weights of A3's layer i: [c, c] in −8..8 (times 2^-3: −1..1). */
    public static byte[] int8Weights(int c, int layer) {
        SplittableRandom r = new SplittableRandom(300 + layer);
        byte[] q = new byte[c * c];
        for (int k = 0; k < q.length; k++) q[k] = (byte) (r.nextInt(17) - 8);
        return q;
    }

    private static ProgramBuilder program(WeightFiles files) {
        return files == WeightFiles.PACKED ? Mil.program().packWeightsInto("weight.bin") : Mil.program();
    }

    /** A2 in the form that runs on every chip: fp16 I/O, one weight file per conv. */
    public static Program a2PeakConvChain(int c, int s, int n) { return a2PeakConvChain(c, s, n, Io.FP16, WeightFiles.PER_WEIGHT); }

    /**
     * A2: x [1,c,1,s] (fp16, or fp32 → cast fp16) → n chained 1×1 convs with fp16 weights W0..W(n−1) → y (fp16, or cast
     * fp32). FLOPs per evaluation: 2·c²·s·n.
     */
    public static Program a2PeakConvChain(int c, int s, int n, Io io, WeightFiles files) {
        return program(files).function("main", f -> {
            Value h = io == Io.FP16 ? f.input("x", fp16(1, c, 1, s)) : f.named("x16", f.cast(f.input("x", fp32(1, c, 1, s)), DType.FP16));
            for (int i = 0; i < n; i++) {
                String name = io == Io.FP16 && i == n - 1 ? "y" : "c" + i;   // fp16: the last conv is the output
                h = f.named(name, f.conv(h, f.weight("W" + i, fp16(c, c, 1, 1), convWeights(100 + i, c))));
            }
            f.output(io == Io.FP16 ? h : f.named("y", f.cast(h, DType.FP32)));
        }).build();
    }

    /** A3 with one int8 weight file per layer, mil_dtype 4. */
    public static Program a3Int8Chain(int c, int h, int w, int n) { return a3Int8Chain(c, h, w, n, WeightFiles.PER_WEIGHT, Int8BlobCode.CODE_4); }

    /**
     * A3: x fp16 [1,c,h,w]; per layer Wi = constexpr_affine_dequantize(int8 [c,c,1,1], scale 2^-3, zero point 0, axis 0)
     * → conv → (except the last) quantize to int8 (scale 2^-3) → dequantize (scale 2^-3). FLOPs: 2·c²·h·w·n.
     * With {@link Int8BlobCode#CODE_1} the blobs say fp16 over int8 bytes: only the ANE reads such files (the reference
     * backend refuses the mismatch), so compare them with the {@link Int8BlobCode#CODE_4} program.
     */
    public static Program a3Int8Chain(int c, int h, int w, int n, WeightFiles files, Int8BlobCode code) {
        Program p = program(files).function("main", f -> {
            Value cur = f.input("x", fp16(1, c, h, w));
            for (int i = 0; i < n; i++) {
                var wi = f.constexprAffineDequantize("W" + i, Mil.int8(c, c, 1, 1), int8Weights(c, i), Literal.fp16(INT8_SCALE), Literal.int8(0), 0, null);
                cur = f.named("c" + i, f.conv(cur, wi));
                if (i < n - 1) cur = f.named("dq" + i, f.dequantize(f.named("q" + i, f.quantize(cur, INT8_SCALE, DType.INT8)), INT8_SCALE));
            }
            f.output(cur);
        }).build();
        return code == Int8BlobCode.CODE_4 ? p : p.withWeights(int8AsCode1(p.weights()));
    }

    /** The same blobs with every int8 one re-labelled fp16 (mil_dtype 1), as maderix's int8 benchmark wrote them. */
    static Weights int8AsCode1(Weights w) {
        Map<String, Weights.File> files = new LinkedHashMap<>();
        w.files().forEach((path, file) -> files.put(path, new Weights.File(path, file.blobs().stream()
                .map(b -> b.dtype() == DType.INT8 ? new MilBlob.Entry(DType.FP16, b.data(), b.metadataOffset()) : b).toList())));
        return new Weights(files);
    }

    /** A3's fp16 twin, one weight file per layer. */
    public static Program a3Fp16Chain(int c, int h, int w, int n) { return a3Fp16Chain(c, h, w, n, WeightFiles.PER_WEIGHT); }

    /** A3's fp16 twin: the same chain with fp16 weights (the int8 values times 2^-3) and no quantization. */
    public static Program a3Fp16Chain(int c, int h, int w, int n, WeightFiles files) {
        return program(files).function("main", f -> {
            Value cur = f.input("x", fp16(1, c, h, w));
            for (int i = 0; i < n; i++) {
                byte[] q = int8Weights(c, i);
                float[] wf = new float[q.length];
                for (int k = 0; k < q.length; k++) wf[k] = q[k] * INT8_SCALE;
                cur = f.named("c" + i, f.conv(cur, f.weight("W" + i, fp16(c, c, 1, 1), wf)));
            }
            f.output(cur);
        }).build();
    }

    /** A4: input [1,ic,1,seq+oc] = (act, W) → out [1,oc,1,seq] = Wᵀ·act (slice, reshape, transpose, matmul). */
    public static Program a4DynamicMatmul(int ic, int seq, int oc) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp16(1, ic, 1, seq + oc));
            var act = f.named("act", f.sliceBySize(x, new int[] {0, 0, 0, 0}, new int[] {1, ic, 1, seq}));
            var w = f.named("W", f.sliceBySize(x, new int[] {0, 0, 0, seq}, new int[] {1, ic, 1, oc}));
            f.output(f.named("y", dynMatmul(f, act, w)));
        }).build();
    }

    private static Value dynMatmul(FunctionBuilder f, Value act, Value w) {
        int ic = act.shape()[1], seq = act.shape()[3], oc = w.shape()[3];
        var at = f.transpose(f.reshape(act, 1, 1, ic, seq), 0, 1, 3, 2);   // [1,1,SEQ,IC]
        var y = f.matmul(at, f.reshape(w, 1, 1, ic, oc));                  // [1,1,SEQ,OC]
        return f.reshape(f.transpose(y, 0, 1, 3, 2), 1, oc, 1, seq);      // [1,OC,1,SEQ]
    }
}
