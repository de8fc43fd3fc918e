package ane4j.backend.ref;

import ane4j.blas.VectorMath;
import ane4j.mil.Op;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A chain of elementwise ops, optionally ended by a softmax or a reduction over the last axis, run as ONE pass over
 * memory: the operands of each chunk of rows are read once into heap arrays, every op of the chain runs on the arrays
 * (rounded to fp16 after each op exactly where the op on its own would round its stored result), and only the last
 * result is written. Every element gets the same float operations in the same order as when the ops run one by one
 * (the planner's {@code -Dane4j.ref.fuse=false} runs them one by one; {@code FusedChainTest} compares both bit for bit).
 *
 * <p>Slots: the leaves (tensors read from memory) come first, then one slot per op in evaluation order; the last op is
 * the chain's result.
 */
final class Fused {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    /** What ends the chain: nothing (an elementwise result), a softmax or a reduction over the last axis. */
    enum Tail { NONE, SOFTMAX, REDUCE }

    /** One op of the chain: {@code op(slot a[, slot b])}, rounded to fp16 when {@code round}. */
    record Node(Op op, int a, int b, boolean round, float eps) {}

    private final List<T> leaves = new ArrayList<>();
    private final List<Node> nodes = new ArrayList<>();

    /** A tensor read from memory; returns its slot. */
    int leaf(T t) {
        leaves.add(t);
        return leaves.size() - 1;
    }

    /** An op of the chain over earlier slots; returns its slot. Slots of ops are numbered after all leaves: see {@link #slot}. */
    int node(Op op, int a, int b, boolean round, float eps) {
        nodes.add(new Node(op, a, b, round, eps));
        return -nodes.size();   // provisional: ops are renumbered after the leaves once the chain is complete
    }

    /** The final slot of a provisional index (leaves keep theirs; op k, numbered −(k+1), goes after the leaves). */
    private int slot(int provisional) { return provisional >= 0 ? provisional : leaves.size() - provisional - 1; }

    int leafCount() { return leaves.size(); }

    int opCount() { return nodes.size(); }

    /** Builds the step: {@code out} is dense, of the chain's shape ({@code tail} NONE, SOFTMAX) or of the reduction's. */
    Runnable plan(T out, int[] shape, Tail tail, Op reduceOp, float reduceScale, boolean tailRound) {
        int nl = leaves.size(), nn = nodes.size();
        Node[] ops = new Node[nn];
        for (int i = 0; i < nn; i++) {
            Node n = nodes.get(i);
            ops[i] = new Node(n.op, slot(n.a), n.b == Integer.MIN_VALUE ? -1 : slot(n.b), n.round, n.eps);
        }
        int len = shape[shape.length - 1];
        T[] operands = new T[nl + 1];
        T view = out;
        if (tail == Tail.REDUCE) {
            // the output seen with the chain's shape: stride 0 along the reduced last axis
            int[] keep = shape.clone();
            keep[shape.length - 1] = 1;
            long[] ks = ane4j.mil.Shapes.strides(keep);
            ks[shape.length - 1] = 0;
            view = new T(out.st, out.off, shape, ks, out.dtype);
        }
        T o = view;
        operands[0] = o;
        for (int i = 0; i < nl; i++) operands[i + 1] = leaves.get(i);
        Iter it = new Iter(shape, Arrays.stream(operands).map(t -> t.broadcastStrides(shape)).toArray(long[][]::new),
                Arrays.stream(operands).mapToLong(t -> t.off).toArray());
        T[] ls = leaves.toArray(new T[0]);
        int chunk = tail == Tail.NONE ? OpContext.CHUNK : OpContext.CHUNK / len * len;
        int slots = nl + nn;
        ThreadLocal<float[][]> scratch = ThreadLocal.withInitial(() -> new float[slots][chunk]);
        return () -> {
            MemorySegment[] segs = new MemorySegment[nl];
            for (int i = 0; i < nl; i++) segs[i] = ls[i].st.seg;
            MemorySegment os = o.st.seg;
            Iter.Row row = (f, n) -> {
                float[][] a = scratch.get();
                for (int done = 0; done < n; done += chunk) {
                    int m = Math.min(chunk, n - done);
                    for (int l = 0; l < nl; l++) load(segs[l], f[l + 1] + done * it.inner[l + 1], it.inner[l + 1], a[l], m);
                    for (int k = 0; k < nn; k++) apply(ops[k], a, nl + k, m);
                    float[] r = a[slots - 1];
                    switch (tail) {
                        case NONE -> MemorySegment.copy(r, 0, os, F, (f[0] + done) * 4, m);
                        case SOFTMAX -> {
                            for (int at = 0; at < m; at += len) softmaxRow(r, at, len, tailRound);
                            MemorySegment.copy(r, 0, os, F, (f[0] + done) * 4, m);
                        }
                        case REDUCE -> os.setAtIndex(F, f[0], reduceRow(reduceOp, r, m, reduceScale, tailRound));
                    }
                }
            };
            it.runParallel(row, tail == Tail.NONE ? 1 : len);
        };
    }

    /** The m elements of an operand from {@code off} at stride {@code inner} (0: one value broadcast) into {@code dst}. */
    private static void load(MemorySegment s, long off, long inner, float[] dst, int m) {
        if (inner == 1) MemorySegment.copy(s, F, off * 4, dst, 0, m);
        else if (inner == 0) Arrays.fill(dst, 0, m, s.getAtIndex(F, off));
        else for (int i = 0; i < m; i++) dst[i] = s.getAtIndex(F, off + i * inner);
    }

    /** slot {@code r} = op(a[, b]) over m elements: the arithmetic of {@link Elementwise}'s dense loops. */
    private static void apply(Node n, float[][] s, int r, int m) {
        float[] y = s[r], a = s[n.a];
        float[] b = n.b >= 0 ? s[n.b] : null;
        switch (n.op) {
            case ADD -> { for (int i = 0; i < m; i++) y[i] = a[i] + b[i]; }
            case SUB -> { for (int i = 0; i < m; i++) y[i] = a[i] - b[i]; }
            case MUL -> { for (int i = 0; i < m; i++) y[i] = a[i] * b[i]; }
            case REAL_DIV -> { for (int i = 0; i < m; i++) y[i] = a[i] / b[i]; }
            case POW -> { for (int i = 0; i < m; i++) y[i] = (float) Math.pow(a[i], b[i]); }
            case RSQRT -> { float eps = n.eps; for (int i = 0; i < m; i++) y[i] = (float) (1.0 / Math.sqrt(a[i] + eps)); }
            case SQRT -> { for (int i = 0; i < m; i++) y[i] = (float) Math.sqrt(a[i]); }
            case RELU -> { for (int i = 0; i < m; i++) y[i] = a[i] > 0 ? a[i] : 0f; }
            case TANH -> { for (int i = 0; i < m; i++) y[i] = (float) Math.tanh(a[i]); }
            case EXP -> {
                // as Elementwise: VectorMath.exp, with numpy's subnormal results below its flush point
                VectorMath.exp(a, 0, y, 0, m);
                for (int i = 0; i < m; i++) if (a[i] < VectorMath.FLUSH_BELOW) y[i] = (float) Math.exp(a[i]);
            }
            case SIGMOID, SILU -> {
                // e = exp(−x); sigmoid = 1/(1+e); silu = x/(1+e)
                for (int i = 0; i < m; i++) y[i] = -a[i];
                VectorMath.exp(y, 0, y, 0, m);
                if (n.op == Op.SIGMOID) for (int i = 0; i < m; i++) y[i] = 1f / (1f + y[i]);
                else for (int i = 0; i < m; i++) y[i] = a[i] / (1f + y[i]);
            }
            default -> throw new AssertionError(n.op);
        }
        if (n.round) Planner.round16(y, m);
    }

    /** Softmax of r[at, at+len) in place: the steps of {@link Reductions}'s contiguous rows. */
    private static void softmaxRow(float[] r, int at, int len, boolean round) {
        float max = VectorMath.max(r, at, len);
        for (int i = at; i < at + len; i++) r[i] -= max;
        VectorMath.exp(r, at, r, at, len);
        float inv = 1f / Reductions.sum8(r, at, len);
        for (int i = at; i < at + len; i++) r[i] *= inv;
        if (round) Planner.round16(r, at, len);
    }

    /** One output of a reduction over a row of len ≤ CHUNK: the steps of {@link Reductions#reduce}. */
    private static float reduceRow(Op op, float[] r, int len, float scale, boolean round) {
        float v = op == Op.REDUCE_MAX ? Math.max(Float.NEGATIVE_INFINITY, Reductions.max8(r, len)) : 0f + Reductions.sum8(r, len);
        if (scale != 1f) v = v * scale;
        return round ? ane4j.mil.Fp16.round(v) : v;
    }
}
