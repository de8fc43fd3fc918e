package ane4j.mil;

import ane4j.programs.AcceptancePrograms;
import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

class MilParserTest {
    /** maderix style: labels differ from names, no spaces, comments, multi-output split, inline literals, two functions. */
    static final String HAND_WRITTEN = """
            program(1.3)
            [buildInfo = dict<string, string>({{"coremlc-component-MIL", "3510.2.1"}, {"k\\"ey", "v\\\\al\\n"}})]
            {
                // first function: two inputs, three outputs
                func main<ios18>(tensor<fp16, [1, 4, 1, 8]> x, tensor<fp16, [1,4,1,8]> inp) {
                    tensor<int32, [2]> st = const()[name=string("st"), val=tensor<int32, [2]>([1,1])];
                    string pt=const()[name=string("pt"),val=string("valid")];
                    tensor<int32, [4]> pd = const()[name = string("pd"), val = tensor<int32, [4]>([0, 0, 0, 0])];
                    int32 gr = const()[name=string("gr"), val=int32(1)];
                    tensor<fp16, [4,4,1,1]> Wq = const()[name=string("Wq"), val=tensor<fp16, [4,4,1,1]>(BLOBFILE(path=string("@model_path/weights/wq.bin"), offset=uint64(64)))];
                    tensor<fp16, [1,4,1,8]> qf = conv(dilations=st,groups=gr,pad=pd,pad_type=pt,strides=st,weight=Wq,x=x)[name=string("cq")];
                    /* a block
                       comment */
                    tensor<fp16, [1,4,1,8]> s = add(x = qf, y = inp)[name = string("s")];
                    int32 ax = const()[name=string("ax"), val=int32(1)];
                    tensor<fp16, [1,2,1,8]> a, tensor<fp16, [1,2,1,8]> b = split(x = s, axis = ax, num_splits = int32(2))[name = string("sp")];
                    tensor<fp16, [1,4,8,8]> t = matmul(x = x, y = inp, transpose_x = true, transpose_y = bool(false))[name = string("mm")];
                    tensor<fp16, [1,4,8,8]> h = mul(x = t, y = fp16(0x1.8p-3))[name = string("h")];
                    tensor<fp16, [1,4,1,8]> n = mul(x = inp, y = fp16(-inf))[name = string("n")];
                    tensor<fp16, [1,4,1,8]> e = add(x = n, y = fp16(0.001302))[name = string("e")];
                } -> (a, b, h);
                func second<ios16>(tensor<fp32, [2]> z) {
                    tensor<fp32, [2]> w = add(x = z, y = tensor<fp32, [2]>([nan, -1.5e-3]))[name = tensor<string, []>("w")];
                    tensor<string, []> c16 = const()[name = tensor<string, []>("c16"), val = tensor<string, []>("fp16")];
                    tensor<fp16, [2]> w16 = cast(x = w, dtype = c16)[name = tensor<string, []>("w16")];
                } -> (w16, z);
            }
            """;

    @Test
    void readsHandWrittenMil() {
        Program p = MilParser.parse(HAND_WRITTEN);
        assertEquals(2, p.functions().size());
        Function main = p.main();
        assertEquals(2, main.inputs().size());
        assertEquals(java.util.List.of("a", "b", "h"), main.outputs().stream().map(Value::name).toList());
        Operation conv = main.operations().stream().filter(o -> o.op() == Op.CONV).findFirst().orElseThrow();
        assertEquals("cq", conv.label());
        assertEquals("qf", conv.output().name());
        assertEquals(new Literal.BlobRef("@model_path/weights/wq.bin", 64), conv.value("weight").constant().blobRef());
        Operation split = main.operations().stream().filter(o -> o.op() == Op.SPLIT).findFirst().orElseThrow();
        assertEquals(2, split.outputs().size());
        assertEquals("sp", split.label());
        assertEquals(2, split.literal("num_splits").intValue());
        Operation mm = main.operations().stream().filter(o -> o.op() == Op.MATMUL).findFirst().orElseThrow();
        assertEquals(new Arg.Inline(Literal.bool(true)), mm.inputs().get("transpose_x"));
        assertEquals(0.1875f, literalY(main, "h").floatValue());
        assertEquals(Float.NEGATIVE_INFINITY, literalY(main, "n").floatValue());
        // 0.001302 rounds to the nearest fp16, 0x1.554p-10 (= 0.0013017654…)
        assertEquals(0x1.554p-10f, literalY(main, "e").floatValue());
        Function second = p.function("second");
        Literal v = ((Arg.Inline) second.operations().get(0).inputs().get("y")).literal();
        assertTrue(Float.isNaN(v.floatAt(0)));
        assertEquals(-1.5e-3f, v.floatAt(1));
        assertEquals(java.util.List.of("w16", "z"), second.outputs().stream().map(Value::name).toList());
        // canonical text is stable and parses to the same graph
        String canon = MilWriter.write(p, Dialect.IOS18);
        assertEquals(p, MilParser.parse(canon));
        assertEquals(canon, MilWriter.write(MilParser.parse(canon), Dialect.IOS18));
    }

    private static Literal literalY(Function f, String out) {
        Operation o = f.operations().stream().filter(op -> op.outputs().get(0).name().equals(out)).findFirst().orElseThrow();
        return ((Arg.Inline) o.inputs().get("y")).literal();
    }

    @Test
    void decimalFp16RoundsToNearest() {
        assertEquals(Fp16.fromFloat(1f / 768), parseScalar("fp16(0.001302)"));
        assertEquals((short) 0x3C00, parseScalar("fp16(1.0)"));
        assertEquals((short) 0x7BFF, parseScalar("fp16(65504)"));
        assertEquals((short) 0x7C00, parseScalar("fp16(65520)"));     // halfway to the next binade rounds to inf
        assertEquals((short) 0x7BFF, parseScalar("fp16(65519.99)"));
        assertEquals((short) 0x0001, parseScalar("fp16(0x1p-24)"));
        assertEquals((short) 0x0000, parseScalar("fp16(0x1p-25)"));   // tie → even (zero)
        assertEquals((short) 0x0001, parseScalar("fp16(2.9802322387695312500001e-8)")); // just above the tie
        assertEquals((short) 0x8000, parseScalar("fp16(-0.0)"));
        assertEquals((short) 0xBC00, parseScalar("fp16(-1)"));
        assertEquals((short) 0x3C01, parseScalar("fp16(1.00048828125000001)")); // above the 1+2^-11 tie, float rounds down to the tie
    }

    private static short parseScalar(String lit) {
        String t = "program(1.3) { func main<ios18>(tensor<fp16, [1]> x) { fp16 c = const()[name = string(\"c\"), val = " + lit + "]; } -> (c); }";
        return ((short[]) MilParser.parse(t).main().operations().get(0).literal("val").data())[0];
    }

    private static String fn(String body) {
        return "program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1, 12, 256, 64]> q, tensor<fp16, [1, 12, 256, 64]> k) {\n" + body + "    } -> (q);\n}\n";
    }

    private static MilParseException error(String text) { return assertThrows(MilParseException.class, () -> MilParser.parse(text)); }

    @Test
    void errorMessagesCarryPositionAndExpectation() {
        var e = error(fn("        tensor<fp16, [1,12,256,32]> s = matmul(x = q, y = k, transpose_y = true)[name = string(\"s\")];\n"));
        assertEquals("4:9: [matmul] s: declared tensor<fp16, [1, 12, 256, 32]> but inferred tensor<fp16, [1, 12, 256, 256]>", e.getMessage());
        assertEquals(4, e.line());
        assertEquals(9, e.column());

        e = error(fn("        tensor<fp16, [1,12,256,256]> s = matmul(x = q, y = qq, transpose_y = true)[name = string(\"s\")];\n"));
        assertEquals("4:60: unknown value 'qq' (defined so far in main: q, k)", e.getMessage());

        e = error(fn("        tensor<fp16, [1,12,256,256]> s = matmul(x = q y = k)[name = string(\"s\")];\n"));
        assertEquals("4:55: expected ',' or ')' after argument 'x', found 'y'", e.getMessage());

        e = error(fn("        tensor<fp16, [1,12,256,256]> s = matmul(x = q, y = k)[name = string(\"s\")];\n"));
        assertTrue(e.getMessage().startsWith("4:9: [matmul] x is [1,12,256,64] but y is [1,12,256,64]: inner dimensions 64 and 256 differ"), e.getMessage());

        assertEquals("1:1: expected 'program(1.3)' or 'program(1.0)' at the start, found 'func'", error("func").getMessage());
        assertTrue(error(fn("        tensor<fp16, [1]> s = frobnicate(x = q);\n")).getMessage().startsWith("4:31: [mil] unknown op 'frobnicate' (known: conv, matmul,"));
        assertEquals("4:46: [relu] unknown parameter 'y' (parameters: x)", error(fn("        tensor<fp16, [1,12,256,64]> s = relu(y = q);\n")).getMessage());
        assertEquals("4:53: [relu] argument 'x' is given twice", error(fn("        tensor<fp16, [1,12,256,64]> s = relu(x = q, x = k);\n")).getMessage());
        assertEquals("4:37: [mil] value 'q' is already defined at 3:53 (MIL values are SSA: define each name once)",
                error(fn("        tensor<fp16, [1,12,256,64]> q = relu(x = q);\n")).getMessage());
        assertEquals("4:41: [quantize] needs opset ios17 but function main is declared <ios16>",
                error(fn("        tensor<int8, [1,12,256,64]> s = quantize(input = q, scale = fp16(1), output_dtype = string(\"int8\"));\n").replace("ios18", "ios16")).getMessage());
        assertEquals("5:9: expected ';' at the end of the statement, found 'tensor'",
                error(fn("        tensor<fp16, [1,12,256,64]> s = relu(x = q)[name = string(\"s\")]\n        tensor<fp16, [1]> z = relu(x = s);\n")).getMessage());
        assertTrue(error("program(1.3) { func main<ios18>(tensor<fp16, [1]> x) { } -> (x); } junk").getMessage().startsWith("1:68: expected end of input"));
        assertEquals("1:9: [mil] unterminated string (missing closing '\"')", error("program(\"abc").getMessage());
        assertEquals("1:14: [mil] unexpected character 'é' (U+00E9)", error("program(1.3) é").getMessage());
    }

    @Test
    void hostileSizesAreParseErrors() {
        String pre = "program(1.3) { func main<ios18>(tensor<fp16, [4]> x) { ";
        String post = " } -> (x); }";
        assertTrue(error(pre.replace("[4]", "[99999999999]") + post).getMessage().contains("dimension 99999999999 is out of range"));
        assertTrue(error(pre.replace("[4]", "[65536, 65536, 65536]") + post).getMessage().contains("more than 2^31-1 elements"));
        assertTrue(error(pre.replace("[4]", "[1,1,1,1,1,1]") + post).getMessage().contains("rank more than 5"));
        assertTrue(error(pre + "tensor<fp16, [3]> c = const()[val = tensor<fp16, [3]>([1, 2])];" + post).getMessage().contains("needs 3 values, found 2"));
        assertTrue(error(pre + "tensor<fp16, [3]> c = const()[val = tensor<fp16, [3]>([1, 2, 3, 4])];" + post).getMessage().contains("too many values"));
        assertTrue(error(pre + "int8 c = const()[val = int8(128)];" + post).getMessage().contains("int8 128 is out of range (-128..127)"));
        assertTrue(error(pre + "uint64 c = const()[val = uint64(18446744073709551616)];" + post).getMessage().contains("out of range"));
        assertTrue(error(pre + "tensor<fp16, [2147483647]> c = const()[val = tensor<fp16, [2147483647]>([1])];" + post).getMessage().contains("needs 2147483647 values, found 1"));
        assertTrue(error(pre + "tensor<bool, [2]> c = const()[val = tensor<bool, [2]>(BLOBFILE(path = string(\"a\"), offset = uint64(64)))];" + post)
                .getMessage().contains("BLOBFILE cannot hold bool"));
        assertTrue(error(pre + "tensor<int32, [2]> c = const()[val = tensor<int32, [2]>([1.5, 2])];" + post).getMessage().contains("expected an integer int32"));
    }

    @Test
    void readsLiteralsOfEveryType() {
        String t = """
                program(1.0)
                [buildInfo = dict<tensor<string, []>, tensor<string, []>>({{"coremlc-version", "3505.4.1"}})]
                {
                    func main<ios16>(tensor<fp16, [2]> x) {
                        tensor<uint8, [2]> a = const()[name = tensor<string, []>("a"), val = tensor<uint8, [2]>([0, 255])];
                        tensor<int16, [2]> b = const()[name = tensor<string, []>("b"), val = tensor<int16, [2]>([-32768, 32767])];
                        tensor<uint64, []> c = const()[name = tensor<string, []>("c"), val = tensor<uint64, []>(18446744073709551615)];
                        tensor<string, [2]> d = const()[name = tensor<string, []>("d"), val = tensor<string, [2]>(["a\\tb", "\\"q\\""])];
                        tensor<fp32, [2, 2]> e = const()[name = tensor<string, []>("e"), val = tensor<fp32, [2, 2]>([[1, 2], [3, -0x1p-149]])];
                        tensor<bool, []> f = const()[name = tensor<string, []>("f"), val = tensor<bool, []>(true)];
                    } -> (x);
                }
                """;
        Program p = MilParser.parse(t);
        var ops = p.main().operations();
        assertEquals(255, ops.get(0).literal("val").longAt(1));
        assertEquals(-32768, ops.get(1).literal("val").longAt(0));
        assertEquals(-1L, ops.get(2).literal("val").longAt(0));
        assertArrayEquals(new String[] {"a\tb", "\"q\""}, (String[]) ops.get(3).literal("val").data());
        assertArrayEquals(new float[] {1, 2, 3, -Float.MIN_VALUE}, ops.get(4).literal("val").toFloats());
        assertTrue(ops.get(5).literal("val").boolValue());
        for (Dialect d : Dialect.values()) assertEquals(p, MilParser.parse(MilWriter.write(p, d)));
    }

    @Test
    void loadsAndChecksWeights(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        Program built = AcceptancePrograms.a1Conv(8, 4);
        String text = MilWriter.write(built, Dialect.IOS18);
        var e = assertThrows(MilParseException.class, () -> MilParser.parse(text, dir));
        assertTrue(e.getMessage().matches("\\d+:\\d+: \\[blob\\] weight file .* not found .*"), e.getMessage());
        built.weights().writeTo(dir);
        assertEquals(built.weights(), MilParser.parse(text, dir).weights());
        String wrong = text.replace("tensor<fp16, [8, 8, 1, 1]>(BLOBFILE", "tensor<fp16, [4, 8, 1, 1]>(BLOBFILE").replace("tensor<fp16, [8, 8, 1, 1]> W", "tensor<fp16, [4, 8, 1, 1]> W");
        assertThrows(MilParseException.class, () -> MilParser.parse(wrong));  // conv then sees 4 output channels
        String badOffset = text.replace("offset = uint64(64)", "offset = uint64(128)");
        assertTrue(assertThrows(MilParseException.class, () -> MilParser.parse(badOffset, dir)).getMessage().contains("blob at offset 128: no 0xDEADBEEF sentinel"));
    }
}
