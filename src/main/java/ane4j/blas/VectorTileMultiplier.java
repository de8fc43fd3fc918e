package ane4j.blas;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The Vector API tile multiplier: a 6×(2·L) tile held in 12 vector accumulators (L = lanes of the preferred species, 8 on
 * AVX2, 16 on AVX-512), one broadcast of A and two loads of B per row and step. 12 + 2 + 1 registers fit AVX2's 16.
 *
 * <p>Only loaded (reflectively, by {@link Blas}) when {@code jdk.incubator.vector} is in the boot layer.
 */
final class VectorTileMultiplier implements JavaSgemm.TileMultiplier {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final int L = S.length();
    static final int MR = 6, NR = 2 * L;

    @Override public int mr() { return MR; }
    @Override public int nr() { return NR; }
    @Override public String name() { return "java-vector"; }

    @Override
    public void tile(int kc, float[] ap, int apOff, float[] bp, int bpOff,
                     MemorySegment c, long cIdx, int ldc, int rows, int cols) {
        FloatVector z = FloatVector.zero(S);
        FloatVector c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z;
        FloatVector c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z;
        for (int p = 0; p < kc; p++) {
            // b0, b1: op(B)[p, 0:2L]; a: alpha·op(A)[i, p] broadcast
            int bo = bpOff + p * NR, ao = apOff + p * MR;
            FloatVector b0 = FloatVector.fromArray(S, bp, bo);
            FloatVector b1 = FloatVector.fromArray(S, bp, bo + L);
            FloatVector a = FloatVector.broadcast(S, ap[ao]);
            c00 = a.fma(b0, c00); c01 = a.fma(b1, c01);
            a = FloatVector.broadcast(S, ap[ao + 1]);
            c10 = a.fma(b0, c10); c11 = a.fma(b1, c11);
            a = FloatVector.broadcast(S, ap[ao + 2]);
            c20 = a.fma(b0, c20); c21 = a.fma(b1, c21);
            a = FloatVector.broadcast(S, ap[ao + 3]);
            c30 = a.fma(b0, c30); c31 = a.fma(b1, c31);
            a = FloatVector.broadcast(S, ap[ao + 4]);
            c40 = a.fma(b0, c40); c41 = a.fma(b1, c41);
            a = FloatVector.broadcast(S, ap[ao + 5]);
            c50 = a.fma(b0, c50); c51 = a.fma(b1, c51);
        }
        // spill to a small array, then add into C: passing vectors to a call that C2 does not inline would box them
        // in every iteration of the loop above
        float[] acc = ACC.get();
        c00.intoArray(acc, 0); c01.intoArray(acc, L);
        c10.intoArray(acc, NR); c11.intoArray(acc, NR + L);
        c20.intoArray(acc, 2 * NR); c21.intoArray(acc, 2 * NR + L);
        c30.intoArray(acc, 3 * NR); c31.intoArray(acc, 3 * NR + L);
        c40.intoArray(acc, 4 * NR); c41.intoArray(acc, 4 * NR + L);
        c50.intoArray(acc, 5 * NR); c51.intoArray(acc, 5 * NR + L);
        addTile(acc, c, cIdx, ldc, rows, cols);
    }

    private static final ThreadLocal<float[]> ACC = ThreadLocal.withInitial(() -> new float[MR * NR]);

    /** C[rows×cols at cIdx] += acc[rows×cols] (acc row stride NR). */
    private static void addTile(float[] acc, MemorySegment c, long cIdx, int ldc, int rows, int cols) {
        ByteOrder order = ByteOrder.nativeOrder();
        for (int i = 0; i < rows; i++) {
            long row = cIdx + (long) i * ldc;
            int j = 0;
            for (; j + L <= cols; j += L) {
                long off = (row + j) * Float.BYTES;
                FloatVector.fromMemorySegment(S, c, off, order).add(FloatVector.fromArray(S, acc, i * NR + j))
                        .intoMemorySegment(c, off, order);
            }
            for (; j < cols; j++) c.setAtIndex(Sgemm.FLOAT, row + j, c.getAtIndex(Sgemm.FLOAT, row + j) + acc[i * NR + j]);
        }
    }
}
