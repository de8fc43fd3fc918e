package ane4j.mil;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

class MilWriterTest {
    @Test
    void fp16LiteralsAreExact() {
        assertEquals("0x1.554p-10", MilWriter.number(Fp16.round(1f / 768)));    // decimal would round: hex
        assertEquals("0.125", MilWriter.number(Fp16.round(0.125f)));
        assertEquals("65504.0", MilWriter.number(Fp16.round(65504f)));
        assertEquals("0x1p-24", MilWriter.number(Fp16.toFloat((short) 1)));   // smallest subnormal
        assertEquals("inf", MilWriter.number(Fp16.round(1e6f)));
        assertEquals("-inf", MilWriter.number(Float.NEGATIVE_INFINITY));
        assertEquals("nan", MilWriter.number(Float.NaN));
        assertEquals("-0.0", MilWriter.number(-0f));
        assertEquals("-0.5", MilWriter.number(-0.5f));
        // every finite fp16 survives writer → parser bit-exactly
        for (int bits = 0; bits < 0x10000; bits++) {
            short h = (short) bits;
            if (Float.isNaN(Fp16.toFloat(h))) continue;
            Literal l = Literal.of(TensorType.scalar(DType.FP16), new short[] {h});
            String text = "program(1.3) { func main<ios18>(tensor<fp16, [1]> x) { fp16 c = const()[val = " + MilWriter.literal(l, Dialect.IOS18) + "]; } -> (c); }";
            if (bits % 97 != 0 && bits > 16 && bits < 0xFC00 - 16) continue;   // a spread sample keeps this fast
            assertEquals(l, MilParser.parse(text).main().operations().get(0).literal("val"), "fp16 bits 0x" + Integer.toHexString(bits));
        }
    }

    @Test
    void headersOfBothDialects() {
        Program p = AcceptancePrograms.a10QkT(2, 4, 8);
        String s18 = MilWriter.write(p, Dialect.IOS18), s16 = MilWriter.write(p, Dialect.IOS16);
        assertTrue(s18.startsWith("program(1.3)\n[buildInfo = dict<string, string>({{\"coremlc-component-MIL\", \"3510.2.1\"}, {\"coremlc-version\", \"3505.4.1\"}, "
                + "{\"coremltools-component-milinternal\", \"\"}, {\"coremltools-version\", \"9.0\"}})]\n{\n    func main<ios18>("), s18);
        assertTrue(s16.startsWith("program(1.0)\n[buildInfo = dict<tensor<string, []>, tensor<string, []>>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n    func main<ios16>("), s16);
        assertTrue(s18.contains("transpose_y = bool(true)"), s18);
        assertTrue(s16.contains("transpose_y = tensor<bool, []>(true)"), s16);
        assertTrue(s16.contains("[name = tensor<string, []>(\"scores\")]"), s16);
        assertTrue(s18.endsWith("    } -> (scores);\n}\n"), s18);
    }

    @Test
    void ios16RefusesNewerOps() {
        Program p = Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(1, 2, 4, 4));
            f.output(f.scaledDotProductAttention(x, x, x));
        }).build();
        var e = assertThrows(MilException.class, () -> MilWriter.write(p, Dialect.IOS16));
        assertEquals("[mil] the ios16 dialect cannot express scaled_dot_product_attention (ios18); write it with the ios18 dialect (chips M3 and later)", e.getMessage());
        assertTrue(MilWriter.write(p, Dialect.IOS18).contains("scaled_dot_product_attention(key = x, query = x, value = x)"));
    }

    @Test
    void stringsAreEscapedAndReadBack() {
        Program p = Mil.program().function("main", f -> {
            var x = f.input("x", Mil.fp16(2));
            f.string("a\"b\\c\nd\te");
            f.output(x);
        }).build();
        String text = MilWriter.write(p, Dialect.IOS18);
        assertTrue(text.contains("string(\"a\\\"b\\\\c\\nd\\te\")"), text);
        assertEquals(p, MilParser.parse(text));
    }
}
