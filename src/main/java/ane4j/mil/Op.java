package ane4j.mil;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every MIL op ane4j knows, each defined once: its MIL name, the opset that introduced it, its parameters (MIL names,
 * where they are written, defaults) and its shape/dtype inference. The builder, the text writer and parser, and the
 * reference interpreter all read this table, so they cannot drift apart.
 */
public enum Op {
    CONV("conv", Opset.IOS15, Op::inferConv,
            tensor("x"), tensor("weight"), optTensor("bias"), optConst("strides", null), optConst("pad_type", Literal.string("valid")),
            optConst("pad", null), optConst("dilations", null), optConst("groups", Literal.int32(1))),
    MATMUL("matmul", Opset.IOS15, Op::inferMatmul,
            tensor("x"), tensor("y"), optConst("transpose_x", Literal.bool(false)), optConst("transpose_y", Literal.bool(false))),
    ADD("add", Opset.IOS15, Op::inferBinary, tensor("x"), tensor("y")),
    SUB("sub", Opset.IOS15, Op::inferBinary, tensor("x"), tensor("y")),
    MUL("mul", Opset.IOS15, Op::inferBinary, tensor("x"), tensor("y")),
    REAL_DIV("real_div", Opset.IOS15, Op::inferBinary, tensor("x"), tensor("y")),
    POW("pow", Opset.IOS15, Op::inferBinaryFloat, tensor("x"), tensor("y")),
    RSQRT("rsqrt", Opset.IOS15, Op::inferUnaryFloat, tensor("x"), optConst("epsilon", Literal.fp32(1e-12f))),
    SQRT("sqrt", Opset.IOS15, Op::inferUnaryFloat, tensor("x")),
    EXP("exp", Opset.IOS15, Op::inferUnaryFloat, tensor("x")),
    REDUCE_SUM("reduce_sum", Opset.IOS15, Op::inferReduce, tensor("x"), optConst("axes", null), optConst("keep_dims", Literal.bool(false))),
    REDUCE_MEAN("reduce_mean", Opset.IOS15, Op::inferReduce, tensor("x"), optConst("axes", null), optConst("keep_dims", Literal.bool(false))),
    REDUCE_MAX("reduce_max", Opset.IOS15, Op::inferReduce, tensor("x"), optConst("axes", null), optConst("keep_dims", Literal.bool(false))),
    SIGMOID("sigmoid", Opset.IOS15, Op::inferUnaryFloat, tensor("x")),
    SILU("silu", Opset.IOS15, Op::inferUnaryFloat, tensor("x")),
    RELU("relu", Opset.IOS15, Op::inferUnaryFloat, tensor("x")),
    TANH("tanh", Opset.IOS15, Op::inferUnaryFloat, tensor("x")),
    SOFTMAX("softmax", Opset.IOS15, Op::inferSoftmax, tensor("x"), optConst("axis", Literal.int32(-1))),
    RESHAPE("reshape", Opset.IOS15, Op::inferReshape, tensor("x"), constant("shape")),
    TRANSPOSE("transpose", Opset.IOS15, Op::inferTranspose, tensor("x"), constant("perm")),
    SLICE_BY_SIZE("slice_by_size", Opset.IOS15, Op::inferSliceBySize, tensor("x"), constant("begin"), constant("size")),
    CONCAT("concat", Opset.IOS15, Op::inferConcat, tuple("values"), constant("axis"), optConst("interleave", Literal.bool(false))),
    SPLIT("split", Opset.IOS15, Op::inferSplit, tensor("x"), optConst("num_splits", null), optConst("split_sizes", null), constant("axis")),
    CAST("cast", Opset.IOS15, Op::inferCast, tensor("x"), constant("dtype")),
    IDENTITY("identity", Opset.IOS15, c -> List.of(c.type("x")), tensor("x")),
    SELECT("select", Opset.IOS15, Op::inferSelect, tensor("cond"), tensor("a"), tensor("b")),
    CONST("const", Opset.IOS15, c -> List.of(c.literal("val").type()), attribute("val")),
    CONSTEXPR_AFFINE_DEQUANTIZE("constexpr_affine_dequantize", Opset.IOS16, Op::inferAffineDequantize,
            attribute("quantized_data"), attribute("zero_point"), attribute("scale"), attribute("axis")),
    QUANTIZE("quantize", Opset.IOS17, Op::inferQuantize,
            tensor("input"), optConst("zero_point", null), constant("scale"), optConst("axis", null), constant("output_dtype")),
    DEQUANTIZE("dequantize", Opset.IOS17, Op::inferDequantize,
            tensor("input"), optConst("zero_point", null), constant("scale"), optConst("axis", null)),
    SCALED_DOT_PRODUCT_ATTENTION("scaled_dot_product_attention", Opset.IOS18, Op::inferSdpa,
            tensor("query"), tensor("key"), tensor("value"), optTensor("attn_mask")),
    LAYER_NORM("layer_norm", Opset.IOS15, Op::inferLayerNorm,
            tensor("x"), optConst("axes", null), optConst("gamma", null), optConst("beta", null), optConst("epsilon", Literal.fp32(1e-5f))),
    GATHER("gather", Opset.IOS15, Op::inferGather,
            tensor("x"), tensor("indices"), optConst("axis", Literal.int32(0)), optConst("batch_dims", Literal.int32(0)),
            optConst("validate_indices", Literal.bool(false))),
    // added for training small graphs (issue 31): log/erf/gelu, comparisons (the gradients' masks), tile (the gradients'
    // broadcasts), linear and pooling; each is an iOS15 op of coremltools (ops/defs/iOS15) with its parameters
    LOG("log", Opset.IOS15, Op::inferUnaryFloat, tensor("x"), optConst("epsilon", Literal.fp32(1e-45f))),
    ERF("erf", Opset.IOS15, Op::inferUnaryFloat, tensor("x")),
    GELU("gelu", Opset.IOS15, Op::inferGelu, tensor("x"), optConst("mode", Literal.string("EXACT"))),
    EQUAL("equal", Opset.IOS15, Op::inferCompare, tensor("x"), tensor("y")),
    NOT_EQUAL("not_equal", Opset.IOS15, Op::inferCompare, tensor("x"), tensor("y")),
    GREATER("greater", Opset.IOS15, Op::inferCompare, tensor("x"), tensor("y")),
    GREATER_EQUAL("greater_equal", Opset.IOS15, Op::inferCompare, tensor("x"), tensor("y")),
    LESS("less", Opset.IOS15, Op::inferCompare, tensor("x"), tensor("y")),
    LESS_EQUAL("less_equal", Opset.IOS15, Op::inferCompare, tensor("x"), tensor("y")),
    TILE("tile", Opset.IOS15, Op::inferTile, tensor("x"), constant("reps")),
    LINEAR("linear", Opset.IOS15, Op::inferLinear, tensor("x"), tensor("weight"), optTensor("bias")),
    AVG_POOL("avg_pool", Opset.IOS15, Op::inferPool, tensor("x"), constant("kernel_sizes"), optConst("strides", null),
            optConst("pad_type", Literal.string("valid")), optConst("pad", null), optConst("exclude_padding_from_average", Literal.bool(false)),
            optConst("ceil_mode", Literal.bool(false))),
    MAX_POOL("max_pool", Opset.IOS15, Op::inferPool, tensor("x"), constant("kernel_sizes"), optConst("strides", null),
            optConst("pad_type", Literal.string("valid")), optConst("pad", null), optConst("ceil_mode", Literal.bool(false)));

    /** Where a parameter is written and what it may be bound to. */
    public enum Kind {
        /** {@code (x = v)}: any value. */ TENSOR,
        /** {@code (axis = v)}: a value known at compile time (a const output or an inline literal). */ CONST,
        /** {@code (values = (a, b))}: a tuple of values. */ TUPLE,
        /** {@code [val = …]}: a literal inside the attribute brackets. */ ATTRIBUTE
    }

    /** One parameter: MIL name, kind, whether it is required, and its default (null: absent, or an op-specific default). */
    public record Param(String name, Kind kind, boolean required, Literal defaultValue) {}

    @FunctionalInterface
    interface Inference { List<TensorType> infer(Call call); }

    private final String milName;
    private final Opset opset;
    private final Inference inference;
    private final Map<String, Param> params = new LinkedHashMap<>();

    Op(String milName, Opset opset, Inference inference, Param... params) {
        this.milName = milName;
        this.opset = opset;
        this.inference = inference;
        for (Param p : params) this.params.put(p.name(), p);
    }

    public String milName() { return milName; }

    /** The opset that introduced the op; programs using it need at least this opset. */
    public Opset opset() { return opset; }

    public Map<String, Param> params() { return params; }

    public Param param(String name) { return params.get(name); }

    public static Op fromMilName(String name) {
        for (Op op : values()) if (op.milName.equals(name)) return op;
        return null;
    }

    /**
     * Checks the arguments of a call and infers its output types.
     * @throws MilException {@code [op] …} naming the parameter and the problem
     */
    public List<TensorType> infer(Map<String, Arg> inputs, Map<String, Literal> attributes) {
        for (var e : inputs.entrySet()) {
            Param p = params.get(e.getKey());
            if (p == null || p.kind() == Kind.ATTRIBUTE) throw err("unknown parameter '%s' (parameters: %s)", e.getKey(), paramList());
            switch (p.kind()) {
                case TUPLE -> { if (!(e.getValue() instanceof Arg.Tuple)) throw err("'%s' must be a tuple of values, e.g. %s=(a, b)", p.name(), p.name()); }
                case CONST -> {
                    if (literalOrNull(e.getValue()) == null)
                        throw err("'%s' must be a constant (a const value or a literal), found the runtime value '%s'", p.name(), e.getValue());
                }
                default -> { if (e.getValue() instanceof Arg.Tuple) throw err("'%s' takes one value, not a tuple", p.name()); }
            }
        }
        for (var e : attributes.keySet()) {
            Param p = params.get(e);
            if (p == null || p.kind() != Kind.ATTRIBUTE) throw err("unknown attribute '%s'", e);
        }
        for (Param p : params.values()) {
            boolean present = p.kind() == Kind.ATTRIBUTE ? attributes.containsKey(p.name()) : inputs.containsKey(p.name());
            if (p.required() && !present) throw err("missing required %s '%s'", p.kind() == Kind.ATTRIBUTE ? "attribute" : "parameter", p.name());
        }
        return inference.infer(new Call(this, inputs, attributes));
    }

    private String paramList() {
        return String.join(", ", params.values().stream().filter(p -> p.kind() != Kind.ATTRIBUTE).map(Param::name).toList());
    }

    MilException err(String format, Object... args) { return MilException.of(milName, format, args); }

    static Literal literalOf(Op op, Map<String, Arg> inputs, Map<String, Literal> attributes, String param) {
        Param p = op.params.get(param);
        if (p == null) throw op.err("no parameter '%s'", param);
        if (p.kind() == Kind.ATTRIBUTE) {
            Literal l = attributes.get(param);
            return l != null ? l : p.defaultValue();
        }
        Arg a = inputs.get(param);
        if (a == null) return p.defaultValue();
        Literal l = literalOrNull(a);
        if (l == null) throw op.err("'%s' must be a constant", param);
        return l;
    }

    private static Literal literalOrNull(Arg a) {
        return switch (a) {
            case Arg.Inline i -> i.literal();
            case Arg.Ref r -> r.value().constant();
            case Arg.Tuple t -> null;
        };
    }

    // ---------------------------------------------------------------------------------------------------------------
    // parameter constructors

    private static Param tensor(String n) { return new Param(n, Kind.TENSOR, true, null); }
    private static Param optTensor(String n) { return new Param(n, Kind.TENSOR, false, null); }
    private static Param constant(String n) { return new Param(n, Kind.CONST, true, null); }
    private static Param optConst(String n, Literal def) { return new Param(n, Kind.CONST, false, def); }
    private static Param tuple(String n) { return new Param(n, Kind.TUPLE, true, null); }
    private static Param attribute(String n) { return new Param(n, Kind.ATTRIBUTE, true, null); }

    /** The arguments of one call, as seen by the inference functions. */
    static final class Call {
        final Op op;
        final Map<String, Arg> inputs;
        final Map<String, Literal> attributes;

        Call(Op op, Map<String, Arg> inputs, Map<String, Literal> attributes) {
            this.op = op;
            this.inputs = inputs;
            this.attributes = attributes;
        }

        boolean has(String p) { return inputs.containsKey(p) || attributes.containsKey(p); }

        TensorType type(String p) {
            Arg a = inputs.get(p);
            return switch (a) {
                case null -> null;
                case Arg.Ref r -> r.value().type();
                case Arg.Inline i -> i.literal().type();
                case Arg.Tuple t -> throw op.err("'%s' is a tuple", p);
            };
        }

        List<TensorType> tupleTypes(String p) {
            if (!(inputs.get(p) instanceof Arg.Tuple t)) throw op.err("'%s' must be a tuple", p);
            return t.values().stream().map(Value::type).toList();
        }

        Literal literal(String p) { return literalOf(op, inputs, attributes, p); }

        int[] ints(String p) {
            Literal l = literal(p);
            if (l == null) return null;
            if (l.dtype() != DType.INT32 || l.type().rank() > 1) throw op.err("'%s' must be an int32 scalar or vector, found %s", p, l.type());
            return l.toInts();
        }

        int integer(String p) {
            Literal l = literal(p);
            if (l == null || l.dtype() != DType.INT32 || !l.type().isScalar()) throw op.err("'%s' must be an int32 scalar, found %s", p, l == null ? "nothing" : l.type());
            return l.intValue();
        }

        boolean bool(String p) {
            Literal l = literal(p);
            if (l == null || l.dtype() != DType.BOOL || !l.type().isScalar()) throw op.err("'%s' must be a bool scalar, found %s", p, l == null ? "nothing" : l.type());
            return l.boolValue();
        }

        String string(String p) {
            Literal l = literal(p);
            if (l == null || l.dtype() != DType.STRING || !l.type().isScalar()) throw op.err("'%s' must be a string scalar, found %s", p, l == null ? "nothing" : l.type());
            return l.stringValue();
        }

        MilException err(String format, Object... args) { return op.err(format, args); }

        void requireFloat(String p) {
            TensorType t = type(p);
            if (!t.dtype().isFloat()) throw err("%s must be fp16 or fp32, found %s", p, t.dtype());
        }

        int axis(String p, int axis, int rank) {
            Integer a = Shapes.axis(axis, rank);
            if (a == null) throw err("%s %d is out of range for rank %d (valid: %d..%d)", p, axis, rank, -rank, rank - 1);
            return a;
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // inference, one function per op family

    private static List<TensorType> inferBinary(Call c) {
        TensorType x = c.type("x"), y = c.type("y");
        if (x.dtype() != y.dtype()) throw c.err("x is %s but y is %s: both operands must have the same dtype (insert a cast)", x.dtype(), y.dtype());
        if (!(x.dtype().isFloat() || x.dtype() == DType.INT32)) throw c.err("x is %s: expected fp16, fp32 or int32", x.dtype());
        int[] out = Shapes.broadcast(x.shape(), y.shape());
        if (out == null) throw c.err("x is %s but y is %s: shapes do not broadcast", Shapes.str(x.shape()), Shapes.str(y.shape()));
        return List.of(new TensorType(x.dtype(), out));
    }

    private static List<TensorType> inferBinaryFloat(Call c) {
        c.requireFloat("x");
        return inferBinary(c);
    }

    private static List<TensorType> inferUnaryFloat(Call c) {
        c.requireFloat("x");
        if (c.has("epsilon") && !c.literal("epsilon").dtype().isFloat()) throw c.err("epsilon must be a float scalar");
        return List.of(c.type("x"));
    }

    private static List<TensorType> inferReduce(Call c) {
        TensorType x = c.type("x");
        boolean keep = c.bool("keep_dims");
        int[] axes = c.ints("axes");
        boolean[] reduced = new boolean[x.rank()];
        if (axes == null) Arrays.fill(reduced, true);
        else for (int a : axes) {
            int r = c.axis("axes", a, x.rank());
            if (reduced[r]) throw c.err("axis %d appears twice in axes %s", a, Arrays.toString(axes));
            reduced[r] = true;
        }
        List<Integer> dims = new ArrayList<>();
        for (int i = 0; i < x.rank(); i++) {
            if (!reduced[i]) dims.add(x.shape()[i]);
            else if (keep) dims.add(1);
        }
        return List.of(new TensorType(x.dtype(), dims.stream().mapToInt(Integer::intValue).toArray()));
    }

    private static List<TensorType> inferSoftmax(Call c) {
        c.requireFloat("x");
        TensorType x = c.type("x");
        c.axis("axis", c.integer("axis"), x.rank());
        return List.of(x);
    }

    private static List<TensorType> inferReshape(Call c) {
        TensorType x = c.type("x");
        int[] shape = c.ints("shape");
        if (c.literal("shape").type().rank() != 1) throw c.err("shape must be an int32 vector");
        int infer = -1;
        long known = 1;
        shape = shape.clone();
        for (int i = 0; i < shape.length; i++) {
            if (shape[i] == 0) {
                // 0 copies the dimension of x aligned from the right (same position when ranks match), 1 past x's rank
                // (coremltools iOS17 reshape)
                int src = i + x.rank() - shape.length;
                shape[i] = src >= 0 && src < x.rank() ? x.shape()[src] : 1;
            }
            if (shape[i] == -1) {
                if (infer >= 0) throw c.err("shape %s has more than one -1", Arrays.toString(shape));
                infer = i;
            } else if (shape[i] <= 0) {
                throw c.err("shape %s has dimension %d: dimensions must be positive (or one -1, or 0 to copy)", Arrays.toString(shape), shape[i]);
            } else known *= shape[i];
        }
        int[] out = shape.clone();
        if (infer >= 0) {
            if (x.count() % known != 0) throw c.err("cannot infer -1 in %s for %d elements of %s", Arrays.toString(shape), x.count(), x);
            out[infer] = (int) (x.count() / known);
        }
        if (Shapes.count(out) != x.count())
            throw c.err("x is %s (%d elements) but shape %s has %d elements", Shapes.str(x.shape()), x.count(), Shapes.str(out), Shapes.count(out));
        return List.of(x.withShape(out));
    }

    private static List<TensorType> inferTranspose(Call c) {
        TensorType x = c.type("x");
        int[] perm = c.ints("perm");
        if (perm.length != x.rank()) throw c.err("perm %s has %d entries but x has rank %d", Arrays.toString(perm), perm.length, x.rank());
        boolean[] seen = new boolean[perm.length];
        int[] out = new int[perm.length];
        for (int i = 0; i < perm.length; i++) {
            int p = c.axis("perm entry", perm[i], x.rank());
            if (seen[p]) throw c.err("perm %s is not a permutation", Arrays.toString(perm));
            seen[p] = true;
            out[i] = x.shape()[p];
        }
        return List.of(x.withShape(out));
    }

    private static List<TensorType> inferSliceBySize(Call c) {
        TensorType x = c.type("x");
        int[] begin = c.ints("begin"), size = c.ints("size");
        if (begin.length != x.rank() || size.length != x.rank())
            throw c.err("begin %s and size %s must both have %d entries (the rank of x %s)", Arrays.toString(begin), Arrays.toString(size), x.rank(), Shapes.str(x.shape()));
        int[] out = new int[x.rank()];
        for (int i = 0; i < x.rank(); i++) {
            int d = x.shape()[i];
            int b = begin[i] < 0 ? begin[i] + d : begin[i];
            int s = size[i] == -1 ? d - b : size[i];
            if (b < 0 || b >= d || s <= 0 || b + s > d)
                throw c.err("axis %d: begin %d size %d is outside x %s (dimension %d)", i, begin[i], size[i], Shapes.str(x.shape()), d);
            out[i] = s;
        }
        return List.of(x.withShape(out));
    }

    private static List<TensorType> inferConcat(Call c) {
        List<TensorType> ts = c.tupleTypes("values");
        if (ts.isEmpty()) throw c.err("values is empty");
        TensorType first = ts.get(0);
        int axis = c.axis("axis", c.integer("axis"), first.rank());
        boolean interleave = c.bool("interleave");
        int total = 0;
        for (int k = 0; k < ts.size(); k++) {
            TensorType t = ts.get(k);
            if (t.dtype() != first.dtype()) throw c.err("values[%d] is %s but values[0] is %s", k, t.dtype(), first.dtype());
            if (t.rank() != first.rank()) throw c.err("values[%d] has rank %d but values[0] has rank %d", k, t.rank(), first.rank());
            for (int i = 0; i < t.rank(); i++)
                if (i != axis && t.shape()[i] != first.shape()[i])
                    throw c.err("values[%d] is %s but values[0] is %s: dimensions other than axis %d must match", k, Shapes.str(t.shape()), Shapes.str(first.shape()), axis);
            if (interleave && t.shape()[axis] != first.shape()[axis]) throw c.err("interleave needs equal sizes along axis %d", axis);
            total += t.shape()[axis];
        }
        int[] out = first.shape();
        out[axis] = total;
        return List.of(first.withShape(out));
    }

    private static List<TensorType> inferSplit(Call c) {
        TensorType x = c.type("x");
        int axis = c.axis("axis", c.integer("axis"), x.rank());
        int d = x.shape()[axis];
        int[] sizes;
        if (!c.has("split_sizes") && !c.has("num_splits")) throw c.err("give num_splits or split_sizes");
        if (c.has("split_sizes") && c.has("num_splits") && c.ints("split_sizes").length != c.integer("num_splits"))
            throw c.err("num_splits %d but split_sizes %s has %d entries", c.integer("num_splits"), Arrays.toString(c.ints("split_sizes")), c.ints("split_sizes").length);
        if (!c.has("split_sizes")) {
            int n = c.integer("num_splits");
            if (n <= 0 || d % n != 0) throw c.err("num_splits %d does not divide dimension %d of axis %d", n, d, axis);
            sizes = new int[n];
            Arrays.fill(sizes, d / n);
        } else {
            sizes = c.ints("split_sizes");
            if (Arrays.stream(sizes).sum() != d || Arrays.stream(sizes).anyMatch(s -> s <= 0))
                throw c.err("split_sizes %s must be positive and sum to %d (axis %d of %s)", Arrays.toString(sizes), d, axis, Shapes.str(x.shape()));
        }
        List<TensorType> outs = new ArrayList<>();
        for (int s : sizes) {
            int[] sh = x.shape();
            sh[axis] = s;
            outs.add(x.withShape(sh));
        }
        return outs;
    }

    private static List<TensorType> inferCast(Call c) {
        String name = c.string("dtype");
        DType t = DType.fromMilName(name);
        if (t == null || t == DType.STRING || t == DType.UINT64)
            throw c.err("dtype '%s' is not a cast target (fp16, fp32, int32, int16, int8, uint8, bool)", name);
        return List.of(c.type("x").withDType(t));
    }

    private static List<TensorType> inferSelect(Call c) {
        TensorType cond = c.type("cond"), a = c.type("a"), b = c.type("b");
        if (cond.dtype() != DType.BOOL) throw c.err("cond must be bool, found %s", cond.dtype());
        if (a.dtype() != b.dtype()) throw c.err("a is %s but b is %s", a.dtype(), b.dtype());
        int[] ab = Shapes.broadcast(a.shape(), b.shape());
        int[] out = ab == null ? null : Shapes.broadcast(cond.shape(), ab);
        if (out == null) throw c.err("cond %s, a %s and b %s do not broadcast", Shapes.str(cond.shape()), Shapes.str(a.shape()), Shapes.str(b.shape()));
        return List.of(new TensorType(a.dtype(), out));
    }

    private static List<TensorType> inferAffineDequantize(Call c) {
        Literal q = c.literal("quantized_data"), zp = c.literal("zero_point"), scale = c.literal("scale");
        int axis = c.integer("axis");
        TensorType qt = q.type();
        if (qt.dtype() != DType.INT8 && qt.dtype() != DType.UINT8) throw c.err("quantized_data must be int8 or uint8, found %s", qt.dtype());
        if (zp.dtype() != qt.dtype() && !zp.dtype().isFloat()) throw c.err("zero_point is %s: expected %s (or a float)", zp.dtype(), qt.dtype());
        if (!scale.dtype().isFloat()) throw c.err("scale must be fp16 or fp32, found %s", scale.dtype());
        int a = c.axis("axis", axis, qt.rank());
        checkPerAxis(c, "scale", scale.type(), qt.shape()[a]);
        checkPerAxis(c, "zero_point", zp.type(), qt.shape()[a]);
        return List.of(qt.withDType(scale.dtype()));
    }

    private static void checkPerAxis(Call c, String name, TensorType t, int dim) {
        if (t.isScalar()) return;
        if (t.rank() != 1 || t.shape()[0] != dim) throw c.err("%s is %s: expected a scalar or a vector of %d (the size of axis)", name, t, dim);
    }

    private static List<TensorType> inferQuantize(Call c) {
        c.requireFloat("input");
        TensorType in = c.type("input");
        String od = c.string("output_dtype");
        DType out = DType.fromMilName(od);
        if (out != DType.INT8 && out != DType.UINT8) throw c.err("output_dtype '%s' must be int8 or uint8", od);
        checkQuantParams(c, in, out);
        return List.of(in.withDType(out));
    }

    private static List<TensorType> inferDequantize(Call c) {
        TensorType in = c.type("input");
        if (in.dtype() != DType.INT8 && in.dtype() != DType.UINT8) throw c.err("input must be int8 or uint8, found %s", in.dtype());
        Literal scale = c.literal("scale");
        checkQuantParams(c, in, in.dtype());
        return List.of(in.withDType(scale.dtype()));
    }

    private static void checkQuantParams(Call c, TensorType in, DType quantized) {
        Literal scale = c.literal("scale"), zp = c.literal("zero_point");
        if (!scale.dtype().isFloat()) throw c.err("scale must be fp16 or fp32, found %s", scale.dtype());
        if (zp != null && zp.dtype() != quantized) throw c.err("zero_point is %s but the quantized type is %s", zp.dtype(), quantized);
        boolean perAxis = !scale.type().isScalar() || (zp != null && !zp.type().isScalar());
        if (perAxis) {
            if (!c.has("axis")) throw c.err("per-channel scale or zero_point needs axis");
            int a = c.axis("axis", c.integer("axis"), in.rank());
            checkPerAxis(c, "scale", scale.type(), in.shape()[a]);
            if (zp != null) checkPerAxis(c, "zero_point", zp.type(), in.shape()[a]);
        }
    }

    private static List<TensorType> inferSdpa(Call c) {
        c.requireFloat("query");
        TensorType q = c.type("query"), k = c.type("key"), v = c.type("value");
        if (q.rank() < 3) throw c.err("query is %s: expected rank 3 or more ([batch…, L, E])", Shapes.str(q.shape()));
        if (k.rank() != q.rank() || v.rank() != q.rank()) throw c.err("query, key and value must have the same rank");
        if (k.dtype() != q.dtype() || v.dtype() != q.dtype()) throw c.err("query, key and value must have the same dtype");
        int e = q.dim(-1);
        if (k.dim(-1) != e) throw c.err("query is %s but key is %s: embedding sizes %d and %d differ", Shapes.str(q.shape()), Shapes.str(k.shape()), e, k.dim(-1));
        if (k.dim(-2) != v.dim(-2)) throw c.err("key is %s but value is %s: sequence lengths differ", Shapes.str(k.shape()), Shapes.str(v.shape()));
        int[] qb = Arrays.copyOf(q.shape(), q.rank() - 2), kb = Arrays.copyOf(k.shape(), k.rank() - 2), vb = Arrays.copyOf(v.shape(), v.rank() - 2);
        if (!Arrays.equals(qb, kb) || !Arrays.equals(qb, vb)) throw c.err("batch dimensions of query %s, key %s and value %s differ", Shapes.str(q.shape()), Shapes.str(k.shape()), Shapes.str(v.shape()));
        TensorType m = c.type("attn_mask");
        if (m != null) {
            if (m.dtype() != DType.BOOL && m.dtype() != q.dtype()) throw c.err("attn_mask must be bool or %s, found %s", q.dtype(), m.dtype());
            int[] scores = q.shape();
            scores[q.rank() - 1] = k.dim(-2);
            int[] b = Shapes.broadcast(m.shape(), scores);
            if (b == null || !Arrays.equals(b, scores)) throw c.err("attn_mask %s does not broadcast to the scores %s", Shapes.str(m.shape()), Shapes.str(scores));
        }
        int[] out = q.shape();
        out[q.rank() - 1] = v.dim(-1);
        return List.of(q.withShape(out));
    }

    private static List<TensorType> inferLayerNorm(Call c) {
        c.requireFloat("x");
        TensorType x = c.type("x");
        int[] axes = c.ints("axes");
        if (axes == null) { axes = new int[x.rank()]; for (int i = 0; i < axes.length; i++) axes[i] = i; }
        int[] normShape = new int[axes.length];
        for (int i = 0; i < axes.length; i++) normShape[i] = x.shape()[c.axis("axes", axes[i], x.rank())];
        for (String p : new String[] {"gamma", "beta"}) {
            Literal l = c.literal(p);
            if (l != null && !Arrays.equals(l.type().shape(), normShape))
                throw c.err("%s is %s but the normalized shape is %s", p, Shapes.str(l.type().shape()), Shapes.str(normShape));
        }
        return List.of(x);
    }

    private static List<TensorType> inferGather(Call c) {
        TensorType x = c.type("x"), idx = c.type("indices");
        if (idx.dtype() != DType.INT32 && idx.dtype() != DType.INT16 && idx.dtype() != DType.INT8 && idx.dtype() != DType.UINT8)
            throw c.err("indices must be an integer tensor, found %s", idx.dtype());
        int axis = c.axis("axis", c.integer("axis"), x.rank());
        int batchDims = c.integer("batch_dims");
        if (batchDims < 0 || batchDims > axis || batchDims > idx.rank())
            throw c.err("batch_dims %d must be between 0 and min(axis %d, rank of indices %d)", batchDims, axis, idx.rank());
        for (int i = 0; i < batchDims; i++)
            if (x.shape()[i] != idx.shape()[i])
                throw c.err("batch_dims %d: x %s and indices %s differ in dimension %d", batchDims, Shapes.str(x.shape()), Shapes.str(idx.shape()), i);
        // x.shape[:axis] + indices.shape[batch_dims:] + x.shape[axis+1:]
        int[] out = new int[x.rank() - 1 + idx.rank() - batchDims];
        int o = 0;
        for (int i = 0; i < axis; i++) out[o++] = x.shape()[i];
        for (int i = batchDims; i < idx.rank(); i++) out[o++] = idx.shape()[i];
        for (int i = axis + 1; i < x.rank(); i++) out[o++] = x.shape()[i];
        return List.of(x.withShape(out));
    }

    private static List<TensorType> inferGelu(Call c) {
        c.requireFloat("x");
        String mode = c.string("mode");
        if (!mode.equals("EXACT") && !mode.equals("TANH_APPROXIMATION") && !mode.equals("SIGMOID_APPROXIMATION"))
            throw c.err("mode '%s' is not one of EXACT, TANH_APPROXIMATION, SIGMOID_APPROXIMATION", mode);
        return List.of(c.type("x"));
    }

    private static List<TensorType> inferCompare(Call c) {
        return List.of(inferBinary(c).get(0).withDType(DType.BOOL));
    }

    private static List<TensorType> inferTile(Call c) {
        TensorType x = c.type("x");
        int[] reps = c.ints("reps");
        if (reps.length != x.rank()) throw c.err("reps %s has %d entries but x %s has rank %d", Arrays.toString(reps), reps.length, Shapes.str(x.shape()), x.rank());
        int[] out = x.shape();
        for (int i = 0; i < reps.length; i++) {
            if (reps[i] <= 0) throw c.err("reps %s must be positive", Arrays.toString(reps));
            out[i] *= reps[i];
        }
        return List.of(x.withShape(out));
    }

    /** linear: y = x · weightᵀ + bias, x [*, D_in], weight [D_out, D_in], bias [D_out]. */
    private static List<TensorType> inferLinear(Call c) {
        c.requireFloat("x");
        TensorType x = c.type("x"), w = c.type("weight"), b = c.type("bias");
        if (x.rank() < 1) throw c.err("x must have rank 1 or more");
        if (w.rank() != 2 || w.dim(1) != x.dim(-1))
            throw c.err("x is %s but weight is %s: weight must be [D_out, %d]", Shapes.str(x.shape()), Shapes.str(w.shape()), x.dim(-1));
        if (w.dtype() != x.dtype()) throw c.err("x is %s but weight is %s", x.dtype(), w.dtype());
        if (b != null && (b.rank() != 1 || b.dim(0) != w.dim(0) || b.dtype() != x.dtype()))
            throw c.err("bias is %s: expected %s[%d]", b, x.dtype(), w.dim(0));
        int[] out = x.shape();
        out[out.length - 1] = w.dim(0);
        return List.of(x.withShape(out));
    }

    /** avg_pool, max_pool over the spatial dims of x [N, C, *spatial]; padding as conv's (pad_type valid, same, same_lower, custom). */
    private static List<TensorType> inferPool(Call c) {
        c.requireFloat("x");
        TensorType x = c.type("x");
        int spatial = x.rank() - 2;
        if (spatial < 1 || spatial > 3) throw c.err("x is %s: expected [N, C, *spatial] with 1 to 3 spatial dims", Shapes.str(x.shape()));
        int[] k = c.ints("kernel_sizes");
        int[] s = orOnes(c.ints("strides"), spatial);
        if (k.length != spatial || s.length != spatial) throw c.err("kernel_sizes and strides need %d entries (one per spatial dim)", spatial);
        if (c.bool("ceil_mode")) throw c.err("ceil_mode=true is not supported; pad the input instead");
        int[] pad = c.ints("pad");
        if (pad == null) pad = new int[2 * spatial];
        if (pad.length != 2 * spatial) throw c.err("pad needs %d entries (before and after for each spatial dim), found %d", 2 * spatial, pad.length);
        String padType = c.string("pad_type");
        int[] out = x.shape();
        for (int i = 0; i < spatial; i++) {
            int in = x.shape()[2 + i];
            if (k[i] <= 0 || s[i] <= 0) throw c.err("kernel_sizes and strides must be positive");
            int o = switch (padType) {
                case "valid" -> (in - k[i]) / s[i] + 1;
                case "same", "same_lower" -> (in + s[i] - 1) / s[i];
                case "custom" -> (in + pad[2 * i] + pad[2 * i + 1] - k[i]) / s[i] + 1;
                default -> throw c.err("pad_type '%s' is not one of valid, same, same_lower, custom", padType);
            };
            if (o <= 0) throw c.err("kernel %s does not fit spatial dim %d of x %s", Arrays.toString(k), in, Shapes.str(x.shape()));
            out[2 + i] = o;
        }
        return List.of(x.withShape(out));
    }

    private static List<TensorType> inferConv(Call c) {
        c.requireFloat("x");
        TensorType x = c.type("x"), w = c.type("weight");
        int spatial = x.rank() - 2;
        if (spatial < 1 || spatial > 3) throw c.err("x is %s: expected [N, C, *spatial] with 1 to 3 spatial dims", Shapes.str(x.shape()));
        if (w.rank() != x.rank()) throw c.err("weight is %s but x is %s: weight must be [C_out, C_in/groups, *kernel]", Shapes.str(w.shape()), Shapes.str(x.shape()));
        if (w.dtype() != x.dtype()) throw c.err("x is %s but weight is %s", x.dtype(), w.dtype());
        int groups = c.integer("groups");
        int cin = x.shape()[1], cout = w.shape()[0];
        if (groups <= 0 || cin % groups != 0 || cout % groups != 0) throw c.err("groups %d must divide C_in %d and C_out %d", groups, cin, cout);
        if (w.shape()[1] * groups != cin)
            throw c.err("x has %d channels but weight %s expects %d (weight[1] %d × groups %d)", cin, Shapes.str(w.shape()), w.shape()[1] * groups, w.shape()[1], groups);
        TensorType bias = c.type("bias");
        if (bias != null && (bias.rank() != 1 || bias.shape()[0] != cout)) throw c.err("bias is %s: expected [%d]", Shapes.str(bias.shape()), cout);
        int[] strides = orOnes(c.ints("strides"), spatial), dil = orOnes(c.ints("dilations"), spatial);
        if (strides.length != spatial || dil.length != spatial) throw c.err("strides and dilations need %d entries", spatial);
        String padType = c.string("pad_type");
        int[] pad = c.ints("pad");
        if (pad == null) pad = new int[2 * spatial];
        if (pad.length != 2 * spatial) throw c.err("pad needs %d entries (before and after for each spatial dim), found %d", 2 * spatial, pad.length);
        int[] out = new int[x.rank()];
        out[0] = x.shape()[0];
        out[1] = cout;
        for (int i = 0; i < spatial; i++) {
            int in = x.shape()[2 + i], k = w.shape()[2 + i], s = strides[i], dl = dil[i];
            if (s <= 0 || dl <= 0) throw c.err("strides and dilations must be positive");
            int eff = dl * (k - 1) + 1;
            int o = switch (padType) {
                case "valid" -> (in - eff) / s + 1;
                case "same", "same_lower" -> (in + s - 1) / s;
                case "custom" -> (in + pad[2 * i] + pad[2 * i + 1] - eff) / s + 1;
                default -> throw c.err("pad_type '%s' is not one of valid, same, same_lower, custom", padType);
            };
            if (o <= 0) throw c.err("kernel %s (dilated %d) does not fit spatial dim %d of x %s", Shapes.str(w.shape()), eff, in, Shapes.str(x.shape()));
            out[2 + i] = o;
        }
        return List.of(x.withShape(out));
    }

    private static int[] orOnes(int[] v, int n) {
        if (v != null) return v;
        int[] ones = new int[n];
        Arrays.fill(ones, 1);
        return ones;
    }

    private static List<TensorType> inferMatmul(Call c) {
        TensorType x = c.type("x"), y = c.type("y");
        if (!x.dtype().isFloat() && x.dtype() != DType.INT32) throw c.err("x must be fp16, fp32 or int32, found %s", x.dtype());
        if (x.dtype() != y.dtype()) throw c.err("x is %s but y is %s", x.dtype(), y.dtype());
        boolean tx = c.bool("transpose_x"), ty = c.bool("transpose_y");
        int[] xs = x.shape(), ys = y.shape();
        if (xs.length == 0 || ys.length == 0) throw c.err("x and y must have rank 1 or more");
        // numpy rules: a rank-1 x is [1,K], a rank-1 y is [K,1]; the added dims are dropped from the result
        int[] xm = xs.length == 1 ? new int[] {1, xs[0]} : xs, ym = ys.length == 1 ? new int[] {ys[0], 1} : ys;
        int m = tx && xs.length > 1 ? xm[xm.length - 1] : xm[xm.length - 2];
        int kx = tx && xs.length > 1 ? xm[xm.length - 2] : xm[xm.length - 1];
        int ky = ty && ys.length > 1 ? ym[ym.length - 1] : ym[ym.length - 2];
        int n = ty && ys.length > 1 ? ym[ym.length - 2] : ym[ym.length - 1];
        if (kx != ky)
            throw c.err("x is %s but y is %s: inner dimensions %d and %d differ%s", Shapes.str(xs), Shapes.str(ys), kx, ky,
                    tx || ty ? " (transpose_x=" + tx + ", transpose_y=" + ty + ")" : "");
        int[] batch = Shapes.broadcast(Arrays.copyOf(xm, xm.length - 2), Arrays.copyOf(ym, ym.length - 2));
        if (batch == null) throw c.err("x is %s but y is %s: batch dimensions do not broadcast", Shapes.str(xs), Shapes.str(ys));
        List<Integer> out = new ArrayList<>();
        for (int b : batch) out.add(b);
        if (xs.length > 1) out.add(m);
        if (ys.length > 1) out.add(n);
        return List.of(x.withShape(out.stream().mapToInt(Integer::intValue).toArray()));
    }
}
