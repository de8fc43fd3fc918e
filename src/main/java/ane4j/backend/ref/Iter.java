package ane4j.backend.ref;

import ane4j.blas.Parallel;

/**
 * Iteration over a shape for several strided operands, planned once: dimensions that are contiguous for every operand
 * are merged, so a dense elementwise op runs as one row. The caller's {@link Row} gets each operand's offset at the
 * start of a row, the row length, and reads the per-operand inner strides from {@link #inner}.
 */
final class Iter {
    interface Row { void run(long[] offs, int n); }

    final int[] dims;
    final long[][] strides;
    final long[] base;
    /** Per operand: the stride along the row. */
    final long[] inner;
    final int rowLen;

    /** @param strides per operand, one stride per dimension of {@code shape}; @param base per operand start offset */
    Iter(int[] shape, long[][] strides, long[] base) {
        int ops = strides.length;
        int r = shape.length;
        int[] d = new int[Math.max(1, r)];
        long[][] s = new long[ops][Math.max(1, r)];
        int n = 0;
        if (r == 0) { d[0] = 1; n = 1; }
        for (int i = 0; i < r; i++) {
            if (shape[i] == 1 && r > 1) continue;
            if (n > 0) {
                boolean merge = true;
                for (int k = 0; k < ops; k++) if (s[k][n - 1] != strides[k][i] * shape[i]) { merge = false; break; }
                if (merge) {
                    d[n - 1] *= shape[i];
                    for (int k = 0; k < ops; k++) s[k][n - 1] = strides[k][i];
                    continue;
                }
            }
            d[n] = shape[i];
            for (int k = 0; k < ops; k++) s[k][n] = strides[k][i];
            n++;
        }
        if (n == 0) { d[0] = 1; n = 1; }
        this.dims = java.util.Arrays.copyOf(d, n);
        this.strides = new long[ops][];
        for (int k = 0; k < ops; k++) this.strides[k] = java.util.Arrays.copyOf(s[k], n);
        this.base = base.clone();
        this.inner = new long[ops];
        for (int k = 0; k < ops; k++) inner[k] = this.strides[k][n - 1];
        this.rowLen = dims[n - 1];
    }

    static Iter of(int[] shape, T... ts) {
        long[][] s = new long[ts.length][];
        long[] b = new long[ts.length];
        for (int k = 0; k < ts.length; k++) { s[k] = ts[k].broadcastStrides(shape); b[k] = ts[k].off; }
        return new Iter(shape, s, b);
    }

    void run(Row row) { runRows(0, rowCount(), row); }

    /** Rows (every index but the last) of the iteration. */
    private long rowCount() {
        long rows = 1;
        for (int i = 0; i < dims.length - 1; i++) rows *= dims[i];
        return rows;
    }

    /** Rows [r0, r1), the outer index advanced as an odometer with offsets updated incrementally. */
    private void runRows(long r0, long r1, Row row) {
        int n = dims.length, ops = base.length;
        long[] offs = offsetsAt(r0);
        int[] idx = indexAt(r0);
        for (long r = r0; r < r1; r++) {
            row.run(offs, rowLen);
            for (int i = n - 2; i >= 0; i--) {
                if (++idx[i] < dims[i]) {
                    for (int k = 0; k < ops; k++) offs[k] += strides[k][i];
                    break;
                }
                idx[i] = 0;
                for (int k = 0; k < ops; k++) offs[k] -= strides[k][i] * (dims[i] - 1);
            }
        }
    }

    /** Elements below which {@link #runParallel} stays on the calling thread. */
    static final long PARALLEL_MIN = 1 << 16;

    /**
     * Same as {@link #run} for rows that only write their own elements (elementwise ops; never reductions): large
     * iterations are split into disjoint row ranges, or a single long row into disjoint pieces, run by {@link Parallel}.
     */
    void runParallel(Row row) { runParallel(row, 1); }

    /** {@link #runParallel(Row)} where a row may only be cut at multiples of {@code align} elements (whole softmax rows). */
    void runParallel(Row row, int align) {
        int ops = base.length;
        long rows = rowCount();
        int par = Parallel.threads();
        if (rows * rowLen < PARALLEL_MIN || par < 2) { run(row); return; }
        if (rows < par) {
            // one (or few) long rows: pieces of each row
            int pieces = par * 2, chunk = ((rowLen + pieces - 1) / pieces + align - 1) / align * align;
            Parallel.forEach((int) (rows * pieces), t -> {
                long r = t / pieces;
                int from = (t % pieces) * chunk, len = Math.min(chunk, rowLen - from);
                if (len <= 0) return;
                long[] offs = offsetsAt(r);
                for (int k = 0; k < ops; k++) offs[k] += from * inner[k];
                row.run(offs, len);
            });
            return;
        }
        int tasks = (int) Math.min(rows, par * 4L);
        Parallel.forEach(tasks, t -> runRows(rows * t / tasks, rows * (t + 1) / tasks, row));
    }

    /** The outer index (odometer digits) of row r. */
    private int[] indexAt(long r) {
        int n = dims.length;
        int[] idx = new int[n];
        for (int i = n - 2; i >= 0; i--) { idx[i] = (int) (r % dims[i]); r /= dims[i]; }
        return idx;
    }

    /** Every operand's offset at the start of row r. */
    private long[] offsetsAt(long r) {
        int[] idx = indexAt(r);
        long[] offs = base.clone();
        for (int i = 0; i < dims.length - 1; i++) for (int k = 0; k < offs.length; k++) offs[k] += idx[i] * strides[k][i];
        return offs;
    }
}
