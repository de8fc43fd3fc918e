package ane4j.backend.ref;

import ane4j.backend.BackendException;
import ane4j.backend.TensorSpec;
import ane4j.blas.Parallel;
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
import java.util.ArrayList;
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
final class Planner implements Views, Elementwise, Reductions, MatmulConv, Attention, Quantization, Gather {
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

    @Override public BackendException err(String format, Object... args) {
        String op = cur == null ? "ref" : cur.op().milName();
        return new BackendException("[" + op + "] " + String.format(format, args));
    }

    // ---------------------------------------------------------------------------------------------------------------
    // values, storages, steps

    private final Arena arena = Arena.ofShared();

    /** The view of value {@code v}, marking it used by the current step (constants are decoded on first use). */
    @Override public T get(Value v) {
        T t = vals.get(v.name());
        if (t == null) {
            if (v.constant() == null) throw err("value '%s' is used before it is defined", v.name());
            t = constant(v.constant(), v.name());
            vals.put(v.name(), t);
        }
        if (t.st.lastUse < step) t.st.lastUse = step;
        return t;
    }

    @Override public T in(String param) {
        Value v = cur.value(param);
        if (v != null) return get(v);
        if (cur.inputs().get(param) instanceof Arg.Inline i) return constant(i.literal(), param);
        return null;
    }

    @Override public Literal lit(String param) { return cur.literal(param); }

    @Override public T constant(Literal l, String name) {
        float[] data = decode(l, name);
        Storage s = new Storage(data.length, Storage.Kind.CONSTANT, data, -1);
        s.lastUse = Integer.MAX_VALUE;
        storages.add(s);
        return T.dense(s, l.type().shape(), l.dtype());
    }

    @Override public float[] decode(Literal l, String name) {
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

    @Override public T newOut(int[] shape, DType dtype) { return T.dense(temp(Shapes.count(shape)), shape, dtype); }

    @Override public Storage temp(long floats) {
        Storage s = new Storage(Math.max(1, floats), Storage.Kind.TEMP, null, step);
        storages.add(s);
        return s;
    }

    @Override public void def(Value v, T t) { vals.put(v.name(), t); }

    /** Shapes appended to the next step's label (shown by the profile). */
    private String labelExtra = "";

    @Override public void label(String extra) { labelExtra = extra; }

    @Override public RefBackend.Options opt() { return opt; }

    @Override public Operation cur() { return cur; }

    @Override public void addStorage(Storage s) { storages.add(s); }

    @Override public void warn(String w) {
        warnings.add(w);
        LOG.log(System.Logger.Level.WARNING, w);
    }

    @Override public void add(Runnable r) {
        steps.add(new RefKernel.Step(cur.op().milName() + " " + cur.outputs().get(0).name() + labelExtra, r));
        labelExtra = "";
    }

    /** Whether values of this type are rounded to fp16 after the op that makes them. */
    @Override public boolean rounds(DType dtype) { return dtype == DType.FP16 && !opt.fp32Storage(); }

    /** Rounds a heap chunk to fp16 and back (vectorised: F16C/AVX-512 conversions). */
    static void round16(float[] a, int n) {
        for (int i = 0; i < n; i++) a[i] = Float.float16ToFloat(Float.floatToFloat16(a[i]));
    }

    /** Adds the op's computation and, for fp16 outputs with fp16 storage, the rounding of its (dense) result. */
    @Override public void addRounded(Runnable r, T out) {
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
    @Override public T contig(T t) {
        if (t.isContiguous()) return t;
        T d = newOut(t.shape, t.dtype);
        copyStep(t, d);
        return d;
    }

    @Override public void copyStep(T src, T dst) {
        Iter it = Iter.of(dst.shape, dst, src);
        add(() -> copy(it, dst.st.seg, src.st.seg));
    }

    static void copy(Iter it, MemorySegment d, MemorySegment s) {
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
    // one case per op: the compiler rejects an op without reference semantics. The semantics live by family in
    // Views, Elementwise, Reductions, MatmulConv, Attention, Quantization and Gather (one formula line per op).

    private void compile(Operation o) {
        Value out = o.outputs().get(0);
        switch (o.op()) {
            case CONST -> { /* decoded when first used as a tensor */ }
            case IDENTITY -> identity(out);
            case RESHAPE -> reshape(out);
            case TRANSPOSE -> transpose(out);
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

    static int[] axes(int[] a, int rank) {
        int[] r = new int[a.length];
        for (int i = 0; i < a.length; i++) r[i] = a[i] < 0 ? a[i] + rank : a[i];
        return r;
    }

    @Override public int axis(String param, int rank) {
        int a = lit(param).intValue();
        Integer r = Shapes.axis(a, rank);
        if (r == null) throw err("%s %d is out of range for rank %d", param, a, rank);
        return r;
    }

    /** Whether {@code v}'s only use is a transpose of its last two axes (matmul then writes its result transposed). */
    @Override public boolean transposesLastTwo(Value v) {
        if (uses.getOrDefault(v.name(), 0) != 1 || fn.outputs().contains(v)) return false;
        Operation c = consumer.get(v.name());
        if (c == null || c.op() != Op.TRANSPOSE) return false;
        int r = v.rank();
        int[] perm = axes(c.literal("perm").toInts(), r);
        for (int i = 0; i < r - 2; i++) if (perm[i] != i) return false;
        return perm[r - 2] == r - 1 && perm[r - 1] == r - 2;
    }

}