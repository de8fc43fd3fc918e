package ane4j.backend.ref;

import ane4j.backend.BackendException;
import ane4j.backend.TensorSpec;
import ane4j.blas.Parallel;
import ane4j.blas.VectorMath;
import ane4j.chip.Chip;
import ane4j.chip.Rule;
import ane4j.mil.Arg;
import ane4j.mil.DType;
import ane4j.mil.Function;
import ane4j.mil.Literal;
import ane4j.mil.MilBlob;
import ane4j.mil.MilException;
import ane4j.mil.Op;
import ane4j.mil.Operation;
import ane4j.mil.Shapes;
import ane4j.mil.Value;
import ane4j.mil.Weights;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The compile step of the reference backend: walks a function once and turns every op into a {@link RefKernel.Step}
 * over planned buffers. Everything static is decided here: shapes, views (reshape, transpose, slice_by_size, split and
 * identity cost nothing when the strides allow), constants (decoded once), buffer sharing between values whose lifetimes
 * do not overlap, and the layout of matmul outputs (a matmul consumed only by a last-two-axes transpose writes its result
 * transposed, so the dynamic-weights pattern slice → reshape → transpose → matmul → transpose → reshape runs as ONE
 * GEMM that reads the weight columns of the input in place).
 *
 * <p>Numerics: every value is held as fp32; a value of MIL type fp16 is rounded to fp16 (nearest even, overflow to
 * ±inf, subnormals kept) after the op that makes it, unless fp32 storage is selected. Integer and bool values are held
 * as exact floats (int32 exact up to 2^24).
 */
final class Planner {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final System.Logger LOG = System.getLogger("ane4j.backend.ref");

    private final Function fn;
    private final Weights weights;
    private final RefBackend.Options opt;
    private final Map<String, T> vals = new HashMap<>();
    private final Map<String, Integer> uses = new HashMap<>();
    private final Map<String, Operation> consumer = new HashMap<>();
    private final List<Storage> storages = new ArrayList<>();
    private final List<RefKernel.Step> steps = new ArrayList<>();
    private final List<String> warnings = new ArrayList<>();
    private int step;
    private Operation cur;

    Planner(Function fn, Weights weights, RefBackend.Options opt) {
        this.fn = fn;
        this.weights = weights;
        this.opt = opt;
    }

    RefKernel plan() {
        for (Operation o : fn.operations())
            for (Arg a : o.inputs().values())
                for (Value v : argValues(a)) { uses.merge(v.name(), 1, Integer::sum); consumer.put(v.name(), o); }
        for (Value v : fn.outputs()) uses.merge(v.name(), 1, Integer::sum);

        List<Storage> inputStorages = new ArrayList<>();
        for (Value v : fn.inputs()) {
            checkRuntimeType(v, "input");
            Storage s = new Storage(v.type().count(), Storage.Kind.INPUT, null, -1);
            storages.add(s);
            inputStorages.add(s);
            vals.put(v.name(), T.dense(s, v.shape(), v.dtype()));
        }
        for (Operation o : fn.operations()) {
            cur = o;
            for (Value v : o.outputs()) if (o.op() != Op.CONST) checkRuntimeType(v, "output");
            try {
                compile(o);
            } catch (MilException e) {
                throw new BackendException(e.getMessage() + " (value '" + o.outputs().get(0).name() + "')", e);
            }
            step++;
        }
        List<T> outs = new ArrayList<>();
        for (Value v : fn.outputs()) {
            T t = get(v);
            if (!t.isContiguous()) {
                // a strided output (e.g. a transposed view) is made dense here, by the tiled copy, not element by element
                T dense = newOut(t.shape, t.dtype), strided = t;
                Iter it = Iter.of(dense.shape, dense, strided);
                steps.add(new RefKernel.Step("copy (output " + v.name() + ")", () -> copy(it, dense.st.seg, strided.st.seg)));
                step++;
                t = dense;
            }
            t.st.lastUse = Integer.MAX_VALUE;
            outs.add(t);
        }
        allocate();
        List<TensorSpec> in = fn.inputs().stream().map(v -> new TensorSpec(v.name(), v.type())).toList();
        List<TensorSpec> out = fn.outputs().stream().map(v -> new TensorSpec(v.name(), v.type())).toList();
        return new RefKernel(fn.name(), in, out, inputStorages, outs, steps, warnings, arena);
    }

    private static List<Value> argValues(Arg a) {
        return switch (a) {
            case Arg.Ref r -> List.of(r.value());
            case Arg.Tuple t -> t.values();
            case Arg.Inline i -> List.of();
        };
    }

    private void checkRuntimeType(Value v, String what) {
        DType d = v.dtype();
        if (d == DType.STRING || d == DType.UINT64)
            throw err("%s '%s' is %s: the reference backend computes numeric and bool tensors only", what, v.name(), d);
    }

    private BackendException err(String format, Object... args) {
        String op = cur == null ? "ref" : cur.op().milName();
        return new BackendException("[" + op + "] " + String.format(format, args));
    }

    // ---------------------------------------------------------------------------------------------------------------
    // values, storages, steps

    private final Arena arena = Arena.ofShared();

    /** The view of value {@code v}, marking it used by the current step (constants are decoded on first use). */
    private T get(Value v) {
        T t = vals.get(v.name());
        if (t == null) {
            if (v.constant() == null) throw err("value '%s' is used before it is defined", v.name());
            t = constant(v.constant(), v.name());
            vals.put(v.name(), t);
        }
        if (t.st.lastUse < step) t.st.lastUse = step;
        return t;
    }

    private T in(String param) {
        Value v = cur.value(param);
        if (v != null) return get(v);
        if (cur.inputs().get(param) instanceof Arg.Inline i) return constant(i.literal(), param);
        return null;
    }

    private Literal lit(String param) { return cur.literal(param); }

    private T constant(Literal l, String name) {
        float[] data = decode(l, name);
        Storage s = new Storage(data.length, Storage.Kind.CONSTANT, data, -1);
        s.lastUse = Integer.MAX_VALUE;
        storages.add(s);
        return T.dense(s, l.type().shape(), l.dtype());
    }

    private float[] decode(Literal l, String name) {
        if (!l.isBlob()) {
            if (l.dtype() == DType.STRING) throw err("'%s' is a string constant where a tensor is needed", name);
            return l.toFloats();
        }
        Literal.BlobRef ref = l.blobRef();
        if (!weights.files().containsKey(ref.path()))
            throw err("'%s': weight file '%s' is missing from the program's weights (have: %s); pass the weights directory or build the program with its weights",
                    name, ref.path(), weights.files().keySet());
        MilBlob.Entry e = weights.resolve(ref);
        if (e.dtype() != l.dtype()) throw err("'%s': the blob at %s@%d is %s but the constant is declared %s", name, ref.path(), ref.offset(), e.dtype(), l.type());
        if (e.count() != l.type().count())
            throw err("'%s': the blob at %s@%d has %d elements but %s needs %d", name, ref.path(), ref.offset(), e.count(), l.type(), l.type().count());
        return Weights.floats(e);
    }

    private T newOut(int[] shape, DType dtype) { return T.dense(temp(Shapes.count(shape)), shape, dtype); }

    private Storage temp(long floats) {
        Storage s = new Storage(Math.max(1, floats), Storage.Kind.TEMP, null, step);
        storages.add(s);
        return s;
    }

    private void def(Value v, T t) { vals.put(v.name(), t); }

    /** Shapes appended to the next step's label (shown by the profile). */
    private String labelExtra = "";

    private void add(Runnable r) {
        steps.add(new RefKernel.Step(cur.op().milName() + " " + cur.outputs().get(0).name() + labelExtra, r));
        labelExtra = "";
    }

    /** Whether values of this type are rounded to fp16 after the op that makes them. */
    private boolean rounds(DType dtype) { return dtype == DType.FP16 && !opt.fp32Storage(); }

    /** Rounds a heap chunk to fp16 and back (vectorised: F16C/AVX-512 conversions). */
    static void round16(float[] a, int n) {
        for (int i = 0; i < n; i++) a[i] = Float.float16ToFloat(Float.floatToFloat16(a[i]));
    }

    /** Adds the op's computation and, for fp16 outputs with fp16 storage, the rounding of its (dense) result. */
    private void addRounded(Runnable r, T out) {
        if (out.dtype == DType.FP16 && !opt.fp32Storage()) {
            Storage s = out.st;
            add(() -> { r.run(); roundFp16(s.seg, 0, s.floats); });
        } else add(r);
    }

    static void roundFp16(MemorySegment seg, long from, long n) {
        // the chunked loop does ~4 elements/ns on one core: only huge tensors gain from the pool
        if (n < ROUND_PARALLEL_MIN) { roundFp16Range(seg, from, from + n); return; }
        // elementwise: disjoint pieces in parallel
        int pieces = 8;
        Parallel.forEach(pieces, p -> roundFp16Range(seg, from + n * p / pieces, from + n * (p + 1) / pieces));
    }

    private static final long ROUND_PARALLEL_MIN = 1L << 22;

    /** Rounds floats to fp16 and back in place, through a heap chunk: C2 vectorises the array loop, not a segment loop. */
    private static void roundFp16Range(MemorySegment seg, long from, long to) {
        float[] f = new float[(int) Math.min(4096, Math.max(0, to - from))];
        for (long i = from; i < to; i += f.length) {
            int n = (int) Math.min(f.length, to - i);
            MemorySegment.copy(seg, F, i * 4, f, 0, n);
            for (int k = 0; k < n; k++) f[k] = Float.float16ToFloat(Float.floatToFloat16(f[k]));
            MemorySegment.copy(f, 0, seg, F, i * 4, n);
        }
    }

    /** {@code t} if it is dense, else a dense copy made by a step. */
    private T contig(T t) {
        if (t.isContiguous()) return t;
        T d = newOut(t.shape, t.dtype);
        copyStep(t, d);
        return d;
    }

    private void copyStep(T src, T dst) {
        Iter it = Iter.of(dst.shape, dst, src);
        add(() -> copy(it, dst.st.seg, src.st.seg));
    }

    private static void copy(Iter it, MemorySegment d, MemorySegment s) {
        long di = it.inner[0], si = it.inner[1];
        int nd = it.dims.length;
        // a transpose of the last two merged dims (dst contiguous along the row, src along the dim above it): tiles
        if (nd >= 2 && di == 1 && si != 1 && it.strides[1][nd - 2] == 1 && it.strides[0][nd - 2] >= it.rowLen) {
            transposeCopy(it, d, s);
            return;
        }
        it.runParallel((o, n) -> {
            if (di == 1 && si == 1) MemorySegment.copy(s, o[1] * 4, d, o[0] * 4, n * 4L);
            else for (int i = 0; i < n; i++) d.setAtIndex(F, o[0] + i * di, s.getAtIndex(F, o[1] + i * si));
        });
    }

    private static final int TILE = 64;

    /**
     * dst[.., i, j] = src[.., j·sj + i] (the last two merged dims swapped) in TILE×TILE tiles through heap arrays: each
     * tile is read as TILE contiguous runs of src and written as TILE contiguous runs of dst.
     */
    private static void transposeCopy(Iter it, MemorySegment d, MemorySegment s) {
        int nd = it.dims.length;
        int rows = it.dims[nd - 2], cols = it.rowLen;
        long dRow = it.strides[0][nd - 2], sCol = it.inner[1];
        long outer = 1;
        for (int i = 0; i < nd - 2; i++) outer *= it.dims[i];
        int rowTiles = (rows + TILE - 1) / TILE, colTiles = (cols + TILE - 1) / TILE;
        long tasks = outer * rowTiles;
        java.util.function.LongConsumer task = t -> {
            long b = t / rowTiles;
            int i0 = (int) (t % rowTiles) * TILE, ih = Math.min(TILE, rows - i0);
            // offsets of the outer index b in both operands
            long dOff = it.base[0], sOff = it.base[1];
            for (int i = nd - 3; i >= 0; i--) {
                long idx = b % it.dims[i];
                b /= it.dims[i];
                dOff += idx * it.strides[0][i];
                sOff += idx * it.strides[1][i];
            }
            float[] tile = new float[TILE * TILE], run = new float[TILE];
            for (int j0 = 0; j0 < cols; j0 += TILE) {
                int jw = Math.min(TILE, cols - j0);
                for (int j = 0; j < jw; j++) MemorySegment.copy(s, F, (sOff + (j0 + j) * sCol + i0) * 4, tile, j * TILE, ih);
                for (int i = 0; i < ih; i++) {
                    for (int j = 0; j < jw; j++) run[j] = tile[j * TILE + i];
                    MemorySegment.copy(run, 0, d, F, (dOff + (i0 + i) * dRow + j0) * 4, jw);
                }
            }
        };
        if (tasks >= 2 && outer * rows * cols >= Iter.PARALLEL_MIN) Parallel.forEach((int) tasks, t -> task.accept(t));
        else for (long t = 0; t < tasks; t++) task.accept(t);
    }

    /** What a kernel's planned buffers may total: {@code ane4j.ref.maxMemory} bytes, else the machine's (or container's) memory. */
    static long memoryLimit() {
        Long set = Long.getLong("ane4j.ref.maxMemory");
        if (set != null) return set;
        var os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean sun ? sun.getTotalMemorySize() : Long.MAX_VALUE;
    }

    /** Interval allocation: storages whose lifetimes do not overlap share memory. */
    private void allocate() {
        List<Storage> temps = new ArrayList<>(storages.stream().filter(s -> s.kind == Storage.Kind.TEMP).toList());
        temps.sort(Comparator.comparingInt(s -> s.firstDef));
        record Phys(List<Storage> users, long[] size, int[] freeAfter) {}
        List<Phys> phys = new ArrayList<>();
        for (Storage s : temps) {
            Phys best = null;
            for (Phys p : phys) {
                if (p.freeAfter[0] >= s.firstDef) continue;
                if (best == null || Math.abs(p.size[0] - s.floats) < Math.abs(best.size[0] - s.floats)) best = p;
            }
            if (best == null) { best = new Phys(new ArrayList<>(), new long[1], new int[1]); phys.add(best); }
            best.users.add(s);
            best.size[0] = Math.max(best.size[0], s.floats);
            best.freeAfter[0] = s.lastUse;
        }
        long floats = 0, largest = 0;
        for (Phys p : phys) { floats += p.size[0]; largest = Math.max(largest, p.size[0]); }
        for (Storage s : storages) if (s.kind == Storage.Kind.CONSTANT) { floats += Math.max(1, s.floats); largest = Math.max(largest, s.floats); }
        long limit = memoryLimit();
        if (4 * floats > limit)
            throw new BackendException(String.format("[ref] function %s needs %d MB of working memory (fp32; its largest tensor %d MB) but the reference backend may use %d MB "
                    + "(the machine's memory, or -Dane4j.ref.maxMemory=BYTES); use smaller shapes", fn.name(), (4 * floats) >> 20, (4 * largest) >> 20, limit >> 20));
        for (Phys p : phys) {
            MemorySegment seg = arena.allocate(p.size[0] * 4, 64);
            for (Storage s : p.users) s.seg = seg;
        }
        for (Storage s : storages) {
            if (s.kind == Storage.Kind.CONSTANT) {
                s.seg = arena.allocate(Math.max(1, s.floats) * 4, 64);
                MemorySegment.copy(s.init, 0, s.seg, F, 0, s.init.length);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // one case per op: the compiler rejects an op without reference semantics

    private void compile(Operation o) {
        Value out = o.outputs().get(0);
        switch (o.op()) {
            case CONST -> { /* decoded when first used as a tensor */ }
            case IDENTITY -> def(out, in("x").withDType(out.dtype()));
            case RESHAPE -> reshape(out);
            case TRANSPOSE -> def(out, in("x").permute(axes(lit("perm").toInts(), out.rank())));
            case SLICE_BY_SIZE -> sliceBySize(out);
            case SPLIT -> split(o);
            case CONCAT -> concat(out);
            case ADD, SUB, MUL, REAL_DIV, POW -> binary(o.op(), out);
            case RSQRT, SQRT, EXP, SIGMOID, SILU, RELU, TANH -> unary(o.op(), out);
            case CAST -> cast(out);
            case REDUCE_SUM, REDUCE_MEAN, REDUCE_MAX -> reduce(o.op(), out);
            case SOFTMAX -> softmax(out);
            case MATMUL -> matmul(out);
            case CONV -> conv(out);
            case SELECT -> select(out);
            case CONSTEXPR_AFFINE_DEQUANTIZE -> affineDequantize(out);
            case QUANTIZE -> quantize(out);
            case DEQUANTIZE -> dequantize(out);
            case SCALED_DOT_PRODUCT_ATTENTION -> sdpa(out);
            case LAYER_NORM -> layerNorm(out);
            case GATHER -> gather(out);
        }
    }

    private static int[] axes(int[] a, int rank) {
        int[] r = new int[a.length];
        for (int i = 0; i < a.length; i++) r[i] = a[i] < 0 ? a[i] + rank : a[i];
        return r;
    }

    private int axis(String param, int rank) {
        int a = lit(param).intValue();
        Integer r = Shapes.axis(a, rank);
        if (r == null) throw err("%s %d is out of range for rank %d", param, a, rank);
        return r;
    }

    // ---- views ----------------------------------------------------------------------------------------------------

    private void reshape(Value out) {
        T x = in("x");
        T v = x.reshapeView(out.shape());
        if (v == null) v = contig(x).reshapeView(out.shape());
        def(out, v);
    }

    private void sliceBySize(Value out) {
        T x = in("x");
        int[] begin = lit("begin").toInts();
        for (int i = 0; i < begin.length; i++) if (begin[i] < 0) begin[i] += x.shape[i];
        T view = x.slice(begin, out.shape());
        float clamp = sliceClamp();
        if (clamp > 0 && begin.length > 0 && begin[begin.length - 1] != 0 && out.dtype() == DType.FP16) {
            // chip emulation: the pre-A16 crop-DMA of a width-offset slice saturates |v| > 4094 to ±inf (ANEForge
            // aneforge/_targets.py FP16_SLICE_SAT; PRs #145/#148, M1 and M2 Pro), so the slice is a copy that clamps
            T d = newOut(out.shape(), out.dtype());
            Iter it = Iter.of(d.shape, d, view);
            add(() -> { copy(it, d.st.seg, view.st.seg); saturate(d.st.seg, d.st.floats, clamp, false); });
            def(out, d);
            return;
        }
        def(out, view);
    }

    /** The emulated chip's slice clamp (4094 on M1–M3), or 0. */
    private float sliceClamp() {
        Chip c = opt.chip();
        return c == null || !Rule.SLICE_CLAMP.appliesTo(c) ? 0 : Rule.SLICE_CLAMP.limit(c);
    }

    /**
     * Turns every value beyond {@code limit} in magnitude into ±inf (NaN stays NaN). {@code roundsAbove}: the limit is the
     * largest finite fp16 result, so everything that rounds above it goes (|v| ≥ the midpoint to the next fp16 value).
     */
    static void saturate(MemorySegment seg, long n, float limit, boolean roundsAbove) {
        float cut = roundsAbove ? limit + fp16HalfStepAbove(limit) : limit;                 // 32752 → 32760
        for (long i = 0; i < n; i++) {
            float v = seg.getAtIndex(F, i);
            if (roundsAbove ? Math.abs(v) >= cut : Math.abs(v) > cut) seg.setAtIndex(F, i, Math.copySign(Float.POSITIVE_INFINITY, v));
        }
    }

    /** Half the fp16 spacing above {@code v} (a finite fp16 value): the rounding midpoint's distance. */
    private static float fp16HalfStepAbove(float v) {
        short h = Float.floatToFloat16(v);
        return (Float.float16ToFloat((short) (h + 1)) - v) / 2;
    }

    private void split(Operation o) {
        T x = in("x");
        int axis = axis("axis", x.rank());
        int pos = 0;
        for (Value v : o.outputs()) {
            int[] begin = new int[x.rank()];
            begin[axis] = pos;
            def(v, x.slice(begin, v.shape()));
            pos += v.shape()[axis];
        }
    }

    private void concat(Value out) {
        List<T> xs = cur.values("values").stream().map(this::get).toList();
        int axis = axis("axis", out.rank());
        boolean interleave = lit("interleave").boolValue();
        T o = newOut(out.shape(), out.dtype());
        int pos = 0;
        for (int k = 0; k < xs.size(); k++) {
            T x = xs.get(k);
            long[] str = o.strides.clone();
            long off;
            if (interleave) {
                // element j of value k along the axis goes to position j·n + k
                off = k * o.strides[axis];
                str[axis] = o.strides[axis] * xs.size();
            } else {
                off = pos * o.strides[axis];
                pos += x.shape[axis];
            }
            copyStep(x, new T(o.st, off, x.shape, str, o.dtype));
        }
        def(out, o);
    }

    // ---- elementwise ------------------------------------------------------------------------------------------------

    private void binary(Op op, Value out) {
        T x = in("x"), y = in("y");
        T o = newOut(out.shape(), out.dtype());
        Iter it = Iter.of(o.shape, o, x, y);
        boolean intDiv = op == Op.REAL_DIV && out.dtype().isInteger();
        long oi = it.inner[0], xi = it.inner[1], yi = it.inner[2];
        if (!intDiv && op != Op.POW && oi == 1 && xi == 1 && (yi == 1 || yi == 0)) {
            // dense rows: heap chunks, rounded to fp16 in the chunk (no second pass over the output)
            boolean round = rounds(out.dtype());
            add(() -> {
                MemorySegment os = o.st.seg, xs = x.st.seg, ys = y.st.seg;
                it.runParallel((f, n) -> binaryChunked(op, os, f[0], xs, f[1], ys, f[2], yi == 0, n, round));
            });
            def(out, o);
            return;
        }
        addRounded(() -> {
            MemorySegment os = o.st.seg, xs = x.st.seg, ys = y.st.seg;
            it.runParallel((f, n) -> {
                long oo = f[0], xo = f[1], yo = f[2];
                switch (op) {
                    case ADD -> { for (int i = 0; i < n; i++) os.setAtIndex(F, oo + i * oi, xs.getAtIndex(F, xo + i * xi) + ys.getAtIndex(F, yo + i * yi)); }
                    case SUB -> { for (int i = 0; i < n; i++) os.setAtIndex(F, oo + i * oi, xs.getAtIndex(F, xo + i * xi) - ys.getAtIndex(F, yo + i * yi)); }
                    case MUL -> { for (int i = 0; i < n; i++) os.setAtIndex(F, oo + i * oi, xs.getAtIndex(F, xo + i * xi) * ys.getAtIndex(F, yo + i * yi)); }
                    case REAL_DIV -> {
                        for (int i = 0; i < n; i++) {
                            float q = xs.getAtIndex(F, xo + i * xi) / ys.getAtIndex(F, yo + i * yi);
                            os.setAtIndex(F, oo + i * oi, intDiv ? (float) Math.floor(q) : q);
                        }
                    }
                    case POW -> { for (int i = 0; i < n; i++) os.setAtIndex(F, oo + i * oi, (float) Math.pow(xs.getAtIndex(F, xo + i * xi), ys.getAtIndex(F, yo + i * yi))); }
                    default -> throw new AssertionError(op);
                }
            });
        }, o);
        def(out, o);
    }

    private static final int CHUNK = 2048;
    private static final ThreadLocal<float[][]> SCRATCH = ThreadLocal.withInitial(() -> new float[][] {new float[CHUNK], new float[CHUNK]});

    /**
     * The dense case of add/sub/mul/real_div (y dense, or one broadcast value per run) through heap chunks: C2
     * vectorises these array loops, not the equivalent segment loops (about 4× faster here).
     */
    private static void binaryChunked(Op op, MemorySegment os, long oo, MemorySegment xs, long xo, MemorySegment ys, long yo, boolean yScalar, int n, boolean round) {
        float[][] scratch = SCRATCH.get();
        float[] a = scratch[0], b = scratch[1];
        float yv = yScalar ? ys.getAtIndex(F, yo) : 0f;
        for (int done = 0; done < n; done += CHUNK) {
            int m = Math.min(CHUNK, n - done);
            MemorySegment.copy(xs, F, (xo + done) * 4, a, 0, m);
            if (!yScalar) MemorySegment.copy(ys, F, (yo + done) * 4, b, 0, m);
            switch (op) {
                case ADD -> { if (yScalar) for (int i = 0; i < m; i++) a[i] += yv; else for (int i = 0; i < m; i++) a[i] += b[i]; }
                case SUB -> { if (yScalar) for (int i = 0; i < m; i++) a[i] -= yv; else for (int i = 0; i < m; i++) a[i] -= b[i]; }
                case MUL -> { if (yScalar) for (int i = 0; i < m; i++) a[i] *= yv; else for (int i = 0; i < m; i++) a[i] *= b[i]; }
                case REAL_DIV -> { if (yScalar) for (int i = 0; i < m; i++) a[i] /= yv; else for (int i = 0; i < m; i++) a[i] /= b[i]; }
                default -> throw new AssertionError(op);
            }
            if (round) round16(a, m);
            MemorySegment.copy(a, 0, os, F, (oo + done) * 4, m);
        }
    }

    private void unary(Op op, Value out) {
        T x = in("x");
        float eps = op == Op.RSQRT ? lit("epsilon").floatValue() : 0f;
        T o = newOut(out.shape(), out.dtype());
        Iter it = Iter.of(o.shape, o, x);
        if (it.inner[0] == 1 && it.inner[1] == 1) {
            boolean round = rounds(out.dtype());
            add(() -> {
                MemorySegment os = o.st.seg, xs = x.st.seg;
                it.runParallel((f, n) -> unaryChunked(op, eps, os, f[0], xs, f[1], n, round));
            });
            def(out, o);
            return;
        }
        addRounded(() -> {
            MemorySegment os = o.st.seg, xs = x.st.seg;
            long oi = it.inner[0], xi = it.inner[1];
            it.runParallel((f, n) -> {
                long oo = f[0], xo = f[1];
                for (int i = 0; i < n; i++) {
                    float v = xs.getAtIndex(F, xo + i * xi);
                    float r = switch (op) {
                        case RSQRT -> (float) (1.0 / Math.sqrt(v + eps));
                        case SQRT -> (float) Math.sqrt(v);
                        case EXP -> (float) Math.exp(v);
                        case SIGMOID -> (float) (1.0 / (1.0 + Math.exp(-v)));
                        case SILU -> (float) (v / (1.0 + Math.exp(-v)));
                        case RELU -> v > 0 ? v : 0f;
                        case TANH -> (float) Math.tanh(v);
                        default -> throw new AssertionError(op);
                    };
                    os.setAtIndex(F, oo + i * oi, r);
                }
            });
        }, o);
        def(out, o);
    }

    /** The dense case of the unary ops through heap chunks; exp, sigmoid and silu on {@link VectorMath#exp}. */
    private static void unaryChunked(Op op, float eps, MemorySegment os, long oo, MemorySegment xs, long xo, int n, boolean round) {
        float[][] scratch = SCRATCH.get();
        float[] a = scratch[0], e = scratch[1];
        for (int done = 0; done < n; done += CHUNK) {
            int m = Math.min(CHUNK, n - done);
            MemorySegment.copy(xs, F, (xo + done) * 4, a, 0, m);
            switch (op) {
                case RSQRT -> { for (int i = 0; i < m; i++) a[i] = (float) (1.0 / Math.sqrt(a[i] + eps)); }
                case SQRT -> { for (int i = 0; i < m; i++) a[i] = (float) Math.sqrt(a[i]); }
                case EXP -> {
                    // the MIL op keeps numpy's subnormal results, which VectorMath.exp flushes to 0 below ~1.7e-38
                    System.arraycopy(a, 0, e, 0, m);
                    VectorMath.expInPlace(a, m);
                    for (int i = 0; i < m; i++) if (e[i] < VectorMath.FLUSH_BELOW) a[i] = (float) Math.exp(e[i]);
                }
                case SIGMOID, SILU -> {
                    // e = exp(−x); sigmoid = 1/(1+e); silu = x/(1+e)
                    for (int i = 0; i < m; i++) e[i] = -a[i];
                    VectorMath.expInPlace(e, m);
                    if (op == Op.SIGMOID) for (int i = 0; i < m; i++) a[i] = 1f / (1f + e[i]);
                    else for (int i = 0; i < m; i++) a[i] = a[i] / (1f + e[i]);
                }
                case RELU -> { for (int i = 0; i < m; i++) a[i] = a[i] > 0 ? a[i] : 0f; }
                case TANH -> { for (int i = 0; i < m; i++) a[i] = (float) Math.tanh(a[i]); }
                default -> throw new AssertionError(op);
            }
            if (round) round16(a, m);
            MemorySegment.copy(a, 0, os, F, (oo + done) * 4, m);
        }
    }

    /**
     * cast: to fp16 rounds to nearest even; float → integer truncates toward zero and saturates to the type's range
     * (numpy {@code astype} semantics for in-range values); → bool is {@code x != 0}.
     */
    private void cast(Value out) {
        T x = in("x");
        DType to = out.dtype();
        if (to == x.dtype || (to == DType.FP32 && x.dtype == DType.FP16)) { def(out, x.withDType(to)); return; }
        T o = newOut(out.shape(), to);
        Iter it = Iter.of(o.shape, o, x);
        float lo = switch (to) { case INT8 -> -128; case UINT8 -> 0; case INT16 -> -32768; case INT32 -> Integer.MIN_VALUE; default -> Float.NEGATIVE_INFINITY; };
        float hi = switch (to) { case INT8 -> 127; case UINT8 -> 255; case INT16 -> 32767; case INT32 -> Integer.MAX_VALUE; default -> Float.POSITIVE_INFINITY; };
        addRounded(() -> {
            MemorySegment os = o.st.seg, xs = x.st.seg;
            long oi = it.inner[0], xi = it.inner[1];
            it.runParallel((f, n) -> {
                for (int i = 0; i < n; i++) {
                    float v = xs.getAtIndex(F, f[1] + i * xi);
                    float r = switch (to) {
                        case BOOL -> v != 0 ? 1f : 0f;
                        case FP16, FP32 -> v;
                        default -> Float.isNaN(v) ? 0f : Math.max(lo, Math.min(hi, (float) (long) v));
                    };
                    os.setAtIndex(F, f[0] + i * oi, r);
                }
            });
        }, o);
        def(out, o);
    }

    private void select(Value out) {
        T c = in("cond"), a = in("a"), b = in("b");
        T o = newOut(out.shape(), out.dtype());
        Iter it = Iter.of(o.shape, o, c, a, b);
        addRounded(() -> {
            MemorySegment os = o.st.seg, cs = c.st.seg, as = a.st.seg, bs = b.st.seg;
            long oi = it.inner[0], ci = it.inner[1], ai = it.inner[2], bi = it.inner[3];
            it.runParallel((f, n) -> {
                for (int i = 0; i < n; i++)
                    os.setAtIndex(F, f[0] + i * oi, cs.getAtIndex(F, f[1] + i * ci) != 0 ? as.getAtIndex(F, f[2] + i * ai) : bs.getAtIndex(F, f[3] + i * bi));
            });
        }, o);
        def(out, o);
    }

    // ---- reductions and normalisations --------------------------------------------------------------------------

    private void reduce(Op op, Value out) {
        T x = in("x");
        int rank = x.rank();
        Literal al = lit("axes");
        boolean[] red = new boolean[rank];
        if (al == null) Arrays.fill(red, true);
        else for (int a : axes(al.toInts(), rank)) red[a] = true;
        int[] keep = x.shape.clone();
        long n = 1;
        for (int i = 0; i < rank; i++) if (red[i]) { keep[i] = 1; n *= x.shape[i]; }
        T o = newOut(out.shape(), out.dtype());
        // the output seen with x's rank: stride 0 along reduced axes
        long[] ks = Shapes.strides(keep);
        for (int i = 0; i < rank; i++) if (red[i]) ks[i] = 0;
        Iter it = new Iter(x.shape, new long[][] {ks, x.strides}, new long[] {0, x.off});
        float init = op == Op.REDUCE_MAX ? Float.NEGATIVE_INFINITY : 0f;
        float scale = op == Op.REDUCE_MEAN ? 1f / n : 1f;
        addRounded(() -> {
            MemorySegment os = o.st.seg, xs = x.st.seg;
            long cnt = o.count();
            for (long i = 0; i < cnt; i++) os.setAtIndex(F, i, init);
            long oi = it.inner[0], xi = it.inner[1];
            it.run((f, len) -> {
                if (oi == 0 && xi == 1 && len <= CHUNK) {
                    // a contiguous row reduced into one output element: through a heap chunk, 8 partial accumulators
                    float[] row = SCRATCH.get()[0];
                    MemorySegment.copy(xs, F, f[1] * 4, row, 0, len);
                    float acc = os.getAtIndex(F, f[0]);
                    acc = op == Op.REDUCE_MAX ? Math.max(acc, max8(row, len)) : acc + sum8(row, len);
                    os.setAtIndex(F, f[0], acc);
                } else if (oi == 0) {
                    // the row is reduced into one output element
                    float acc = os.getAtIndex(F, f[0]);
                    if (op == Op.REDUCE_MAX) for (int i = 0; i < len; i++) acc = Math.max(acc, xs.getAtIndex(F, f[1] + i * xi));
                    else for (int i = 0; i < len; i++) acc += xs.getAtIndex(F, f[1] + i * xi);
                    os.setAtIndex(F, f[0], acc);
                } else if (op == Op.REDUCE_MAX) {
                    for (int i = 0; i < len; i++) os.setAtIndex(F, f[0] + i * oi, Math.max(os.getAtIndex(F, f[0] + i * oi), xs.getAtIndex(F, f[1] + i * xi)));
                } else {
                    for (int i = 0; i < len; i++) os.setAtIndex(F, f[0] + i * oi, os.getAtIndex(F, f[0] + i * oi) + xs.getAtIndex(F, f[1] + i * xi));
                }
            });
            if (scale != 1f) for (long i = 0; i < cnt; i++) os.setAtIndex(F, i, os.getAtIndex(F, i) * scale);
        }, o);
        def(out, o);
    }

    private void softmax(Value out) {
        T x = contig(in("x"));
        int axis = axis("axis", x.rank());
        T o = newOut(out.shape(), out.dtype());
        long outer = 1, inner = 1;
        for (int i = 0; i < axis; i++) outer *= x.shape[i];
        for (int i = axis + 1; i < x.rank(); i++) inner *= x.shape[i];
        int len = x.shape[axis];
        long fo = outer, fi = inner;
        if (fi == 1 && len <= 1 << 16) {
            boolean round = rounds(out.dtype());
            add(() -> softmaxRows(x.st.seg, x.off, o.st.seg, 0, fo, len, fi, round));
        } else addRounded(() -> softmaxRows(x.st.seg, x.off, o.st.seg, 0, fo, len, fi, false), o);
        def(out, o);
    }

    /** softmax over {@code len} elements at stride {@code inner}, for outer × inner rows: max-subtract, exp, normalise. */
    static void softmaxRows(MemorySegment xs, long xoff, MemorySegment os, long ooff, long outer, int len, long inner, boolean round) {
        if (outer >= 2 && outer * len * inner >= Iter.PARALLEL_MIN) {
            // rows are independent: disjoint ranges of the outer index in parallel
            int pieces = (int) Math.min(outer, 8);
            Parallel.forEach(pieces, p -> {
                long a0 = outer * p / pieces, a1 = outer * (p + 1) / pieces;
                softmaxSequential(xs, xoff + a0 * len * inner, os, ooff + a0 * len * inner, a1 - a0, len, inner, round);
            });
            return;
        }
        softmaxSequential(xs, xoff, os, ooff, outer, len, inner, round);
    }

    private static void softmaxSequential(MemorySegment xs, long xoff, MemorySegment os, long ooff, long outer, int len, long inner, boolean round) {
        if (inner == 1 && len <= 1 << 16) {
            // contiguous rows (softmax over the last axis): each row through a heap array; max and sum with 8 partial
            // accumulators (independent chains; the sum's order is fixed)
            float[] row = new float[len];
            for (long a = 0; a < outer; a++) {
                long base = a * len;
                MemorySegment.copy(xs, F, (xoff + base) * 4, row, 0, len);
                float max = max8(row, len);
                for (int i = 0; i < len; i++) row[i] -= max;
                VectorMath.expInPlace(row, len);
                float inv = 1f / sum8(row, len);
                for (int i = 0; i < len; i++) row[i] *= inv;
                if (round) round16(row, len);
                MemorySegment.copy(row, 0, os, F, (ooff + base) * 4, len);
            }
            return;
        }
        for (long a = 0; a < outer; a++) {
            for (long b = 0; b < inner; b++) {
                long base = a * len * inner + b;
                float max = Float.NEGATIVE_INFINITY;
                for (int i = 0; i < len; i++) max = Math.max(max, xs.getAtIndex(F, xoff + base + i * inner));
                float sum = 0;
                for (int i = 0; i < len; i++) {
                    float e = (float) Math.exp(xs.getAtIndex(F, xoff + base + i * inner) - max);
                    os.setAtIndex(F, ooff + base + i * inner, e);
                    sum += e;
                }
                float inv = 1f / sum;
                for (int i = 0; i < len; i++) os.setAtIndex(F, ooff + base + i * inner, os.getAtIndex(F, ooff + base + i * inner) * inv);
            }
        }
    }

    /** The largest of a[0..n) (NaN if any is NaN). */
    static float max8(float[] a, int n) {
        float m0 = Float.NEGATIVE_INFINITY, m1 = m0, m2 = m0, m3 = m0, m4 = m0, m5 = m0, m6 = m0, m7 = m0;
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            m0 = Math.max(m0, a[i]); m1 = Math.max(m1, a[i + 1]); m2 = Math.max(m2, a[i + 2]); m3 = Math.max(m3, a[i + 3]);
            m4 = Math.max(m4, a[i + 4]); m5 = Math.max(m5, a[i + 5]); m6 = Math.max(m6, a[i + 6]); m7 = Math.max(m7, a[i + 7]);
        }
        for (; i < n; i++) m0 = Math.max(m0, a[i]);
        return Math.max(Math.max(Math.max(m0, m1), Math.max(m2, m3)), Math.max(Math.max(m4, m5), Math.max(m6, m7)));
    }

    /** Σ a[0..n) as 8 interleaved partial sums, combined pairwise: a fixed order, independent of threads and JIT. */
    static float sum8(float[] a, int n) {
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            s0 += a[i]; s1 += a[i + 1]; s2 += a[i + 2]; s3 += a[i + 3];
            s4 += a[i + 4]; s5 += a[i + 5]; s6 += a[i + 6]; s7 += a[i + 7];
        }
        for (; i < n; i++) s0 += a[i];
        return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    }

    /** layer_norm: (x − mean) / sqrt(var + epsilon) · gamma + beta over {@code axes} (biased variance, as PyTorch). */
    private void layerNorm(Value out) {
        T x = in("x");
        int rank = x.rank();
        Literal al = lit("axes");
        int[] ax;
        if (al == null) { ax = new int[rank]; for (int i = 0; i < rank; i++) ax[i] = i; } else ax = axes(al.toInts(), rank);
        float eps = lit("epsilon").floatValue();
        Literal gl = lit("gamma"), bl = lit("beta");
        T gamma = gl == null ? null : constant(gl, "gamma"), beta = bl == null ? null : constant(bl, "beta");
        boolean[] red = new boolean[rank];
        long n = 1;
        for (int a : ax) { red[a] = true; n *= x.shape[a]; }
        int[] keep = x.shape.clone();
        for (int a : ax) keep[a] = 1;
        long[] ks = Shapes.strides(keep);
        for (int i = 0; i < rank; i++) if (red[i]) ks[i] = 0;
        // gamma/beta have the normalized shape (dims of axes, in axes order): strides over x's dims
        long[] gs = new long[rank], bs = new long[rank];
        if (gamma != null) { long[] s = gamma.strides; for (int i = 0; i < ax.length; i++) gs[ax[i]] = s[i]; }
        if (beta != null) { long[] s = beta.strides; for (int i = 0; i < ax.length; i++) bs[ax[i]] = s[i]; }
        T o = newOut(out.shape(), out.dtype());
        long[] os0 = o.strides;
        long groups = Shapes.count(keep);
        Iter stats = new Iter(x.shape, new long[][] {ks, x.strides}, new long[] {0, x.off});
        Iter norm = new Iter(x.shape, new long[][] {os0, x.strides, ks, gs, bs}, new long[] {0, x.off, 0, 0, 0});
        long fn = n;
        addRounded(() -> {
            double[] sum = new double[(int) groups], sq = new double[(int) groups];
            MemorySegment xs = x.st.seg, osg = o.st.seg;
            long xi = stats.inner[1], ki = stats.inner[0];
            stats.run((f, len) -> {
                for (int i = 0; i < len; i++) {
                    double v = xs.getAtIndex(F, f[1] + i * xi);
                    int g = (int) (f[0] + i * ki);
                    sum[g] += v;
                    sq[g] += v * v;
                }
            });
            float[] mean = new float[(int) groups], inv = new float[(int) groups];
            for (int g = 0; g < groups; g++) {
                double m = sum[g] / fn;
                double var = Math.max(0, sq[g] / fn - m * m);
                mean[g] = (float) m;
                inv[g] = (float) (1.0 / Math.sqrt(var + eps));
            }
            MemorySegment gseg = gamma == null ? null : gamma.st.seg, bseg = beta == null ? null : beta.st.seg;
            long oi = norm.inner[0], xi2 = norm.inner[1], gi2 = norm.inner[2], gmi = norm.inner[3], bti = norm.inner[4];
            norm.run((f, len) -> {
                for (int i = 0; i < len; i++) {
                    int g = (int) (f[2] + i * gi2);
                    float v = (xs.getAtIndex(F, f[1] + i * xi2) - mean[g]) * inv[g];
                    if (gseg != null) v *= gseg.getAtIndex(F, f[3] + i * gmi);
                    if (bseg != null) v += bseg.getAtIndex(F, f[4] + i * bti);
                    osg.setAtIndex(F, f[0] + i * oi, v);
                }
            });
        }, o);
        def(out, o);
    }

    // ---- matmul, conv, attention ---------------------------------------------------------------------------------

    /** A matrix operand for GEMM: segment offset, leading dimension and whether it is stored transposed. */
    private record Mat(boolean trans, int ld) {}

    /** How a [rows, cols] view with these strides can be handed to GEMM, or null when it needs a copy. */
    private static Mat mat(int rows, int cols, long sr, long sc) {
        if (cols == 1 && rows == 1) return new Mat(false, 1);
        if (sc == 1 || cols == 1) {
            long ld = rows == 1 ? cols : sr;
            if (ld >= cols && ld <= Integer.MAX_VALUE) return new Mat(false, (int) ld);
        }
        if (sr == 1 || rows == 1) {
            long ld = cols == 1 ? rows : sc;
            if (ld >= rows && ld <= Integer.MAX_VALUE) return new Mat(true, (int) ld);
        }
        return null;
    }

    /** Views x as [..., M, K] honouring transpose and rank-1 rules; returns the view (batch dims first). */
    private static T asMatrix(T t, boolean transpose, boolean isY) {
        T m = t;
        if (t.rank() == 1) {
            // numpy: rank-1 x is [1,K], rank-1 y is [K,1]
            m = isY ? t.withShape(new int[] {t.shape[0], 1}, new long[] {t.strides[0], 1})
                    : t.withShape(new int[] {1, t.shape[0]}, new long[] {1, t.strides[0]});
        } else if (transpose) {
            int r = t.rank();
            int[] perm = new int[r];
            for (int i = 0; i < r; i++) perm[i] = i;
            perm[r - 2] = r - 1;
            perm[r - 1] = r - 2;
            m = t.permute(perm);
        }
        return m;
    }

    private void matmul(Value out) {
        T x = asMatrix(in("x"), lit("transpose_x").boolValue(), false);
        T y = asMatrix(in("y"), lit("transpose_y").boolValue(), true);
        int m = x.shape[x.rank() - 2], k = x.shape[x.rank() - 1], n = y.shape[y.rank() - 1];
        if (mat(m, k, x.strides[x.rank() - 2], x.strides[x.rank() - 1]) == null) x = contig(x);
        if (mat(k, n, y.strides[y.rank() - 2], y.strides[y.rank() - 1]) == null) y = contig(y);
        int[] batch = Shapes.broadcast(Arrays.copyOf(x.shape, x.rank() - 2), Arrays.copyOf(y.shape, y.rank() - 2));
        // write C transposed when the only consumer is a last-two-axes transpose (the dynamic-weights pattern)
        boolean transOut = out.rank() >= 2 && transposesLastTwo(out);
        int[] full = Arrays.copyOf(batch, batch.length + 2);
        full[batch.length] = m;
        full[batch.length + 1] = n;
        Storage st = temp(Shapes.count(full));
        long[] cs = Shapes.strides(full);
        if (transOut) {
            int[] stored = full.clone();
            stored[batch.length] = n;
            stored[batch.length + 1] = m;
            long[] ss = Shapes.strides(stored);
            cs = ss.clone();
            cs[batch.length] = ss[batch.length + 1];
            cs[batch.length + 1] = ss[batch.length];
        }
        T c = new T(st, 0, full, cs, out.dtype());
        T fx = x, fy = y;
        long[] xb = batchStrides(x, batch), yb = batchStrides(y, batch), cb = Arrays.copyOf(cs, batch.length);
        Mat ma = mat(m, k, x.strides[x.rank() - 2], x.strides[x.rank() - 1]);
        Mat mb = mat(k, n, y.strides[y.rank() - 2], y.strides[y.rank() - 1]);
        long batches = Shapes.count(batch);
        labelExtra = " [" + (batches > 1 ? batches + "×" : "") + m + "×" + k + "·" + k + "×" + n + (ma.trans() ? " Aᵀ" : "") + (mb.trans() ? " Bᵀ" : "") + (transOut ? " Cᵀ" : "") + "]";
        // chip emulation: an fp16 matmul output that rounds above 32752 (fp16 max / 2) is ±inf on the ANE, for every
        // contraction size (ANEForge issue #115 on M5, PR #145 on M2 Pro)
        float saturation = opt.chip() != null && out.dtype() == DType.FP16 ? Rule.MATMUL_SATURATION.limit(opt.chip()) : 0;
        addRounded(() -> {
            MemorySegment xs = fx.st.seg, ys = fy.st.seg, csg = st.seg;
            int[] idx = new int[batch.length];
            for (long bt = 0; bt < batches; bt++) {
                long xo = fx.off, yo = fy.off, co = 0;
                for (int i = 0; i < batch.length; i++) { xo += idx[i] * xb[i]; yo += idx[i] * yb[i]; co += idx[i] * cb[i]; }
                if (transOut) {
                    // Cᵀ[n×m] = op(B)ᵀ · op(A)ᵀ
                    Gemm.gemm(!mb.trans(), !ma.trans(), n, m, k, ys, yo, mb.ld(), xs, xo, ma.ld(), 0f, csg, co, m);
                } else {
                    Gemm.gemm(ma.trans(), mb.trans(), m, n, k, xs, xo, ma.ld(), ys, yo, mb.ld(), 0f, csg, co, n);
                }
                for (int i = batch.length - 1; i >= 0; i--) { if (++idx[i] < batch[i]) break; idx[i] = 0; }
            }
            if (saturation > 0) saturate(csg, st.floats, saturation, true);
        }, c);
        // drop the dims numpy adds for rank-1 operands
        T result = c;
        if (!Arrays.equals(out.shape(), full)) result = c.reshapeView(out.shape());
        def(out, result);
    }

    private static long[] batchStrides(T t, int[] batch) {
        long[] s = new long[batch.length];
        int lead = batch.length - (t.rank() - 2);
        for (int i = 0; i < t.rank() - 2; i++) s[lead + i] = t.shape[i] == 1 ? 0 : t.strides[i];
        return s;
    }

    private boolean transposesLastTwo(Value v) {
        if (uses.getOrDefault(v.name(), 0) != 1 || fn.outputs().contains(v)) return false;
        Operation c = consumer.get(v.name());
        if (c == null || c.op() != Op.TRANSPOSE) return false;
        int r = v.rank();
        int[] perm = axes(c.literal("perm").toInts(), r);
        for (int i = 0; i < r - 2; i++) if (perm[i] != i) return false;
        return perm[r - 2] == r - 1 && perm[r - 1] == r - 2;
    }

    /**
     * conv over 1–3 spatial dims: per batch and group, im2col then GEMM (a 1×1 conv with stride 1 and no padding is a
     * GEMM on x directly). weight is [Cout, Cin/groups, *kernel]; pads per pad_type (same: extra padding at the end;
     * same_lower: at the start).
     */
    private void conv(Value out) {
        T x = contig(in("x")), w = contig(in("weight"));
        T bias = in("bias");
        if (bias != null) bias = contig(bias);
        int sp = x.rank() - 2;
        int groups = lit("groups").intValue();
        Literal sl = lit("strides"), dl = lit("dilations"), pl = lit("pad");
        String padType = lit("pad_type").stringValue();
        int[] in3 = {1, 1, 1}, k3 = {1, 1, 1}, s3 = {1, 1, 1}, d3 = {1, 1, 1}, o3 = {1, 1, 1}, pb3 = new int[3];
        int[] outShape = out.shape();
        for (int i = 0; i < sp; i++) {
            int j = 3 - sp + i;
            in3[j] = x.shape[2 + i];
            k3[j] = w.shape[2 + i];
            s3[j] = sl == null ? 1 : sl.toInts()[i];
            d3[j] = dl == null ? 1 : dl.toInts()[i];
            o3[j] = outShape[2 + i];
            int eff = d3[j] * (k3[j] - 1) + 1;
            pb3[j] = switch (padType) {
                case "valid" -> 0;
                case "custom" -> pl == null ? 0 : pl.toInts()[2 * i];
                case "same", "same_lower" -> {
                    int total = Math.max(0, (o3[j] - 1) * s3[j] + eff - in3[j]);
                    yield padType.equals("same") ? total / 2 : total - total / 2;
                }
                default -> throw err("pad_type '%s' is not one of valid, same, same_lower, custom", padType);
            };
        }
        int nb = x.shape[0], cin = x.shape[1], cout = w.shape[0];
        int cinG = cin / groups, coutG = cout / groups;
        int kProd = k3[0] * k3[1] * k3[2], oProd = o3[0] * o3[1] * o3[2], inProd = in3[0] * in3[1] * in3[2];
        boolean direct = kProd == 1 && Arrays.equals(s3, new int[] {1, 1, 1}) && pb3[0] == 0 && pb3[1] == 0 && pb3[2] == 0 && oProd == inProd;
        Storage cols = direct ? null : temp((long) cinG * kProd * oProd);
        T o = newOut(outShape, out.dtype());
        T fb = bias;
        addRounded(() -> {
            MemorySegment xs = x.st.seg, ws = w.st.seg, os = o.st.seg;
            for (int b = 0; b < nb; b++) {
                for (int g = 0; g < groups; g++) {
                    long xo = x.off + ((long) b * cin + (long) g * cinG) * inProd;
                    long wo = w.off + (long) g * coutG * cinG * kProd;
                    long oo = ((long) b * cout + (long) g * coutG) * oProd;
                    if (direct) {
                        // out[g] (coutG × HW) = W[g] (coutG × cinG) · x[g] (cinG × HW)
                        Gemm.gemm(false, false, coutG, oProd, cinG, ws, wo, cinG, xs, xo, inProd, 0f, os, oo, oProd);
                    } else {
                        im2col(xs, xo, cinG, in3, k3, s3, d3, pb3, o3, cols.seg);
                        Gemm.gemm(false, false, coutG, oProd, cinG * kProd, ws, wo, cinG * kProd, cols.seg, 0, oProd, 0f, os, oo, oProd);
                    }
                }
                if (fb != null)
                    for (int c = 0; c < cout; c++) {
                        float bv = fb.st.seg.getAtIndex(F, fb.off + (long) c * fb.strides[0]);
                        long base = ((long) b * cout + c) * oProd;
                        for (int i = 0; i < oProd; i++) os.setAtIndex(F, base + i, os.getAtIndex(F, base + i) + bv);
                    }
            }
        }, o);
        def(out, o);
    }

    /** cols[(c·K + kk), (od·OH + oh)·OW + ow] = x[c, id, ih, iw] (0 outside the padded input). */
    private static void im2col(MemorySegment xs, long xo, int cinG, int[] in3, int[] k3, int[] s3, int[] d3, int[] pb3, int[] o3, MemorySegment cols) {
        long oProd = (long) o3[0] * o3[1] * o3[2];
        long row = 0;
        for (int c = 0; c < cinG; c++)
            for (int kd = 0; kd < k3[0]; kd++)
                for (int kh = 0; kh < k3[1]; kh++)
                    for (int kw = 0; kw < k3[2]; kw++, row++) {
                        long dst = row * oProd;
                        for (int od = 0; od < o3[0]; od++) {
                            int id = od * s3[0] - pb3[0] + kd * d3[0];
                            for (int oh = 0; oh < o3[1]; oh++) {
                                int ih = oh * s3[1] - pb3[1] + kh * d3[1];
                                for (int ow = 0; ow < o3[2]; ow++, dst++) {
                                    int iw = ow * s3[2] - pb3[2] + kw * d3[2];
                                    boolean inside = id >= 0 && id < in3[0] && ih >= 0 && ih < in3[1] && iw >= 0 && iw < in3[2];
                                    cols.setAtIndex(F, dst, inside ? xs.getAtIndex(F, xo + (((long) c * in3[0] + id) * in3[1] + ih) * in3[2] + iw) : 0f);
                                }
                            }
                        }
                    }
    }

    /**
     * scaled_dot_product_attention: softmax(Q·Kᵀ / sqrt(E) [+ mask]) · V per batch. The ANE ignores attn_mask
     * (ane-facts.md §5.5), so the mask is ignored here too unless honorSdpaMask is set; a bool mask keeps positions where
     * it is true, a float mask is added.
     */
    private void sdpa(Value out) {
        T q = contig(in("query")), k = contig(in("key")), v = contig(in("value"));
        T mask = in("attn_mask");
        if (mask != null && !opt.honorSdpaMask()) {
            String w = "[scaled_dot_product_attention] attn_mask of '" + out.name() + "' is ignored, as the ANE ignores it (ane-facts.md §5.5); "
                    + "build attention from matmul/add/softmax, or set -D" + RefBackend.SDPA_MASK_PROPERTY + "=true to apply it";
            warnings.add(w);
            LOG.log(System.Logger.Level.WARNING, w);
            mask = null;
        }
        int r = q.rank();
        int l = q.shape[r - 2], e = q.shape[r - 1], s = k.shape[r - 2], ev = v.shape[r - 1];
        long batches = Shapes.count(Arrays.copyOf(q.shape, r - 2));
        int[] scoreShape = q.shape.clone();
        scoreShape[r - 1] = s;
        Storage scores = temp(batches * l * s);
        Iter maskIt = null;
        T fm = mask;
        if (mask != null) maskIt = Iter.of(scoreShape, T.dense(scores, scoreShape, DType.FP32), mask);
        T o = newOut(out.shape(), out.dtype());
        float scale = (float) (1.0 / Math.sqrt(e));
        Iter fmi = maskIt;
        boolean boolMask = mask != null && mask.dtype == DType.BOOL;
        addRounded(() -> {
            MemorySegment ss = scores.seg;
            for (long b = 0; b < batches; b++)
                Gemm.gemm(false, true, l, s, e, q.st.seg, q.off + b * l * e, e, k.st.seg, k.off + b * s * e, e, 0f, ss, b * l * s, s);
            long cnt = batches * l * s;
            for (long i = 0; i < cnt; i++) ss.setAtIndex(F, i, ss.getAtIndex(F, i) * scale);
            if (fmi != null) {
                MemorySegment ms = fm.st.seg;
                long si = fmi.inner[0], mi = fmi.inner[1];
                fmi.run((f, n) -> {
                    for (int i = 0; i < n; i++) {
                        float mv = ms.getAtIndex(F, f[1] + i * mi);
                        long at = f[0] + i * si;
                        ss.setAtIndex(F, at, boolMask ? (mv != 0 ? ss.getAtIndex(F, at) : Float.NEGATIVE_INFINITY) : ss.getAtIndex(F, at) + mv);
                    }
                });
            }
            softmaxRows(ss, 0, ss, 0, batches * l, s, 1, false);
            for (long b = 0; b < batches; b++)
                Gemm.gemm(false, false, l, ev, s, ss, b * l * s, s, v.st.seg, v.off + b * s * ev, ev, 0f, o.st.seg, b * l * ev, ev);
        }, o);
        def(out, o);
    }

    // ---- quantization and gather --------------------------------------------------------------------------------

    /** A per-tensor or per-axis quantization parameter as a view broadcast over {@code shape}. */
    private T perAxis(Literal l, String name, int[] shape, Integer axis, float dflt) {
        if (l == null) {
            Storage s = new Storage(1, Storage.Kind.CONSTANT, new float[] {dflt}, -1);
            s.lastUse = Integer.MAX_VALUE;
            storages.add(s);
            return new T(s, 0, new int[0], new long[0], DType.FP32);
        }
        T c = constant(l, name);
        if (l.type().isScalar()) return c;
        int[] sh = new int[shape.length];
        Arrays.fill(sh, 1);
        sh[axis] = shape[axis];
        long[] st = new long[shape.length];
        st[axis] = 1;
        return new T(c.st, 0, sh, st, c.dtype);
    }

    /** constexpr_affine_dequantize: (quantized_data − zero_point) · scale, decoded once at compile time. */
    private void affineDequantize(Value out) {
        Literal q = lit("quantized_data");
        float[] data = decode(q, "quantized_data");
        int[] shape = q.type().shape();
        int axis = axis("axis", shape.length);
        float[] scale = lit("scale").toFloats(), zp = lit("zero_point").toFloats();
        long inner = 1;
        for (int i = axis + 1; i < shape.length; i++) inner *= shape[i];
        boolean fp16 = out.dtype() == DType.FP16 && !opt.fp32Storage();
        for (int i = 0; i < data.length; i++) {
            int c = (int) ((i / inner) % shape[axis]);
            float v = (data[i] - zp[zp.length == 1 ? 0 : c]) * scale[scale.length == 1 ? 0 : c];
            data[i] = fp16 ? Float.float16ToFloat(Float.floatToFloat16(v)) : v;
        }
        Storage s = new Storage(data.length, Storage.Kind.CONSTANT, data, -1);
        s.lastUse = Integer.MAX_VALUE;
        storages.add(s);
        def(out, T.dense(s, shape, out.dtype()));
    }

    /** quantize (iOS17): clip(round_half_even(input / scale) + zero_point, type min, type max), as coremltools. */
    private void quantize(Value out) {
        T x = in("input");
        Integer axis = cur.inputs().containsKey("axis") ? axis("axis", x.rank()) : null;
        T sc = perAxis(lit("scale"), "scale", x.shape, axis, 1f), zp = perAxis(lit("zero_point"), "zero_point", x.shape, axis, 0f);
        float lo = out.dtype() == DType.INT8 ? -128 : 0, hi = out.dtype() == DType.INT8 ? 127 : 255;
        T o = newOut(out.shape(), out.dtype());
        Iter it = Iter.of(o.shape, o, x, sc, zp);
        add(() -> {
            MemorySegment os = o.st.seg, xs = x.st.seg, ss = sc.st.seg, zs = zp.st.seg;
            long oi = it.inner[0], xi = it.inner[1], si = it.inner[2], zi = it.inner[3];
            it.runParallel((f, n) -> {
                for (int i = 0; i < n; i++) {
                    float v = (float) Math.rint(xs.getAtIndex(F, f[1] + i * xi) / ss.getAtIndex(F, f[2] + i * si)) + zs.getAtIndex(F, f[3] + i * zi);
                    os.setAtIndex(F, f[0] + i * oi, Math.max(lo, Math.min(hi, v)));
                }
            });
        });
        def(out, o);
    }

    /** dequantize (iOS17): scale · (input − zero_point). */
    private void dequantize(Value out) {
        T x = in("input");
        Integer axis = cur.inputs().containsKey("axis") ? axis("axis", x.rank()) : null;
        T sc = perAxis(lit("scale"), "scale", x.shape, axis, 1f), zp = perAxis(lit("zero_point"), "zero_point", x.shape, axis, 0f);
        T o = newOut(out.shape(), out.dtype());
        Iter it = Iter.of(o.shape, o, x, sc, zp);
        addRounded(() -> {
            MemorySegment os = o.st.seg, xs = x.st.seg, ss = sc.st.seg, zs = zp.st.seg;
            long oi = it.inner[0], xi = it.inner[1], si = it.inner[2], zi = it.inner[3];
            it.runParallel((f, n) -> {
                for (int i = 0; i < n; i++)
                    os.setAtIndex(F, f[0] + i * oi, ss.getAtIndex(F, f[2] + i * si) * (xs.getAtIndex(F, f[1] + i * xi) - zs.getAtIndex(F, f[3] + i * zi)));
            });
        }, o);
        def(out, o);
    }

    /** gather along axis; a negative index counts from the end of the axis (as coremltools/numpy); out of range is an error. */
    /** gather with batch_dims b: for each of the leading b dimensions (shared by x and indices) an ordinary gather. */
    private void gather(Value out) {
        T x = contig(in("x")), idx = contig(in("indices"));
        int axis = axis("axis", x.rank());
        int b = lit("batch_dims").intValue();
        long batches = 1, outer = 1, inner = 1, ni = 1;
        for (int i = 0; i < b; i++) batches *= x.shape[i];
        for (int i = b; i < axis; i++) outer *= x.shape[i];
        for (int i = axis + 1; i < x.rank(); i++) inner *= x.shape[i];
        for (int i = b; i < idx.rank(); i++) ni *= idx.shape[i];
        int dim = x.shape[axis];
        T o = newOut(out.shape(), out.dtype());
        long fb = batches, fo = outer, fi = inner, fn = ni;
        String name = out.name();
        add(() -> {
            MemorySegment xs = x.st.seg, is = idx.st.seg, os = o.st.seg;
            for (long bt = 0; bt < fb; bt++)
                for (long a = 0; a < fo; a++)
                    for (long j = 0; j < fn; j++) {
                        int raw = (int) is.getAtIndex(F, idx.off + bt * fn + j), ix = raw < 0 ? raw + dim : raw;
                        if (ix < 0 || ix >= dim)
                            throw new BackendException("[gather] index " + raw + " of '" + name + "' is out of range for axis " + axis + " of size " + dim);
                        long row = bt * fo + a;
                        MemorySegment.copy(xs, (x.off + (row * dim + ix) * fi) * 4, os, ((row * fn + j) * fi) * 4, fi * 4);
                    }
        });
        def(out, o);
    }
}
