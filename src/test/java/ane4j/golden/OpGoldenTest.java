package ane4j.golden;

import ane4j.golden.OpGolden.Case;
import ane4j.golden.OpGolden.GoldenTensor;
import ane4j.golden.OpGolden.OpGoldenFile;
import ane4j.mil.DType;
import ane4j.mil.Fp16;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BinaryOperator;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class OpGoldenTest {

    @Test
    void everyOpHasAFileWithAtLeastThreeWellFormedCases() {
        List<OpGoldenFile> files = OpGolden.loadAll();
        assertEquals(32, files.size());
        assertEquals(files.stream().mapToInt(f -> f.cases().size()).sum(), OpGolden.allCases().size());
        for (OpGoldenFile f : files) {
            assertTrue(f.cases().size() >= 3, f.op() + " has " + f.cases().size() + " cases");
            assertTrue(f.source().contains("coremltools"), f.op() + " source: " + f.source());
            Set<String> names = new HashSet<>();
            for (Case c : f.cases()) {
                assertTrue(names.add(c.name()), "duplicate case " + c.id());
                assertFalse(c.inputs().isEmpty() && c.tuples().isEmpty(), c.id() + " has no inputs");
                assertFalse(c.expected().isEmpty(), c.id());
                assertTrue(c.atol() >= 0 && c.rtol() >= 0 && c.rtol() < 0.01, c.id() + " tolerance");
            }
        }
    }

    @Test
    void theResourceDirectoryHoldsExactlyTheListedOps() throws URISyntaxException, IOException {
        Path dir = Path.of(OpGolden.class.getResource(OpGolden.RESOURCE_DIR).toURI());
        Set<String> onDisk;
        try (Stream<Path> s = Files.list(dir)) {
            onDisk = s.map(p -> p.getFileName().toString()).collect(Collectors.toSet());
        }
        Set<String> listed = OpGolden.OPS.stream().map(op -> op + ".json").collect(Collectors.toSet());
        assertEquals(listed, onDisk);
    }

    @Test
    void fp16AddOverflowsToInfinityAndRoundsToEven() {
        Case c = OpGolden.load("add").find("fp16_overflow_and_rounding");
        float[] x = c.input("x").asFloats(), y = c.input("y").asFloats();
        float[] e = c.expected(0).asFloats();
        assertEquals(65504f, x[0]);
        assertEquals(Float.POSITIVE_INFINITY, e[0], "65504 + 65504");
        assertEquals(Float.NEGATIVE_INFINITY, e[1], "-65504 - 65504");
        assertEquals(65504f, e[2], "65504 + 8 rounds down");
        assertEquals(Float.POSITIVE_INFINITY, e[3], "65504 + 16 = 65520 ties to inf");
        assertEquals(2048f, e[6], "2048 + 1 ties to even");
        assertEquals(0x7c00, c.expected(0).fp16Bits()[0] & 0xffff);
        assertEquals(DType.FP16, c.expected(0).dtype());
        for (int i = 0; i < x.length; i++) assertEquals(Fp16.round(x[i] + y[i]), e[i], "element " + i);
    }

    /** Recomputes every exact elementwise case (fp32 op then one fp16 rounding) with numpy broadcasting in Java. */
    @Test
    void exactBinaryOpsMatchJavaFloatArithmeticWithBroadcasting() {
        Map<String, BinaryOperator<Float>> fns = Map.of("add", Float::sum, "sub", (a, b) -> a - b,
                "mul", (a, b) -> a * b, "real_div", (a, b) -> a / b);
        int checked = 0;
        for (var op : fns.entrySet()) {
            for (Case c : OpGolden.load(op.getKey()).cases()) {
                GoldenTensor x = c.input("x"), y = c.input("y"), e = c.expected(0);
                int[] shape = broadcastShape(x.shape(), y.shape());
                assertArrayEquals(shape, e.shape(), c.id());
                float[] xv = x.asFloats(), yv = y.asFloats(), out = new float[e.size()];
                boolean isInt = x.dtype() == DType.INT32;
                int[] xi = isInt ? x.asInts() : null, yi = isInt ? y.asInts() : null, outI = new int[e.size()];
                for (int i = 0; i < out.length; i++) {
                    int[] idx = OpGolden.unravel(i, shape);
                    int a = flatIndex(idx, x.shape()), b = flatIndex(idx, y.shape());
                    if (isInt) {
                        outI[i] = switch (op.getKey()) {
                            case "add" -> xi[a] + yi[b];
                            case "sub" -> xi[a] - yi[b];
                            default -> xi[a] * yi[b];
                        };
                    } else {
                        float r = op.getValue().apply(xv[a], yv[b]);
                        out[i] = x.dtype() == DType.FP16 ? Fp16.round(r) : r;
                    }
                }
                if (isInt) OpGolden.checkTensor(c.id(), e, outI);
                else OpGolden.checkTensor(c.id(), e, out, 0, 0);
                checked++;
            }
        }
        assertTrue(checked >= 30, "checked " + checked);
    }

    @Test
    void quantizeRoundsHalfToEvenBeforeTheZeroPointAndSaturates() {
        for (Case c : OpGolden.load("quantize").cases()) {
            if (c.has("axis")) continue;
            float[] x = c.input("input").asFloats();
            float scale = c.input("scale").floatValue();
            int zp = c.has("zero_point") ? c.input("zero_point").intValue() : 0;
            boolean int8 = c.input("output_dtype").stringValue().equals("int8");
            int[] q = new int[x.length];
            for (int i = 0; i < x.length; i++) {
                float r = (float) Math.rint(x[i] / scale) + zp;
                q[i] = (int) Math.max(int8 ? -128 : 0, Math.min(int8 ? 127 : 255, r));
            }
            OpGolden.checkTensor(c.id(), c.expected(0), q);
        }
        int[] ties = OpGolden.load("quantize").find("fp16_int8_scalar_ties_saturation").expected(0).asInts();
        assertArrayEquals(new int[] {0, 2, 2, 0, -2}, Arrays.copyOf(ties, 5));
        assertEquals(DType.INT8, OpGolden.load("quantize").find("fp16_int8_A3").expected(0).dtype());
        assertArrayEquals(new int[] {5, 7, 1, 127},
                OpGolden.load("quantize").find("fp16_int8_round_then_add_odd_zp").expected(0).asInts());
    }

    @Test
    void castIntToFp16RoundsToEvenAndOverflows() {
        Case c = OpGolden.load("cast").find("int32_to_fp16");
        assertEquals("fp16", c.input("dtype").stringValue());
        assertEquals(0, c.input("dtype").rank());
        int[] x = c.input("x").asInts();
        short[] bits = c.expected(0).fp16Bits();
        for (int i = 0; i < x.length; i++) assertEquals(Fp16.fromFloat((float) x[i]), bits[i], "element " + i);
        assertEquals(Float.POSITIVE_INFINITY, c.expected(0).asFloats()[6], "65520 -> inf");
        Case nan = OpGolden.load("cast").find("fp32_to_fp16_rounding");
        assertTrue(Float.isNaN(nan.expected(0).asFloats()[17]));
        assertEquals((short) 0x8000, nan.expected(0).fp16Bits()[18], "-0 keeps its sign");
    }

    @Test
    void matmulAccumulatesInFp32AndIntCaseIsExact() {
        Case acc = OpGolden.load("matmul").find("fp16_fp32_accumulation");
        assertArrayEquals(new float[] {1000f, Float.POSITIVE_INFINITY, 0f}, acc.expected(0).asFloats());
        Case c = OpGolden.load("matmul").find("int32_2d");
        int[] x = c.input("x").asInts(), y = c.input("y").asInts();
        int[] out = new int[4];
        for (int i = 0; i < 2; i++) for (int j = 0; j < 2; j++) for (int k = 0; k < 3; k++) out[i * 2 + j] += x[i * 3 + k] * y[k * 2 + j];
        OpGolden.checkTensor(c.id(), c.expected(0), out);
        // an fp16 case recomputed in double: must pass the file's own tolerance
        Case h = OpGolden.load("matmul").find("fp16_rank4_defaults");
        float[] a = h.input("x").asFloats(), b = h.input("y").asFloats();
        float[] r = new float[2 * 8 * 8];
        for (int g = 0; g < 2; g++) for (int i = 0; i < 8; i++) for (int j = 0; j < 8; j++) {
            double s = 0;
            for (int k = 0; k < 16; k++) s += (double) a[g * 128 + i * 16 + k] * b[g * 128 + k * 8 + j];
            r[g * 64 + i * 8 + j] = Fp16.round((float) s);
        }
        OpGolden.checkTensor(h.id(), h.expected(0), r, h.atol(), h.rtol());
    }

    @Test
    void tupleInputsAndMultipleOutputsAreRead() {
        Case cat = OpGolden.load("concat").find("fp32_interleave_doc_example");
        assertEquals(2, cat.tuple("values").size());
        assertTrue(cat.input("interleave").boolValue());
        assertArrayEquals(new float[] {1, 2, 7, 8, 3, 4, 9, 10, 5, 6, 11, 12}, cat.expected(0).asFloats());
        Case split = OpGolden.load("split").find("fp32_split_sizes");
        assertEquals(3, split.expected().size());
        assertArrayEquals(new int[] {2, 3, 5}, split.expected(1).shape());
        assertArrayEquals(new int[] {2, 5, 3}, split.input("split_sizes").asInts());
        Case sum = OpGolden.load("reduce_sum").find("fp16_axes_absent");
        assertEquals(0, sum.expected(0).rank(), "reduce over all axes gives a scalar");
        assertTrue(OpGolden.load("conv").find("fp32_1x1_bias_defaults").inputOrNull("strides") == null);
        Case sdpa = OpGolden.load("scaled_dot_product_attention").find("fp16_bool_causal_mask");
        assertEquals(DType.BOOL, sdpa.input("attn_mask").dtype());
    }

    @Test
    void checkTensorAcceptsToleranceAndMatchingSpecials() {
        GoldenTensor e = new GoldenTensor(DType.FP32, new int[] {2, 2},
                new float[] {1f, Float.POSITIVE_INFINITY, Float.NaN, -2f});
        double maxdiff = OpGolden.checkTensor("ok", e, new float[] {1.001f, Float.POSITIVE_INFINITY, Float.NaN, -2f}, 0, 2e-3);
        assertEquals(0.001, maxdiff, 1e-6);
        AssertionError err = assertThrows(AssertionError.class, () ->
                OpGolden.checkTensor("bad", e, new float[] {1f, Float.POSITIVE_INFINITY, Float.NaN, -2.5f}, 1e-3, 1e-3));
        assertTrue(err.getMessage().contains("first bad [3] [1, 1]"), err.getMessage());
        assertTrue(err.getMessage().contains("1 of 4"), err.getMessage());
        assertThrows(AssertionError.class, () ->
                OpGolden.checkTensor("inf", e, new float[] {1f, 65504f, Float.NaN, -2f}, 1e9, 1));
        assertThrows(AssertionError.class, () ->
                OpGolden.checkTensor("-inf", e, new float[] {1f, Float.NEGATIVE_INFINITY, Float.NaN, -2f}, 0, 0));
        assertThrows(AssertionError.class, () ->
                OpGolden.checkTensor("nan", e, new float[] {1f, Float.POSITIVE_INFINITY, 0f, -2f}, 1e9, 1));
        assertThrows(AssertionError.class, () -> OpGolden.checkTensor("len", e, new float[3], 0, 0));
        GoldenTensor q = new GoldenTensor(DType.INT8, new int[] {3}, new int[] {-128, 0, 127});
        OpGolden.checkTensor("int ok", q, new int[] {-128, 0, 127});
        assertThrows(AssertionError.class, () -> OpGolden.checkTensor("int bad", q, new int[] {-128, 1, 127}));
    }

    @Test
    void readerRejectsMalformedFiles() {
        String ok = "{\"op\":\"relu\",\"source\":\"coremltools/x.py\",\"cases\":[{\"name\":\"a\",\"inputs\":{\"x\":"
                + "{\"dtype\":\"fp16\",\"shape\":[2],\"data\":[\"3c00\",\"fc00\"]}},\"expected\":[{\"dtype\":\"fp32\","
                + "\"shape\":[],\"data\":[-1.5]}],\"atol\":0,\"rtol\":0}]}";
        OpGoldenFile f = OpGolden.parse(ok);
        assertArrayEquals(new float[] {1f, Float.NEGATIVE_INFINITY}, f.cases().get(0).input("x").asFloats());
        assertEquals(-1.5f, f.cases().get(0).expected(0).floatValue());
        assertEquals("", f.cases().get(0).note());
        var e1 = assertThrows(IllegalArgumentException.class, () -> OpGolden.parse(ok.replace("[2]", "[3]")));
        assertTrue(e1.getMessage().contains("holds 3 values but data has 2"), e1.getMessage());
        var e2 = assertThrows(IllegalArgumentException.class, () -> OpGolden.parse(ok.replace("\"fp16\"", "\"fp8\"")));
        assertTrue(e2.getMessage().contains("unknown dtype 'fp8'"), e2.getMessage());
        var e3 = assertThrows(IllegalArgumentException.class, () -> OpGolden.parse(ok.replace("3c00", "3c0")));
        assertTrue(e3.getMessage().contains("not 4 hex digits"), e3.getMessage());
        assertThrows(IllegalArgumentException.class, () -> OpGolden.load("no_such_op"));
        assertThrows(IllegalStateException.class, () -> f.cases().get(0).input("x").asInts());
        assertThrows(IllegalArgumentException.class, () -> f.cases().get(0).input("y"));
        assertThrows(IllegalArgumentException.class, () -> OpGolden.tensor(
                Json.parse("{\"dtype\":\"int8\",\"shape\":[1],\"data\":[200]}"), "t"));
    }

    @Test
    void jsonParserHandlesEscapesNumbersAndReportsPositions() {
        Object v = Json.parse(" {\"a\": [1, -0, 2.5e1, -3E-2, true, false, null], \"s\": \"q\\\"\\\\\\n\\u00e9/\"} ");
        @SuppressWarnings("unchecked") Map<String, Object> m = (Map<String, Object>) v;
        assertEquals(Arrays.asList(1L, 0L, 25.0, -0.03, true, false, null), m.get("a"));
        assertEquals("q\"\\\n\u00e9/", m.get("s"));
        assertEquals(List.of("a", "s"), List.copyOf(m.keySet()));
        assertEquals(12345678901234567890.0, (Double) Json.parse("12345678901234567890"), 1e4);
        var e = assertThrows(IllegalArgumentException.class, () -> Json.parse("{\"a\": 1,\n \"b\" 2}"));
        assertEquals("[json] 2:6: expected ':'", e.getMessage());
        for (String bad : List.of("", "[1,]", "{\"a\":1}x", "\"abc", "01", "[1 2]", "{\"a\":1,\"a\":2}", "tru", "\"\\x\"", "1.", "-")) {
            assertThrows(IllegalArgumentException.class, () -> Json.parse(bad), bad);
        }
    }

    private static int[] broadcastShape(int[] a, int[] b) {
        int r = Math.max(a.length, b.length);
        int[] out = new int[r];
        for (int i = 0; i < r; i++) {
            int da = i - (r - a.length) >= 0 ? a[i - (r - a.length)] : 1;
            int db = i - (r - b.length) >= 0 ? b[i - (r - b.length)] : 1;
            if (da != db && da != 1 && db != 1) throw new IllegalArgumentException("shapes do not broadcast");
            out[i] = Math.max(da, db);
        }
        return out;
    }

    /** Flat index into a tensor of {@code shape} for output index {@code idx}, numpy broadcasting (right-aligned). */
    private static int flatIndex(int[] idx, int[] shape) {
        int off = idx.length - shape.length, flat = 0;
        for (int d = 0; d < shape.length; d++) flat = flat * shape[d] + (shape[d] == 1 ? 0 : idx[d + off]);
        return flat;
    }
}
