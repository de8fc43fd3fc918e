package ane4j.mil;

import ane4j.programs.AcceptancePrograms;
import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class MilWriterTest {
    @Test
    void fp16LiteralsAreShortDecimalsAsInHardwareProvenMil() {
        assertEquals("0.001302", MilWriter.fp16Number(1f / 768));             // fp16 0x1.554p-10 = 0.00130176544…
        assertEquals("0.125", MilWriter.fp16Number(0.125f));
        assertEquals("0.0884", MilWriter.fp16Number(0.08838834764f));         // 1/sqrt(128), fp16 0.08837890625
        assertEquals("65500.0", MilWriter.fp16Number(65504f));                // the largest fp16: 65500 reads back as 65504
        assertEquals("-1.0", MilWriter.fp16Number(-1f));
        assertEquals("1e-06", MilWriter.fp16Number(1e-6f));                   // qwen3's qk-norm epsilon, an fp16 subnormal
        assertEquals("6e-08", MilWriter.fp16Number(Fp16.toFloat((short) 1)));  // smallest subnormal 5.96e-8
        assertEquals("6.104e-05", MilWriter.fp16Number(Fp16.toFloat((short) 0x0400)));   // smallest normal 2^-14
        assertEquals("inf", MilWriter.fp16Number(1e6f));
        assertEquals("-inf", MilWriter.fp16Number(Float.NEGATIVE_INFINITY));
        assertEquals("nan", MilWriter.fp16Number(Float.NaN));
        assertEquals("-0.0", MilWriter.fp16Number(-0f));
        assertEquals("-0.5", MilWriter.fp16Number(-0.5f));
    }

    @Test
    void everyFp16BitPatternSurvivesWriterThenParserInBothDialects() {
        short[] all = new short[0x10000];
        for (int bits = 0; bits < all.length; bits++) all[bits] = (short) bits;
        Literal every = Literal.of(TensorType.of(DType.FP16, all.length), all);
        for (Dialect d : new Dialect[] {Dialect.IOS18, Dialect.IOS16}) {
            // every pattern as a tensor element, and a spread of them as scalars (the dialects' scalar forms differ)
            StringBuilder text = new StringBuilder(d == Dialect.IOS18 ? "program(1.3) { func main<ios18>(" : "program(1.0) { func main<ios16>(");
            text.append("tensor<fp16, [1]> x) { ").append(MilWriter.type(every.type(), d)).append(" all = const()[val = ").append(MilWriter.literal(every, d)).append("]; ");
            List<Short> scalars = new ArrayList<>();
            for (int bits = 0; bits < all.length; bits += bits < 64 || bits > 0xFBC0 ? 1 : 61) {
                Literal l = Literal.of(TensorType.scalar(DType.FP16), new short[] {(short) bits});
                text.append(MilWriter.type(l.type(), d)).append(" c").append(bits).append(" = const()[val = ").append(MilWriter.literal(l, d)).append("]; ");
                scalars.add((short) bits);
            }
            text.append("} -> (all); }");
            assertFalse(text.toString().contains("0x"), "no hex literal");
            List<Operation> ops = MilParser.parse(text.toString()).main().operations();
            short[] back = (short[]) ops.get(0).literal("val").data();
            for (int i = 0; i < all.length; i++) assertSameFp16(all[i], back[i], d);
            for (int i = 0; i < scalars.size(); i++) assertSameFp16(scalars.get(i), ((short[]) ops.get(i + 1).literal("val").data())[0], d);
        }
    }

    private static void assertSameFp16(short written, short read, Dialect d) {
        if (Float.isNaN(Fp16.toFloat(written))) assertTrue(Float.isNaN(Fp16.toFloat(read)), d + " NaN 0x" + Integer.toHexString(written & 0xFFFF));
        else assertEquals(written, read, d + " fp16 bits 0x" + Integer.toHexString(written & 0xFFFF) + " written as " + MilWriter.fp16Number(Fp16.toFloat(written)));
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
