package ane4j.backend.ref;

import ane4j.backend.BackendException;
import ane4j.backend.TensorSpec;
import ane4j.blas.Parallel;
import ane4j.blas.Transposes;
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
final class Planner implements Views, Elementwise, Reductions, MatmulConv, Attention, Quantization, Gather, Layers {
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

    /** Whether chains of elementwise ops run as one pass ({@link Fused}); {@code -Dane4j.ref.fuse=false} runs every op on its own. */
    private final boolean fuse;
    /** The op that makes each value. */
    private final Map<String, Operation> producer = new HashMap<>();
    /** Values whose op was folded into its consumer's fused step (computed there, never stored). */
    private final java.util.Set<String> deferred = new java.util.HashSet<>();

    static final String FUSE_PROPERTY = "ane4j.ref.fuse";

    /** Whether ops write values that a concat takes straight into its output ({@link #placed}); {@code -Dane4j.ref.place=false}: copies. */
    private final boolean place;
    /** Whether batched matmuls run one product per thread ({@code -Dane4j.ref.batchParallel=false}: each product split). */
    private final boolean batchParallel;

    static final String PLACE_PROPERTY = "ane4j.ref.place";
    static final String BATCH_PARALLEL_PROPERTY = "ane4j.ref.batchParallel";

    Planner(Function fn, Weights weights, RefBackend.Options opt) {
        this(fn, weights, opt, on(FUSE_PROPERTY), on(PLACE_PROPERTY), on(BATCH_PARALLEL_PROPERTY));
    }

    private static boolean on(String property) { return !"false".equals(System.getProperty(property)); }

    Planner(Function fn, Weights weights, RefBackend.Options opt, boolean fuse, boolean place) {
        this(fn, weights, opt, fuse, place, true);
    }

    /** With the planner's optimisations chosen one by one (tests compare each against none). */
    Planner(Function fn, Weights weights, RefBackend.Options opt, boolean fuse, boolean place, boolean batchParallel) {
        this.fn = fn;
        this.weights = weights;
        this.opt = opt;
        this.fuse = fuse;
        this.place = place;
        this.batchParallel = batchParallel;
    }

    @Override public boolean batchParallel() { return batchParallel; }

    RefKernel plan() {
        for (Operation o : fn.operations())
            for (Arg a : o.inputs().values())
                for (Value v : argValues(a)) { uses.merge(v.name(), 1, Integer::sum); consumer.put(v.name(), o); }
        for (Value v : fn.outputs()) uses.merge(v.name(), 1, Integer::sum);
        for (Operation o : fn.operations()) for (Value v : o.outputs()) producer.put(v.name(), o);
        if (place) findPlacements();

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
        return new RefKernel(fn.name(), in, out, inputStorages, outs, steps, warnings, arena, !opt.fp32Storage());
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
    static void round16(float[] a, int n) { round16(a, 0, n); }

    static void round16(float[] a, int off, int n) { ane4j.backend.Fp16.round(a, off, n); }

    /** Adds the op's computation and, for fp16 outputs with fp16 storage, the rounding of its (dense) result. */
    @Override public void addRounded(Runnable r, T out) {
        if (out.dtype == DType.FP16 && !opt.fp32Storage()) {
            // out fills [off, off + count) of its storage (dense, or dense in another axis order)
            Storage s = out.st;
            long from = out.off, n = out.count();
            add(() -> { r.run(); roundFp16(s.seg, from, n); });
        } else add(r);
    }

    static void roundFp16(MemorySegment seg, long from, long n) {
        // the chunked loop does ~4 elements/ns on one core: only huge tensors gain from the pool
        if (n < ROUND_PARALLEL_MIN) { ane4j.backend.Fp16.round(seg, from, n); return; }
        // elementwise: disjoint pieces in parallel
        int pieces = 8;
        Parallel.forEach(pieces, p -> ane4j.backend.Fp16.round(seg, from + n * p / pieces, n * (p + 1) / pieces - n * p / pieces));
    }

    private static final long ROUND_PARALLEL_MIN = 1L << 22;

    /**
     * Turns every value beyond {@code limit} in magnitude into ±inf (NaN stays NaN). {@code roundsAbove}: the limit is the
     * largest finite fp16 result, so everything that rounds above it goes (|v| ≥ the midpoint to the next fp16 value).
     */
    static void saturate(MemorySegment seg, long n, float limit, boolean roundsAbove) { saturate(seg, 0, n, limit, roundsAbove); }

    /** {@link #saturate(MemorySegment, long, float, boolean)} of elements [from, from + n). */
    static void saturate(MemorySegment seg, long from, long n, float limit, boolean roundsAbove) {
        float cut = roundsAbove ? limit + fp16HalfStepAbove(limit) : limit;                 // 32752 → 32760
        for (long i = from; i < from + n; i++) {
            float v = seg.getAtIndex(F, i);
            if (roundsAbove ? Math.abs(v) >= cut : Math.abs(v) > cut) seg.setAtIndex(F, i, Math.copySign(Float.POSITIVE_INFINITY, v));
        }
    }

    /** Half the fp16 spacing above {@code v} (a finite fp16 value): the rounding midpoint's distance. */
    private static float fp16HalfStepAbove(float v) {
        short h = Float.floatToFloat16(v);
        return (Float.float16ToFloat((short) (h + 1)) - v) / 2;
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

    /** Rows of dst per parallel task of {@link #transposeCopy}. */
    private static final int TILE = 64;

    /**
     * dst[.., i, j] = src[.., j·sj + i] (the last two merged dims swapped), strips of TILE rows of each outer index in
     * parallel, through {@link Transposes} (OpenBLAS's omatcopy where it runs, else 64×64 tiles through heap arrays).
     */
    private static void transposeCopy(Iter it, MemorySegment d, MemorySegment s) {
        int nd = it.dims.length;
        int rows = it.dims[nd - 2], cols = it.rowLen;
        long dRow = it.strides[0][nd - 2], sCol = it.inner[1];
        long outer = 1;
        for (int i = 0; i < nd - 2; i++) outer *= it.dims[i];
        int rowTiles = (rows + TILE - 1) / TILE;
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
            // rows [i0, i0+ih) of dst = columns [i0, i0+ih) of src, transposed
            Transposes.copy(s, sOff + i0, cols, ih, sCol, d, dOff + i0 * dRow, dRow);
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
        if (fuse && fusedStep(o)) return;
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
            case LOG, ERF, GELU -> unary(o.op(), out);
            case EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL -> compare(o.op(), out);
            case TILE -> tile(out);
            case LINEAR -> linear(out);
            case AVG_POOL, MAX_POOL -> pool(o.op(), out);
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // placement: a value that reaches a concat only through views is written by its op straight into the concat's output

    /** A value's place in a concat's output: the concat, which of its inputs, and the views from that input back to the value. */
    private record Placement(Operation concat, int index, List<Operation> views, boolean sole) {}

    private final Map<String, Placement> placements = new HashMap<>();
    /** Outputs of concats that some op writes into before the concat runs (allocated at that op's step). */
    private final Map<String, Storage> concatStorage = new HashMap<>();

    /** Finds, for every input of a (non-interleaved) concat, the value it is a view of (the first concat to claim a value keeps it). */
    private void findPlacements() {
        for (Operation c : fn.operations()) {
            if (c.op() != Op.CONCAT || c.literal("interleave").boolValue()) continue;
            List<Value> xs = c.values("values");
            for (int k = 0; k < xs.size(); k++) {
                List<Operation> views = new ArrayList<>();
                Value v = xs.get(k);
                boolean sole = uses.getOrDefault(v.name(), 0) == 1;
                Operation p = producer.get(v.name());
                while (p != null && (p.op() == Op.RESHAPE || p.op() == Op.TRANSPOSE || p.op() == Op.IDENTITY)) {
                    views.add(p);
                    v = p.value("x");
                    sole &= uses.getOrDefault(v.name(), 0) == 1;
                    p = producer.get(v.name());
                }
                if (p == null || p.op() == Op.CONST || fn.outputs().contains(v) || placements.containsKey(v.name())) continue;
                placements.put(v.name(), new Placement(c, k, views, sole));
            }
        }
    }

    /**
     * Where the op making {@code v} may write it: its view in the output of the concat that takes it (allocated now), or
     * null. The op uses it only if it can write that layout; the concat then finds its input in place and copies nothing.
     */
    @Override public T placed(Value v) {
        Placement pl = placements.get(v.name());
        if (pl == null) return null;
        T t = concatSlot(concatOutput(pl.concat.outputs().get(0)), pl.concat, pl.index);
        // back through the views: transpose by the inverse permutation, reshape by the no-copy rule
        for (Operation view : pl.views) {
            Value in = view.value("x");
            t = switch (view.op()) {
                case TRANSPOSE -> {
                    int[] perm = axes(view.literal("perm").toInts(), t.rank());
                    int[] shape = new int[perm.length];
                    long[] strides = new long[perm.length];
                    for (int j = 0; j < perm.length; j++) { shape[perm[j]] = t.shape[j]; strides[perm[j]] = t.strides[j]; }
                    yield t.withShape(shape, strides);
                }
                case RESHAPE -> t.reshapeView(in.shape());
                default -> t;
            };
            if (t == null) return null;
        }
        return t.withDType(v.dtype());
    }

    /** Whether {@code v} is read only by the concat that places it (so its layout may change: no other op sees it). */
    @Override public boolean onlyInConcat(Value v) {
        Placement pl = placements.get(v.name());
        return pl != null && pl.sole;
    }

    /** The output of concat value {@code out}: the storage an op already writes into, else a new one. */
    @Override public T concatOutput(Value out) {
        Storage s = concatStorage.computeIfAbsent(out.name(), n -> temp(Shapes.count(out.shape())));
        return T.dense(s, out.shape(), out.dtype());
    }

    /** Input {@code k}'s view in the output {@code o} of concat {@code c} (not interleaved). */
    static T concatSlot(T o, Operation c, int k) {
        List<Value> xs = c.values("values");
        Integer axis = Shapes.axis(c.literal("axis").intValue(), o.rank());
        long pos = 0;
        for (int i = 0; i < k; i++) pos += xs.get(i).shape()[axis];
        return new T(o.st, o.off + pos * o.strides[axis], xs.get(k).shape().clone(), o.strides.clone(), o.dtype);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // fusion: a chain of elementwise ops whose intermediate values have one use each runs as one pass (Fused)

    /**
     * Plans {@code o} as part of a fused chain: folds it into its consumer (its value is then never stored), or, when an
     * operand was folded into it, plans the whole chain as one step. False: plan {@code o} on its own.
     */
    private boolean fusedStep(Operation o) {
        Value out = o.outputs().get(0);
        if (elementwiseNode(o) && absorbedByConsumer(out)) { deferred.add(out.name()); return true; }
        boolean root = switch (o.op()) {
            case SOFTMAX -> isDeferred(o.value("x")) && fusableTail(o, o.value("x"));
            case REDUCE_SUM, REDUCE_MEAN, REDUCE_MAX -> isDeferred(o.value("x")) && fusableTail(o, o.value("x"));
            default -> elementwiseNode(o) && o.inputs().values().stream().anyMatch(a -> a instanceof Arg.Ref r && isDeferred(r.value()));
        };
        if (!root) return false;
        Fused chain = new Fused();
        StringBuilder names = new StringBuilder();
        Fused.Tail tail = Fused.Tail.NONE;
        int[] shape = out.shape();
        Op reduceOp = null;
        float reduceScale = 1f;
        if (o.op() == Op.SOFTMAX || o.op().name().startsWith("REDUCE_")) {
            Value x = o.value("x");
            fusedNode(producer.get(x.name()), chain, names);
            shape = x.shape();
            tail = o.op() == Op.SOFTMAX ? Fused.Tail.SOFTMAX : Fused.Tail.REDUCE;
            if (tail == Fused.Tail.REDUCE) {
                reduceOp = o.op();
                reduceScale = o.op() == Op.REDUCE_MEAN ? 1f / shape[shape.length - 1] : 1f;
            }
            names.append('+').append(out.name());
        } else fusedNode(o, chain, names);
        T dest = placed(out);
        T result = dest != null && dest.isContiguous() ? dest : newOut(out.shape(), out.dtype());
        Runnable r = chain.plan(result, shape, tail, reduceOp, reduceScale, rounds(out.dtype()));
        steps.add(new RefKernel.Step("fused " + names + " [" + chain.opCount() + " ops, " + chain.leafCount() + " operands]", r));
        labelExtra = "";
        def(out, result);
        return true;
    }

    private boolean isDeferred(Value v) { return v != null && deferred.contains(v.name()); }

    /** Adds {@code o} (and, first, the folded ops it reads) to the chain; returns its slot. */
    private int fusedNode(Operation o, Fused chain, StringBuilder names) {
        boolean binary = o.inputs().containsKey("y");
        int a = fusedOperand(o, "x", chain, names);
        int b = binary ? fusedOperand(o, "y", chain, names) : Integer.MIN_VALUE;
        float eps = o.op() == Op.RSQRT ? o.literal("epsilon").floatValue() : 0f;
        Value out = o.outputs().get(0);
        names.append(names.isEmpty() ? "" : "+").append(out.name());
        return chain.node(o.op(), a, b, rounds(out.dtype()), eps);
    }

    private int fusedOperand(Operation o, String param, Fused chain, StringBuilder names) {
        Value v = o.value(param);
        if (isDeferred(v)) return fusedNode(producer.get(v.name()), chain, names);
        if (v != null) return chain.leaf(get(v));
        if (o.inputs().get(param) instanceof Arg.Inline i) return chain.leaf(constant(i.literal(), param));
        throw err("'%s' has no operand '%s'", o.outputs().get(0).name(), param);
    }

    /** Whether {@code o} can be an op of a fused chain (the dense loops of {@link Elementwise}; float types). */
    private boolean elementwiseNode(Operation o) {
        DType d = o.outputs().get(0).dtype();
        if (d != DType.FP16 && d != DType.FP32) return false;
        return switch (o.op()) {
            case ADD, SUB, MUL, REAL_DIV, POW, RSQRT, SQRT, RELU, TANH -> true;
            // on its own, exp/sigmoid/silu of a strided operand take Math.exp, of a dense one VectorMath.exp: fused only
            // where it would be the latter
            case EXP, SIGMOID, SILU -> isDeferred(o.value("x")) || (o.value("x") != null && denseRows(o.outputs().get(0), vals.get(o.value("x").name())));
            default -> false;
        };
    }

    /** Whether x (null: not yet decoded) runs with unit inner stride against a dense output, as Elementwise.unary checks. */
    private static boolean denseRows(Value out, T x) {
        if (x == null) return false;
        Iter it = Iter.of(out.shape(), T.dense(new Storage(1, Storage.Kind.TEMP, null, 0), out.shape(), out.dtype()), x);
        return it.inner[0] == 1 && it.inner[1] == 1;
    }

    /**
     * Whether {@code v}, made by an elementwise op, is read only by one op that takes it into its own fused chain; the
     * operands the chain then reads from memory (of v's op and of the consumer) must be rows (dense or broadcast along
     * runs of at least {@link #FUSED_MIN_ROW}): a strided operand stays with an op on its own.
     */
    private boolean absorbedByConsumer(Value v) {
        if (uses.getOrDefault(v.name(), 0) != 1 || fn.outputs().contains(v)) return false;
        Operation c = consumer.get(v.name());
        if (c == null || !rowOperands(producer.get(v.name()), v.shape())) return false;
        return switch (c.op()) {
            case SOFTMAX, REDUCE_SUM, REDUCE_MEAN, REDUCE_MAX -> fusableTail(c, v);
            default -> elementwiseNodeReading(c, v) && java.util.Arrays.equals(v.shape(), c.outputs().get(0).shape()) && rowOperands(c, v.shape());
        };
    }

    /** Runs shorter than this make a fused chain slower than the ops one by one (a chunk's fixed cost per run). */
    private static final int FUSED_MIN_ROW = 256;

    /** Whether every operand of {@code o} that is not folded is read in rows over {@code shape} (see {@link #absorbedByConsumer}). */
    private boolean rowOperands(Operation o, int[] shape) {
        T out = T.dense(new Storage(1, Storage.Kind.TEMP, null, 0), shape, DType.FP32);
        for (Map.Entry<String, Arg> e : o.inputs().entrySet()) {
            if (!e.getKey().equals("x") && !e.getKey().equals("y")) continue;
            T t = switch (e.getValue()) {
                case Arg.Ref r when isDeferred(r.value()) -> null;
                // a constant not yet decoded is dense
                case Arg.Ref r -> vals.containsKey(r.value().name()) ? vals.get(r.value().name()) : T.dense(out.st, r.value().shape(), r.value().dtype());
                case Arg.Inline i -> T.dense(out.st, i.literal().type().shape(), i.literal().dtype());
                case Arg.Tuple tu -> null;
            };
            if (t == null) continue;
            Iter it = Iter.of(shape, out, t);
            long total = Shapes.count(shape);
            if (it.inner[1] > 1 || (it.rowLen < FUSED_MIN_ROW && it.rowLen < total)) return false;
        }
        return true;
    }

    /** {@link #elementwiseNode} for a consumer whose operand {@code v} will be folded (so dense). */
    private boolean elementwiseNodeReading(Operation c, Value v) {
        DType d = c.outputs().get(0).dtype();
        if (d != DType.FP16 && d != DType.FP32) return false;
        return switch (c.op()) {
            case ADD, SUB, MUL, REAL_DIV, POW, RSQRT, SQRT, RELU, TANH, EXP, SIGMOID, SILU -> true;
            default -> false;
        };
    }

    /** A softmax or reduction over the last axis only, rows of at most one chunk, float output: can end a chain. */
    private boolean fusableTail(Operation c, Value x) {
        DType d = c.outputs().get(0).dtype();
        if (d != DType.FP16 && d != DType.FP32) return false;
        int rank = x.rank(), len = rank == 0 ? 1 : x.shape()[rank - 1];
        if (rank == 0 || len > CHUNK) return false;
        if (c.op() == Op.SOFTMAX) {
            Integer a = Shapes.axis(c.literal("axis").intValue(), rank);
            return a != null && a == rank - 1;
        }
        Literal al = c.literal("axes");
        if (al == null) return rank == 1;
        int[] ax = axes(al.toInts(), rank);
        return ax.length == 1 && ax[0] == rank - 1;
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