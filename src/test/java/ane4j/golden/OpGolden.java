package ane4j.golden;

import ane4j.mil.DType;
import ane4j.mil.Fp16;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reader for the per-op golden vectors in {@code src/test/resources/golden/ops/<op>.json}, written by
 * {@code tools/gen_op_golden.py} (format in {@code tools/README.md}), and an llm.c-style tensor comparison.
 *
 * <pre>{@code
 * for (var c : OpGolden.load("add").cases()) {
 *     float[] y = run(c.input("x"), c.input("y"));   // the implementation under test
 *     OpGolden.checkTensor(c.id(), c.expected(0), y, c.atol(), c.rtol());
 * }
 * }</pre>
 */
public final class OpGolden {
    private OpGolden() {}

    /** Every MIL op with a golden file (docs/ane-facts.md §4.3 minus const). */
    public static final List<String> OPS = List.of(
            "conv", "matmul", "add", "sub", "mul", "real_div", "pow", "rsqrt", "sqrt", "exp",
            "reduce_sum", "reduce_mean", "reduce_max", "sigmoid", "silu", "relu", "tanh", "softmax",
            "reshape", "transpose", "slice_by_size", "concat", "split", "cast", "identity", "select",
            "constexpr_affine_dequantize", "quantize", "dequantize", "scaled_dot_product_attention",
            "layer_norm", "gather");

    public static final String RESOURCE_DIR = "/golden/ops/";

    /** One golden file: the op, the coremltools sources its semantics follow, its cases. */
    public record OpGoldenFile(String op, String source, List<Case> cases) {
        public Case find(String name) {
            for (Case c : cases) if (c.name().equals(name)) return c;
            throw new IllegalArgumentException("[golden] " + op + " has no case '" + name + "'");
        }
    }

    /**
     * One case: inputs by MIL parameter name (in file order; absent optional parameters are simply missing),
     * tuple inputs such as concat's {@code values}, expected outputs in output order, the tolerance
     * ({@code |actual - expected| <= atol + rtol * |expected|}) and a note.
     */
    public record Case(String op, String name, Map<String, GoldenTensor> inputs, Map<String, List<GoldenTensor>> tuples,
                       List<GoldenTensor> expected, double atol, double rtol, String note) {
        /** {@code op/name}, for messages. */
        public String id() { return op + "/" + name; }

        public boolean has(String param) { return inputs.containsKey(param) || tuples.containsKey(param); }

        public GoldenTensor input(String param) {
            GoldenTensor t = inputs.get(param);
            if (t == null) {
                throw new IllegalArgumentException("[golden] " + id() + " has no tensor input '" + param + "' (inputs: "
                        + inputs.keySet() + ", tuples: " + tuples.keySet() + ")");
            }
            return t;
        }

        /** The input, or null when the optional parameter is absent (the op's default applies). */
        public GoldenTensor inputOrNull(String param) { return inputs.get(param); }

        public List<GoldenTensor> tuple(String param) {
            List<GoldenTensor> t = tuples.get(param);
            if (t == null) throw new IllegalArgumentException("[golden] " + id() + " has no tuple input '" + param + "'");
            return t;
        }

        public GoldenTensor expected(int i) { return expected.get(i); }
    }

    /**
     * A tensor of a MIL type; {@code values} is a {@code short[]} of fp16 bits, {@code float[]} (fp32),
     * {@code int[]} (int8/uint8/int16/int32 values), {@code boolean[]} or {@code String[]}, row-major.
     */
    public record GoldenTensor(DType dtype, int[] shape, Object values) {
        public GoldenTensor {
            shape = shape.clone();
            long n = 1;
            for (int d : shape) {
                if (d < 0) throw new IllegalArgumentException("[golden] negative dimension in shape " + Arrays.toString(shape));
                n *= d;
            }
            Class<?> want = switch (dtype) {
                case FP16 -> short[].class;
                case FP32 -> float[].class;
                case INT8, UINT8, INT16, INT32 -> int[].class;
                case BOOL -> boolean[].class;
                case STRING -> String[].class;
                case UINT64 -> throw new IllegalArgumentException("[golden] uint64 tensors are not supported");
            };
            if (values == null || values.getClass() != want) {
                throw new IllegalArgumentException("[golden] " + dtype + " tensor needs " + want.getSimpleName() + " values");
            }
            int len = java.lang.reflect.Array.getLength(values);
            if (len != n) {
                throw new IllegalArgumentException("[golden] shape " + Arrays.toString(shape) + " holds " + n
                        + " values but data has " + len);
            }
        }

        public int rank() { return shape.length; }

        public int size() { return java.lang.reflect.Array.getLength(values); }

        @Override public int[] shape() { return shape.clone(); }

        /** The values widened to float (exact for fp16, ints below 2^24 and bool as 0/1). */
        public float[] asFloats() {
            return switch (values) {
                case short[] h -> Fp16.toFloats(h);
                case float[] f -> f.clone();
                case int[] v -> { float[] out = new float[v.length]; for (int i = 0; i < v.length; i++) out[i] = v[i]; yield out; }
                case boolean[] v -> { float[] out = new float[v.length]; for (int i = 0; i < v.length; i++) out[i] = v[i] ? 1f : 0f; yield out; }
                default -> throw new IllegalStateException("[golden] a " + dtype + " tensor has no float values");
            };
        }

        /** Integer values (int8/uint8/int16/int32; bool as 0/1); float tensors are rejected, not truncated. */
        public int[] asInts() {
            return switch (values) {
                case int[] v -> v.clone();
                case boolean[] v -> { int[] out = new int[v.length]; for (int i = 0; i < v.length; i++) out[i] = v[i] ? 1 : 0; yield out; }
                default -> throw new IllegalStateException("[golden] a " + dtype + " tensor has no integer values");
            };
        }

        public boolean[] asBools() {
            if (values instanceof boolean[] v) return v.clone();
            throw new IllegalStateException("[golden] a " + dtype + " tensor has no bool values");
        }

        public String[] asStrings() {
            if (values instanceof String[] v) return v.clone();
            throw new IllegalStateException("[golden] a " + dtype + " tensor has no string values");
        }

        /** The raw fp16 bit patterns (fp16 tensors only). */
        public short[] fp16Bits() {
            if (values instanceof short[] h) return h.clone();
            throw new IllegalStateException("[golden] a " + dtype + " tensor has no fp16 bits");
        }

        public float floatValue() { return asFloats()[single()]; }

        public int intValue() { return asInts()[single()]; }

        public boolean boolValue() { return asBools()[single()]; }

        public String stringValue() { return asStrings()[single()]; }

        private int single() {
            if (size() != 1) throw new IllegalStateException("[golden] expected one value, tensor has shape " + Arrays.toString(shape));
            return 0;
        }

        @Override public boolean equals(Object o) {
            if (!(o instanceof GoldenTensor t) || t.dtype != dtype || !Arrays.equals(t.shape, shape)) return false;
            return switch (values) {
                case short[] h -> Arrays.equals(h, (short[]) t.values);
                case float[] f -> Arrays.equals(f, (float[]) t.values);
                case int[] v -> Arrays.equals(v, (int[]) t.values);
                case boolean[] v -> Arrays.equals(v, (boolean[]) t.values);
                default -> Arrays.equals((String[]) values, (String[]) t.values);
            };
        }

        @Override public int hashCode() { return dtype.hashCode() * 31 + Arrays.hashCode(shape); }

        @Override public String toString() {
            return "tensor<" + dtype + ", " + Arrays.toString(shape) + ">";
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // loading

    public static OpGoldenFile load(String op) {
        String path = RESOURCE_DIR + op + ".json";
        try (InputStream in = OpGolden.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalArgumentException("[golden] no golden file for op '" + op + "' at " + path
                        + ": regenerate with /usr/bin/python3 tools/gen_op_golden.py");
            }
            OpGoldenFile f = parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            if (!f.op().equals(op)) throw new IllegalArgumentException("[golden] " + path + " holds op '" + f.op() + "'");
            return f;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static List<OpGoldenFile> loadAll() {
        List<OpGoldenFile> out = new ArrayList<>();
        for (String op : OPS) out.add(load(op));
        return out;
    }

    /** Every case of every op, for {@code @MethodSource} parameterized tests. */
    public static List<Case> allCases() {
        List<Case> out = new ArrayList<>();
        for (OpGoldenFile f : loadAll()) out.addAll(f.cases());
        return out;
    }

    public static OpGoldenFile parse(String json) {
        Map<String, Object> root = obj(Json.parse(json), "file");
        String op = str(root.get("op"), "op");
        String source = str(root.get("source"), "source");
        List<Case> cases = new ArrayList<>();
        for (Object o : list(root.get("cases"), op + ".cases")) {
            Map<String, Object> c = obj(o, op + " case");
            String name = str(c.get("name"), op + " case name");
            String where = op + "/" + name;
            Map<String, GoldenTensor> inputs = new LinkedHashMap<>();
            Map<String, List<GoldenTensor>> tuples = new LinkedHashMap<>();
            for (var e : obj(c.get("inputs"), where + ".inputs").entrySet()) {
                if (e.getValue() instanceof List<?> items) {
                    List<GoldenTensor> ts = new ArrayList<>();
                    for (Object item : items) ts.add(tensor(item, where + "." + e.getKey()));
                    tuples.put(e.getKey(), Collections.unmodifiableList(ts));
                } else {
                    inputs.put(e.getKey(), tensor(e.getValue(), where + "." + e.getKey()));
                }
            }
            List<GoldenTensor> expected = new ArrayList<>();
            for (Object item : list(c.get("expected"), where + ".expected")) expected.add(tensor(item, where + ".expected"));
            if (expected.isEmpty()) throw new IllegalArgumentException("[golden] " + where + " has no expected output");
            double atol = num(c.get("atol"), where + ".atol");
            double rtol = num(c.get("rtol"), where + ".rtol");
            String note = c.get("note") == null ? "" : str(c.get("note"), where + ".note");
            cases.add(new Case(op, name, Collections.unmodifiableMap(inputs), Collections.unmodifiableMap(tuples),
                    List.copyOf(expected), atol, rtol, note));
        }
        return new OpGoldenFile(op, source, List.copyOf(cases));
    }

    static GoldenTensor tensor(Object o, String where) {
        Map<String, Object> m = obj(o, where);
        String dt = str(m.get("dtype"), where + ".dtype");
        DType dtype = DType.fromMilName(dt);
        if (dtype == null) throw new IllegalArgumentException("[golden] " + where + ": unknown dtype '" + dt + "'");
        List<?> shapeList = list(m.get("shape"), where + ".shape");
        int[] shape = new int[shapeList.size()];
        for (int i = 0; i < shape.length; i++) shape[i] = Math.toIntExact((long) num(shapeList.get(i), where + ".shape"));
        List<?> data = list(m.get("data"), where + ".data");
        int n = data.size();
        Object values = switch (dtype) {
            case FP16 -> {
                short[] h = new short[n];
                for (int i = 0; i < n; i++) {
                    h[i] = data.get(i) instanceof String s ? (short) hex(s, 4, where) : Fp16.fromFloat((float) num(data.get(i), where));
                }
                yield h;
            }
            case FP32 -> {
                float[] f = new float[n];
                for (int i = 0; i < n; i++) {
                    f[i] = data.get(i) instanceof String s ? Float.intBitsToFloat((int) hex(s, 8, where)) : (float) num(data.get(i), where);
                }
                yield f;
            }
            case INT8, UINT8, INT16, INT32 -> {
                long lo = switch (dtype) { case INT8 -> -128; case UINT8 -> 0; case INT16 -> -32768; default -> Integer.MIN_VALUE; };
                long hi = switch (dtype) { case INT8 -> 127; case UINT8 -> 255; case INT16 -> 32767; default -> Integer.MAX_VALUE; };
                int[] v = new int[n];
                for (int i = 0; i < n; i++) {
                    if (!(data.get(i) instanceof Long x) || x < lo || x > hi) {
                        throw new IllegalArgumentException("[golden] " + where + ": " + data.get(i) + " is not a " + dtype + " value");
                    }
                    v[i] = (int) (long) x;
                }
                yield v;
            }
            case BOOL -> {
                boolean[] v = new boolean[n];
                for (int i = 0; i < n; i++) {
                    if (!(data.get(i) instanceof Boolean x)) throw new IllegalArgumentException("[golden] " + where + ": " + data.get(i) + " is not a bool");
                    v[i] = x;
                }
                yield v;
            }
            case STRING -> {
                String[] v = new String[n];
                for (int i = 0; i < n; i++) v[i] = str(data.get(i), where);
                yield v;
            }
            case UINT64 -> throw new IllegalArgumentException("[golden] " + where + ": uint64 tensors are not supported");
        };
        return new GoldenTensor(dtype, shape, values);
    }

    private static long hex(String s, int digits, String where) {
        if (s.length() != digits) throw new IllegalArgumentException("[golden] " + where + ": '" + s + "' is not " + digits + " hex digits");
        try {
            return Long.parseLong(s, 16);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("[golden] " + where + ": '" + s + "' is not hex");
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> obj(Object o, String where) {
        if (o instanceof Map<?, ?> m) return (Map<String, Object>) m;
        throw new IllegalArgumentException("[golden] " + where + ": expected a JSON object");
    }

    private static List<?> list(Object o, String where) {
        if (o instanceof List<?> l) return l;
        throw new IllegalArgumentException("[golden] " + where + ": expected a JSON array");
    }

    private static String str(Object o, String where) {
        if (o instanceof String s) return s;
        throw new IllegalArgumentException("[golden] " + where + ": expected a string");
    }

    private static double num(Object o, String where) {
        if (o instanceof Long l) return l;
        if (o instanceof Double d) return d;
        throw new IllegalArgumentException("[golden] " + where + ": expected a number");
    }

    // ---------------------------------------------------------------------------------------------------------
    // comparison, in the style of llm.c's check_tensor

    /**
     * Compares {@code actual} with {@code expected} through {@link TensorCheck} (|a − e| ≤ atol + rtol·|e|, NaN matches
     * NaN, an infinity the same infinity; the one-line report names the first bad element by its index in the golden's
     * shape). Returns the max |a − e| over finite pairs.
     */
    public static double checkTensor(String name, GoldenTensor expected, float[] actual, double atol, double rtol) {
        return TensorCheck.checkTensor("[golden] " + name, expected.asFloats(), actual, atol, rtol, expected.shape).maxAbsDiff();
    }

    /** As {@link #checkTensor(String, GoldenTensor, float[], double, double)} for fp16 bit patterns. */
    public static double checkTensorFp16(String name, GoldenTensor expected, short[] actualBits, double atol, double rtol) {
        return checkTensor(name, expected, Fp16.toFloats(actualBits), atol, rtol);
    }

    /** Exact comparison of integer outputs (int8/uint8 values, int32). */
    public static void checkTensor(String name, GoldenTensor expected, int[] actual) {
        int[] exp = expected.asInts();
        if (actual.length != exp.length) {
            throw new AssertionError("[golden] " + name + ": expected " + exp.length + " values " + expected + ", got " + actual.length);
        }
        int bad = 0, firstBad = -1;
        long maxdiff = 0;
        for (int i = 0; i < exp.length; i++) {
            maxdiff = Math.max(maxdiff, Math.abs((long) actual[i] - exp[i]));
            if (actual[i] != exp[i] && bad++ == 0) firstBad = i;
        }
        if (bad > 0) {
            throw new AssertionError(String.format("[golden] %s: TENSOR NOT OK, %d of %d values differ, maxdiff %d; "
                            + "first bad index %d %s: expected %d got %d", name, bad, exp.length, maxdiff, firstBad,
                    Arrays.toString(unravel(firstBad, expected.shape)), exp[firstBad], actual[firstBad]));
        }
        System.out.printf("%s: TENSOR OK%n", name);
    }

    /** Exact comparison of bool outputs. */
    public static void checkTensor(String name, GoldenTensor expected, boolean[] actual) {
        int[] a = new int[actual.length];
        for (int i = 0; i < a.length; i++) a[i] = actual[i] ? 1 : 0;
        checkTensor(name, expected, a);
    }

    /** Fails unless {@code actualShape} equals the expected shape. */
    public static void checkShape(String name, GoldenTensor expected, int[] actualShape) {
        if (!Arrays.equals(expected.shape, actualShape)) {
            throw new AssertionError("[golden] " + name + ": expected shape " + Arrays.toString(expected.shape)
                    + ", got " + Arrays.toString(actualShape));
        }
    }

    /** The multi-dimensional index of flat index {@code i} in a row-major tensor of {@code shape}. */
    static int[] unravel(int i, int[] shape) {
        int[] idx = new int[shape.length];
        for (int d = shape.length - 1; d >= 0; d--) {
            idx[d] = shape[d] == 0 ? 0 : i % shape[d];
            i = shape[d] == 0 ? 0 : i / shape[d];
        }
        return idx;
    }

}
