package ane4j.model;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Dequantization of ggml's block formats to fp32, after the block layouts of ggml-common.h and the reference
 * dequantize_row_* of ggml-quants.c (docs/import-formats.md has the layouts). Each block's scales are fp16; the
 * arithmetic is fp32 in llama.cpp's order (d·sc first, then ·q, then − m), with no fused multiply-add, so the results
 * equal the reference bit for bit ({@code tools/gen_gguf_golden.py} implements the same layouts in numpy).
 *
 * <pre>
 *   Q8_0  32 values,  34 bytes: f16 d | i8 q[32]                          x = d·q
 *   Q4_0  32 values,  18 bytes: f16 d | u8 qs[16]                         x[j] = d·((qs[j] &amp; 15) − 8), x[j+16] = d·((qs[j] &gt;&gt; 4) − 8)
 *   Q4_K 256 values, 144 bytes: f16 d | f16 dmin | u8 scales[12] | u8 qs[128]
 *         8 sub-blocks of 32, each with a 6-bit scale sc and min m packed in scales[12]; x = d·sc·q − dmin·m, q 4 bits
 *   Q5_K 256 values, 176 bytes: f16 d | f16 dmin | u8 scales[12] | u8 qh[32] | u8 qs[128]   as Q4_K, q 5 bits (high bit in qh)
 *   Q6_K 256 values, 210 bytes: u8 ql[128] | u8 qh[64] | i8 scales[16] | f16 d
 *         16 sub-blocks of 16 with an 8-bit scale; x = d·sc·(q − 32), q 6 bits (low 4 in ql, high 2 in qh)
 * </pre>
 */
final class GgufQuants {
    private GgufQuants() {}

    private static float f16(MemorySegment s, long at) { return Float.float16ToFloat(s.get(LeFiles.SHORT, at)); }

    private static int u8(MemorySegment s, long at) { return s.get(ValueLayout.JAVA_BYTE, at) & 0xFF; }

    /** Dequantizes {@code n} values (whole blocks) of {@code type} at byte {@code at} into {@code dst[dstIndex…]}. */
    static void dequantize(MemorySegment s, long at, Gguf.Type type, float[] dst, int dstIndex, int n) {
        assert n % type.blockSize == 0;
        int blocks = n / type.blockSize;
        switch (type) {
            case F32 -> LeFiles.readFloats(s, at, dst, dstIndex, n);
            case F16 -> {
                for (int i = 0; i < n; i++) dst[dstIndex + i] = f16(s, at + 2L * i);
            }
            case BF16 -> {
                for (int i = 0; i < n; i++) dst[dstIndex + i] = Float.intBitsToFloat(s.get(LeFiles.SHORT, at + 2L * i) << 16);
            }
            case Q8_0 -> {
                for (int b = 0; b < blocks; b++) {
                    long p = at + 34L * b;
                    float d = f16(s, p);
                    for (int j = 0; j < 32; j++) dst[dstIndex + 32 * b + j] = d * s.get(ValueLayout.JAVA_BYTE, p + 2 + j);
                }
            }
            case Q4_0 -> {
                for (int b = 0; b < blocks; b++) {
                    long p = at + 18L * b;
                    float d = f16(s, p);
                    int y = dstIndex + 32 * b;
                    for (int j = 0; j < 16; j++) {
                        int q = u8(s, p + 2 + j);
                        dst[y + j] = ((q & 0xF) - 8) * d;
                        dst[y + j + 16] = ((q >> 4) - 8) * d;
                    }
                }
            }
            case Q4_K, Q5_K -> {
                boolean five = type == Gguf.Type.Q5_K;
                int[] sc = new int[8], mn = new int[8];
                for (int b = 0; b < blocks; b++) {
                    long p = at + (long) type.blockBytes * b;
                    float d = f16(s, p), dmin = f16(s, p + 2);
                    scalesK4(s, p + 4, sc, mn);
                    long qh = p + 16, qs = five ? p + 48 : p + 16;
                    int y = dstIndex + 256 * b;
                    // four groups of 64: low nibbles are sub-block 2g, high nibbles sub-block 2g+1; Q5_K's fifth bit of
                    // value l of sub-block k is bit k of qh[l]
                    for (int g = 0; g < 4; g++) {
                        float d1 = d * sc[2 * g], m1 = dmin * mn[2 * g];
                        float d2 = d * sc[2 * g + 1], m2 = dmin * mn[2 * g + 1];
                        for (int l = 0; l < 32; l++) {
                            int q = u8(s, qs + 32L * g + l);
                            int h = five ? u8(s, qh + l) : 0;
                            dst[y + 64 * g + l] = d1 * ((q & 0xF) + ((h >> (2 * g)) & 1) * 16) - m1;
                            dst[y + 64 * g + 32 + l] = d2 * ((q >> 4) + ((h >> (2 * g + 1)) & 1) * 16) - m2;
                        }
                    }
                }
            }
            case Q6_K -> {
                for (int b = 0; b < blocks; b++) {
                    long p = at + 210L * b;
                    long ql = p, qh = p + 128, scales = p + 192;
                    float d = f16(s, p + 208);
                    int y = dstIndex + 256 * b;
                    // two halves of 128: ql 64 bytes, qh 32 bytes, 8 scales each; value l + 32k of a half takes
                    // ql's low (k even) or high (k odd) nibble of ql[l + 32(k&1)] and bits 2k..2k+1 of qh[l]
                    for (int half = 0; half < 2; half++) {
                        for (int l = 0; l < 32; l++) {
                            int is = l / 16;
                            int lo0 = u8(s, ql + 64L * half + l), lo1 = u8(s, ql + 64L * half + l + 32), hi = u8(s, qh + 32L * half + l);
                            int q1 = ((lo0 & 0xF) | ((hi & 3) << 4)) - 32;
                            int q2 = ((lo1 & 0xF) | (((hi >> 2) & 3) << 4)) - 32;
                            int q3 = ((lo0 >> 4) | (((hi >> 4) & 3) << 4)) - 32;
                            int q4 = ((lo1 >> 4) | (((hi >> 6) & 3) << 4)) - 32;
                            long sc = scales + 8L * half + is;
                            int o = y + 128 * half + l;
                            dst[o] = d * s.get(ValueLayout.JAVA_BYTE, sc) * q1;
                            dst[o + 32] = d * s.get(ValueLayout.JAVA_BYTE, sc + 2) * q2;
                            dst[o + 64] = d * s.get(ValueLayout.JAVA_BYTE, sc + 4) * q3;
                            dst[o + 96] = d * s.get(ValueLayout.JAVA_BYTE, sc + 6) * q4;
                        }
                    }
                }
            }
        }
    }

    /**
     * The eight 6-bit scales and mins of a K-quant block packed in 12 bytes (ggml-quants.c get_scale_min_k4): sub-blocks
     * 0-3 take the low 6 bits of bytes 0-3 (scale) and 4-7 (min); sub-blocks 4-7 take a nibble of bytes 8-11 and the top
     * two bits of bytes 0-3 (scale) and 4-7 (min).
     */
    static void scalesK4(MemorySegment s, long at, int[] sc, int[] mn) {
        int[] q = new int[12];
        for (int i = 0; i < 12; i++) q[i] = u8(s, at + i);
        for (int j = 0; j < 8; j++) {
            if (j < 4) {
                sc[j] = q[j] & 63;
                mn[j] = q[j + 4] & 63;
            } else {
                sc[j] = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
                mn[j] = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
            }
        }
    }
}
