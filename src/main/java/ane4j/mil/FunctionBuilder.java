package ane4j.mil;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Adds inputs, constants, weights and ops to one function. Every op method checks its arguments and infers the output
 * type at once (errors read {@code [matmul] x is [1,12,256,64] but y is [1,12,32,64]: inner dimensions 64 and 32 differ}).
 * Values are named automatically ({@code matmul_3}); {@link #named(String, Value)} renames the one just made. Parameters that MIL wants as
 * constants (axes, shapes, flags) are emitted as {@code const} ops, shared when equal.
 */
public final class FunctionBuilder {
    private final String name;
    private final Weights.Builder weights;
    private final String packedWeightFile;
    private final List<Value> inputs = new ArrayList<>();
    private final List<Operation> operations = new ArrayList<>();
    private final List<Value> outputs = new ArrayList<>();
    private final Set<String> names = new HashSet<>();
    private final Map<Literal, Value> sharedConsts = new HashMap<>();
    private int counter;

    FunctionBuilder(String name, Weights.Builder weights, String packedWeightFile) {
        if (!Value.isIdentifier(name)) throw new MilException("[mil] '" + name + "' is not a valid function name");
        this.name = name;
        this.weights = weights;
        this.packedWeightFile = packedWeightFile;
    }

    public String name() { return name; }

    // ---------------------------------------------------------------------------------------------------------------
    // inputs, outputs, names

    public Value input(String inputName, TensorType type) {
        if (!operations.isEmpty()) throw new MilException("[mil] input '" + inputName + "' declared after ops: declare all inputs first");
        if (type.isScalar()) throw new MilException("[mil] input '" + inputName + "' must be a tensor, not a scalar");
        Value v = new Value(claim(inputName), type);
        inputs.add(v);
        return v;
    }

    /** Declares the function's outputs (in order). */
    public void output(Value... values) {
        for (Value v : values) {
            if (!names.contains(v.name()) || find(v.name()) == null || !find(v.name()).equals(v))
                throw new MilException("[mil] output '" + v.name() + "' is not a value of function " + name);
            if (outputs.contains(v)) throw new MilException("[mil] output '" + v.name() + "' listed twice");
            outputs.add(v);
        }
    }

    /**
     * Renames {@code v}, the output of the op just added, to {@code valueName} (its SSA name and its {@code name=} label):
     * {@code var q = f.named("q", f.matmul(x, w));}
     */
    public Value named(String valueName, Value v) {
        Operation last = operations.isEmpty() ? null : operations.get(operations.size() - 1);
        if (last == null || last.outputs().size() != 1 || !last.output().equals(v))
            throw new MilException("[mil] named('" + valueName + "', " + v.name() + "): only the value of the op just added can be renamed");
        if (!Value.isIdentifier(valueName)) throw new MilException("[mil] '" + valueName + "' is not a valid MIL name");
        if (valueName.equals(v.name())) return v;
        if (names.contains(valueName)) throw new MilException("[mil] value name '" + valueName + "' is already defined in function " + name);
        names.remove(v.name());
        names.add(valueName);
        Value renamed = new Value(valueName, v.type(), v.constant());
        operations.set(operations.size() - 1, new Operation(last.op(), last.inputs(), last.attributes(), List.of(renamed), valueName));
        sharedConsts.values().removeIf(c -> c.equals(v));
        return renamed;
    }

    /** A {@code const} op called {@code valueName}. */
    public Value constant(String valueName, Literal literal) {
        return named(valueName, apply(Op.CONST, Map.of(), Map.of("val", literal)).get(0));
    }

    Function build() {
        if (inputs.isEmpty()) throw new MilException("[mil] function " + name + " has no inputs");
        if (outputs.isEmpty()) throw new MilException("[mil] function " + name + " has no outputs: call f.output(...)");
        return new Function(name, inputs, operations, outputs);
    }

    private String claim(String n) {
        if (!names.add(n)) throw new MilException("[mil] value name '" + n + "' is already defined in function " + name);
        return n;
    }

    private String nextName(String prefix) {
        String n;
        do n = prefix + "_" + counter++; while (names.contains(n));
        return claim(n);
    }

    private Value find(String n) {
        for (Value v : inputs) if (v.name().equals(n)) return v;
        for (Operation o : operations) for (Value v : o.outputs()) if (v.name().equals(n)) return v;
        return null;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // the generic op call: everything below goes through here (and so does the parser's equivalent)

    /** Adds an op call with explicit arguments; returns its outputs. */
    public List<Value> apply(Op op, Map<String, Arg> args, Map<String, Literal> attributes) {
        for (Arg a : args.values()) checkOwned(op, a);
        List<TensorType> types = op.infer(args, attributes);
        List<Value> outs = new ArrayList<>();
        Literal constant = op == Op.CONST ? attributes.get("val") : null;
        if (types.size() == 1) outs.add(new Value(nextName(op.milName()), types.get(0), constant));
        else {
            String base = nextName(op.milName());
            for (int i = 0; i < types.size(); i++) outs.add(new Value(i == 0 ? base : claim(base + "_" + i), types.get(i)));
        }
        operations.add(new Operation(op, args, attributes, outs, outs.get(0).name()));
        return outs;
    }

    private Value apply1(Op op, Map<String, Arg> args) { return apply(op, args, Map.of()).get(0); }

    private void checkOwned(Op op, Arg a) {
        List<Value> vs = switch (a) {
            case Arg.Ref r -> List.of(r.value());
            case Arg.Tuple t -> t.values();
            case Arg.Inline i -> List.of();
        };
        for (Value v : vs) {
            Value mine = find(v.name());
            if (mine == null || !mine.equals(v)) throw MilException.of(op.milName(), "value '%s' does not belong to function %s", v.name(), name);
        }
    }

    private static Map<String, Arg> args(Object... kv) {
        Map<String, Arg> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) if (kv[i + 1] != null) m.put((String) kv[i], Arg.of((Value) kv[i + 1]));
        return m;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // constants and weights

    /** A {@code const} op holding {@code literal}; unnamed constants with equal values are shared. */
    public Value constant(Literal literal) {
        Value shared = sharedConsts.get(literal);
        if (shared != null) return shared;
        Value v = apply(Op.CONST, Map.of(), Map.of("val", literal)).get(0);
        sharedConsts.put(literal, v);
        return v;
    }

    public Value fp16(float v) { return constant(Literal.fp16(v)); }
    public Value fp32(float v) { return constant(Literal.fp32(v)); }
    public Value int32(int v) { return constant(Literal.int32(v)); }
    public Value bool(boolean v) { return constant(Literal.bool(v)); }
    public Value string(String v) { return constant(Literal.string(v)); }
    public Value ints(int... v) { return constant(Literal.int32s(v)); }

    /** A float scalar of {@code like}'s dtype (fp16 or fp32). */
    public Value scalar(Value like, float v) { return constant(like.dtype() == DType.FP32 ? Literal.fp32(v) : Literal.fp16(v)); }

    /** An inline constant tensor from floats (rounded to fp16 when {@code type} is fp16). */
    public Value tensor(TensorType type, float... data) { return constant(Literal.ofFloats(type, data)); }

    /**
     * A weight: a BLOBFILE constant whose data goes into {@code @model_path/weights/<valueName>.bin} (or the program's
     * packed file). fp16 weights are rounded to nearest even.
     */
    public Value weight(String valueName, TensorType type, float[] data) {
        return weight(valueName, type, encode(type, data), null);
    }

    /** A weight placed in {@code @model_path/weights/<file>} (several weights may share a file). */
    public Value weight(String valueName, TensorType type, float[] data, String file) {
        return weight(valueName, type, encode(type, data), file);
    }

    /** A weight with raw little-endian bytes of {@code type} (int8/uint8 data, or pre-encoded fp16). */
    public Value weight(String valueName, TensorType type, byte[] data, String file) {
        return constant(valueName, blobLiteral(valueName, type, data, file));
    }

    private Literal blobLiteral(String valueName, TensorType type, byte[] data, String file) {
        if (data.length != type.byteSize()) throw new MilException("[weight] " + valueName + ": " + type + " needs " + type.byteSize() + " bytes, got " + data.length);
        String f = file != null ? file : packedWeightFile != null ? packedWeightFile : valueName + ".bin";
        String path = Weights.MODEL_PATH + "weights/" + f;
        long offset = weights.add(path, type.dtype(), data);
        return Literal.blob(type, path, offset);
    }

    static byte[] encode(TensorType type, float[] data) {
        if (data.length != type.count()) throw new MilException("[weight] " + type + " needs " + type.count() + " values, got " + data.length);
        ByteBuffer b = ByteBuffer.allocate(Math.toIntExact(type.byteSize())).order(ByteOrder.LITTLE_ENDIAN);
        switch (type.dtype()) {
            case FP16 -> { for (float v : data) b.putShort(Fp16.fromFloat(v)); }
            case FP32 -> { for (float v : data) b.putFloat(v); }
            default -> throw new MilException("[weight] float data for a " + type.dtype() + " weight; pass bytes");
        }
        return b.array();
    }

    // ---------------------------------------------------------------------------------------------------------------
    // ops (names follow MIL: reduce_sum → reduceSum; parameters keep MIL's meaning)

    /** A 1x1 (or any) convolution with MIL's explicit defaults: pad_type valid, strides 1, pad 0, dilations 1, groups 1. */
    public Value conv(Value x, Value weight) {
        int spatial = Math.max(1, x.rank() - 2);
        int[] ones = new int[spatial];
        Arrays.fill(ones, 1);
        return conv(x, weight, null, ones, "valid", new int[2 * spatial], ones, 1);
    }

    public Value conv(Value x, Value weight, Value bias, int[] strides, String padType, int[] pad, int[] dilations, int groups) {
        Map<String, Arg> a = args("x", x, "weight", weight, "bias", bias);
        a.put("dilations", Arg.of(ints(dilations)));
        a.put("groups", Arg.of(int32(groups)));
        a.put("pad", Arg.of(ints(pad)));
        a.put("pad_type", Arg.of(string(padType)));
        a.put("strides", Arg.of(ints(strides)));
        return apply1(Op.CONV, a);
    }

    public Value matmul(Value x, Value y) { return matmul(x, y, false, false); }

    public Value matmul(Value x, Value y, boolean transposeX, boolean transposeY) {
        Map<String, Arg> a = args("x", x, "y", y);
        a.put("transpose_x", Arg.of(bool(transposeX)));
        a.put("transpose_y", Arg.of(bool(transposeY)));
        return apply1(Op.MATMUL, a);
    }

    public Value add(Value x, Value y) { return apply1(Op.ADD, args("x", x, "y", y)); }
    public Value sub(Value x, Value y) { return apply1(Op.SUB, args("x", x, "y", y)); }
    public Value mul(Value x, Value y) { return apply1(Op.MUL, args("x", x, "y", y)); }
    public Value realDiv(Value x, Value y) { return apply1(Op.REAL_DIV, args("x", x, "y", y)); }
    public Value pow(Value x, Value y) { return apply1(Op.POW, args("x", x, "y", y)); }

    /** x + c with c a scalar of x's dtype. */
    public Value add(Value x, float c) { return add(x, scalar(x, c)); }
    /** x · c with c a scalar of x's dtype. */
    public Value mul(Value x, float c) { return mul(x, scalar(x, c)); }
    /** x ^ c with c a scalar of x's dtype. */
    public Value pow(Value x, float c) { return pow(x, scalar(x, c)); }

    public Value rsqrt(Value x) { return apply1(Op.RSQRT, args("x", x)); }
    public Value sqrt(Value x) { return apply1(Op.SQRT, args("x", x)); }
    public Value exp(Value x) { return apply1(Op.EXP, args("x", x)); }
    public Value sigmoid(Value x) { return apply1(Op.SIGMOID, args("x", x)); }
    public Value silu(Value x) { return apply1(Op.SILU, args("x", x)); }
    public Value relu(Value x) { return apply1(Op.RELU, args("x", x)); }
    public Value tanh(Value x) { return apply1(Op.TANH, args("x", x)); }

    public Value reduceSum(Value x, boolean keepDims, int... axes) { return reduce(Op.REDUCE_SUM, x, keepDims, axes); }
    public Value reduceMean(Value x, boolean keepDims, int... axes) { return reduce(Op.REDUCE_MEAN, x, keepDims, axes); }
    public Value reduceMax(Value x, boolean keepDims, int... axes) { return reduce(Op.REDUCE_MAX, x, keepDims, axes); }

    private Value reduce(Op op, Value x, boolean keepDims, int[] axes) {
        Map<String, Arg> a = args("x", x);
        a.put("axes", Arg.of(ints(axes)));
        a.put("keep_dims", Arg.of(bool(keepDims)));
        return apply1(op, a);
    }

    public Value softmax(Value x, int axis) {
        Map<String, Arg> a = args("x", x);
        a.put("axis", Arg.of(int32(axis)));
        return apply1(Op.SOFTMAX, a);
    }

    public Value reshape(Value x, int... shape) {
        Map<String, Arg> a = args("x", x);
        a.put("shape", Arg.of(ints(shape)));
        return apply1(Op.RESHAPE, a);
    }

    public Value transpose(Value x, int... perm) {
        Map<String, Arg> a = args("x", x);
        a.put("perm", Arg.of(ints(perm)));
        return apply1(Op.TRANSPOSE, a);
    }

    public Value sliceBySize(Value x, int[] begin, int[] size) {
        Map<String, Arg> a = args("x", x);
        a.put("begin", Arg.of(ints(begin)));
        a.put("size", Arg.of(ints(size)));
        return apply1(Op.SLICE_BY_SIZE, a);
    }

    public Value concat(int axis, Value... values) { return concat(axis, false, values); }

    public Value concat(int axis, boolean interleave, Value... values) {
        Map<String, Arg> a = new LinkedHashMap<>();
        a.put("axis", Arg.of(int32(axis)));
        a.put("interleave", Arg.of(bool(interleave)));
        a.put("values", new Arg.Tuple(List.of(values)));
        return apply1(Op.CONCAT, a);
    }

    public List<Value> split(Value x, int axis, int numSplits) {
        Map<String, Arg> a = args("x", x);
        a.put("axis", Arg.of(int32(axis)));
        a.put("num_splits", Arg.of(int32(numSplits)));
        return apply(Op.SPLIT, a, Map.of());
    }

    public List<Value> splitSizes(Value x, int axis, int... sizes) {
        Map<String, Arg> a = args("x", x);
        a.put("axis", Arg.of(int32(axis)));
        a.put("split_sizes", Arg.of(ints(sizes)));
        return apply(Op.SPLIT, a, Map.of());
    }

    public Value cast(Value x, DType to) {
        Map<String, Arg> a = args("x", x);
        a.put("dtype", Arg.of(string(to.milName())));
        return apply1(Op.CAST, a);
    }

    public Value identity(Value x) { return apply1(Op.IDENTITY, args("x", x)); }

    public Value select(Value cond, Value a, Value b) { return apply1(Op.SELECT, args("cond", cond, "a", a, "b", b)); }

    /** An int8/uint8 weight dequantized at compile time: {@code (q − zero_point) · scale}, per tensor or per {@code axis}. */
    public Value constexprAffineDequantize(String valueName, TensorType quantizedType, byte[] quantized, Literal scale, Literal zeroPoint, int axis, String file) {
        Literal q = blobLiteral(valueName, quantizedType, quantized, file);
        return named(valueName, apply(Op.CONSTEXPR_AFFINE_DEQUANTIZE, Map.of(),
                Map.of("quantized_data", q, "scale", scale, "zero_point", zeroPoint, "axis", Literal.int32(axis))).get(0));
    }

    /** Per-tensor quantization to {@code to} (int8/uint8) with zero point 0. */
    public Value quantize(Value input, float scale, DType to) {
        Map<String, Arg> a = args("input", input);
        a.put("output_dtype", Arg.of(string(to.milName())));
        a.put("scale", Arg.of(scalar(input, scale)));
        return apply1(Op.QUANTIZE, a);
    }

    public Value quantize(Value input, Literal scale, Literal zeroPoint, Integer axis, DType to) {
        Map<String, Arg> a = args("input", input);
        a.put("output_dtype", Arg.of(string(to.milName())));
        a.put("scale", Arg.of(constant(scale)));
        if (zeroPoint != null) a.put("zero_point", Arg.of(constant(zeroPoint)));
        if (axis != null) a.put("axis", Arg.of(int32(axis)));
        return apply1(Op.QUANTIZE, a);
    }

    /** Per-tensor dequantization to fp16 with zero point 0. */
    public Value dequantize(Value input, float scale) {
        Map<String, Arg> a = args("input", input);
        a.put("scale", Arg.of(fp16(scale)));
        return apply1(Op.DEQUANTIZE, a);
    }

    public Value dequantize(Value input, Literal scale, Literal zeroPoint, Integer axis) {
        Map<String, Arg> a = args("input", input);
        a.put("scale", Arg.of(constant(scale)));
        if (zeroPoint != null) a.put("zero_point", Arg.of(constant(zeroPoint)));
        if (axis != null) a.put("axis", Arg.of(int32(axis)));
        return apply1(Op.DEQUANTIZE, a);
    }

    public Value scaledDotProductAttention(Value query, Value key, Value value) {
        return scaledDotProductAttention(query, key, value, null);
    }

    /** Note: the ANE ignores {@code attn_mask} (docs/ane-facts.md §5.5); build attention from matmul/softmax when it matters. */
    public Value scaledDotProductAttention(Value query, Value key, Value value, Value attnMask) {
        return apply1(Op.SCALED_DOT_PRODUCT_ATTENTION, args("query", query, "key", key, "value", value, "attn_mask", attnMask));
    }

    public Value layerNorm(Value x, int[] axes, Value gamma, Value beta, float epsilon) {
        Map<String, Arg> a = args("x", x, "gamma", gamma, "beta", beta);
        a.put("axes", Arg.of(ints(axes)));
        a.put("epsilon", Arg.of(scalar(x, epsilon)));
        return apply1(Op.LAYER_NORM, a);
    }

    public Value gather(Value x, Value indices, int axis) {
        Map<String, Arg> a = args("x", x, "indices", indices);
        a.put("axis", Arg.of(int32(axis)));
        return apply1(Op.GATHER, a);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // what small MLPs and CNNs need (issue 31): each is one MIL op, except the cross-entropy helpers, which are
    // compositions of ops (so their gradients follow from the ops' rules)

    /** y = log(x + epsilon), epsilon 1e-45 as coremltools (0 in fp16). */
    public Value log(Value x) { return apply1(Op.LOG, args("x", x)); }

    public Value erf(Value x) { return apply1(Op.ERF, args("x", x)); }

    /** gelu, EXACT: x·Φ(x) (PyTorch's default). */
    public Value gelu(Value x) { return gelu(x, "EXACT"); }

    /** gelu with mode EXACT, TANH_APPROXIMATION (PyTorch's approximate='tanh') or SIGMOID_APPROXIMATION (x·σ(1.702x)). */
    public Value gelu(Value x, String mode) {
        Map<String, Arg> a = args("x", x);
        a.put("mode", Arg.of(string(mode)));
        return apply1(Op.GELU, a);
    }

    public Value equal(Value x, Value y) { return apply1(Op.EQUAL, args("x", x, "y", y)); }
    public Value notEqual(Value x, Value y) { return apply1(Op.NOT_EQUAL, args("x", x, "y", y)); }
    public Value greater(Value x, Value y) { return apply1(Op.GREATER, args("x", x, "y", y)); }
    public Value greaterEqual(Value x, Value y) { return apply1(Op.GREATER_EQUAL, args("x", x, "y", y)); }
    public Value less(Value x, Value y) { return apply1(Op.LESS, args("x", x, "y", y)); }
    public Value lessEqual(Value x, Value y) { return apply1(Op.LESS_EQUAL, args("x", x, "y", y)); }

    /** x repeated reps[i] times along axis i. */
    public Value tile(Value x, int... reps) {
        Map<String, Arg> a = args("x", x);
        a.put("reps", Arg.of(ints(reps)));
        return apply1(Op.TILE, a);
    }

    /** y = x · weightᵀ + bias: x [*, D_in], weight [D_out, D_in] (PyTorch's nn.Linear layout), bias [D_out] or null. */
    public Value linear(Value x, Value weight, Value bias) { return apply1(Op.LINEAR, args("x", x, "weight", weight, "bias", bias)); }

    /** Average pooling over the spatial dims of x [N, C, *spatial], no padding (pad_type valid). */
    public Value avgPool(Value x, int[] kernelSizes, int[] strides) { return pool(Op.AVG_POOL, x, kernelSizes, strides, "valid", null); }

    /** Max pooling over the spatial dims of x [N, C, *spatial], no padding (pad_type valid). */
    public Value maxPool(Value x, int[] kernelSizes, int[] strides) { return pool(Op.MAX_POOL, x, kernelSizes, strides, "valid", null); }

    /** Pooling with explicit padding: pad_type valid, same, same_lower or custom (pad before/after per spatial dim). */
    public Value pool(Op op, Value x, int[] kernelSizes, int[] strides, String padType, int[] pad) {
        if (op != Op.AVG_POOL && op != Op.MAX_POOL) throw new MilException("[mil] pool takes avg_pool or max_pool, not " + op.milName());
        int spatial = Math.max(1, x.rank() - 2);
        Map<String, Arg> a = args("x", x);
        a.put("kernel_sizes", Arg.of(ints(kernelSizes)));
        a.put("strides", Arg.of(ints(strides)));
        a.put("pad_type", Arg.of(string(padType)));
        a.put("pad", Arg.of(ints(pad != null ? pad : new int[2 * spatial])));
        if (op == Op.AVG_POOL) a.put("exclude_padding_from_average", Arg.of(bool(false)));
        a.put("ceil_mode", Arg.of(bool(false)));
        return apply1(op, a);
    }

    /**
     * x, with no gradient flowing back through it (PyTorch's detach): an identity op named {@code stop_gradient_<n>}, the
     * name being how {@code Mil.grad} recognises it (MIL has no such op; the backends run it as identity).
     */
    public Value stopGradient(Value x) {
        Value v = identity(x);
        String n = "stop_gradient_" + v.name().substring(v.name().lastIndexOf('_') + 1);
        while (names.contains(n)) n = n + "_";
        return named(n, v);
    }

    /**
     * Mean cross-entropy of {@code logits} [N, V] against one-hot (or soft) {@code targets} [N, V], as a [1] tensor:
     * loss = −(1/N) Σ_n Σ_v targets[n,v] · log_softmax(logits)[n,v], log_softmax = z − log Σ exp(z), z = logits − max (the
     * max only keeps exp in range: its gradient would cancel, so it is a {@link #stopGradient}).
     */
    public Value crossEntropy(Value logits, Value targets) {
        if (logits.rank() != 2 || !Arrays.equals(logits.shape(), targets.shape()))
            throw new MilException("[cross_entropy] logits " + logits.type() + " and targets " + targets.type() + " must both be [N, V]");
        Value z = sub(logits, stopGradient(reduceMax(logits, true, -1)));        // (N, V)
        Value logSumExp = log(reduceSum(exp(z), true, -1));                      // (N, 1)
        Value logProbs = sub(z, logSumExp);                                      // (N, V)
        Value picked = reduceSum(mul(targets, logProbs), true, 0, 1);            // (1, 1)
        return mul(reshape(picked, 1), -1f / logits.shape()[0]);
    }

    /** Mean cross-entropy of {@code logits} [N, V] against class indices {@code labels} int32 [N] (one-hot through equal and cast). */
    public Value crossEntropyLabels(Value logits, Value labels) {
        if (logits.rank() != 2 || labels.rank() != 1 || labels.shape()[0] != logits.shape()[0] || labels.dtype() != DType.INT32)
            throw new MilException("[cross_entropy] logits " + logits.type() + " must be [N, V] and labels " + labels.type() + " int32 [N]");
        int v = logits.shape()[1];
        int[] classes = new int[v];
        for (int i = 0; i < v; i++) classes[i] = i;
        Value hot = equal(reshape(labels, labels.shape()[0], 1), constant(Literal.of(TensorType.of(DType.INT32, 1, v), classes)));
        return crossEntropy(logits, cast(hot, logits.dtype()));
    }
}
