package ane4j.mil;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Writes a {@link Program} as MIL text, deterministically: one statement per line, arguments and attributes in
 * alphabetical order, fp16 literals as the shortest decimal that reads back as the same fp16 ({@link #fp16Number}), fp32
 * literals exactly (a decimal when it is exact in a few digits, else a C hex float such as {@code 0x1.554p-10}).
 */
public final class MilWriter {
    private MilWriter() {}

    static final String BUILD_INFO_IOS18 = "[buildInfo = dict<string, string>({{\"coremlc-component-MIL\", \"3510.2.1\"}, "
            + "{\"coremlc-version\", \"3505.4.1\"}, {\"coremltools-component-milinternal\", \"\"}, {\"coremltools-version\", \"9.0\"}})]";
    static final String BUILD_INFO_IOS16 = "[buildInfo = dict<tensor<string, []>, tensor<string, []>>({{\"coremlc-version\", \"3505.4.1\"}})]";

    public static String write(Program program, Dialect dialect) {
        if (program.requiredOpset().compareTo(dialect.opset()) > 0) {
            List<String> ops = new ArrayList<>();
            for (Function f : program.functions().values())
                for (Op op : f.opsUsed()) if (op.opset().compareTo(dialect.opset()) > 0) ops.add(op.milName() + " (" + op.opset().milName() + ")");
            throw new MilException("[mil] the " + dialect.opset().milName() + " dialect cannot express " + String.join(", ", ops)
                    + "; write it with the ios18 dialect (chips M3 and later)");
        }
        StringBuilder sb = new StringBuilder();
        sb.append("program(").append(dialect.programVersion()).append(")\n");
        sb.append(dialect.verboseScalars() ? BUILD_INFO_IOS16 : BUILD_INFO_IOS18).append("\n{\n");
        for (Function f : program.functions().values()) writeFunction(sb, f, dialect);
        sb.append("}\n");
        return sb.toString();
    }

    private static void writeFunction(StringBuilder sb, Function f, Dialect d) {
        sb.append("    func ").append(f.name()).append('<').append(d.opset().milName()).append(">(");
        for (int i = 0; i < f.inputs().size(); i++) {
            Value v = f.inputs().get(i);
            sb.append(i == 0 ? "" : ", ").append(type(v.type(), d)).append(' ').append(v.name());
        }
        sb.append(") {\n");
        for (Operation op : f.operations()) {
            sb.append("        ");
            for (int i = 0; i < op.outputs().size(); i++) {
                Value v = op.outputs().get(i);
                sb.append(i == 0 ? "" : ", ").append(type(v.type(), d)).append(' ').append(v.name());
            }
            sb.append(" = ").append(op.op().milName()).append('(');
            boolean first = true;
            for (Map.Entry<String, Arg> e : op.inputs().entrySet()) {
                sb.append(first ? "" : ", ").append(e.getKey()).append(" = ").append(arg(e.getValue(), d));
                first = false;
            }
            sb.append(")[");
            Map<String, String> attrs = new TreeMap<>();
            attrs.put("name", literal(Literal.string(op.label()), d));
            op.attributes().forEach((k, v) -> attrs.put(k, literal(v, d)));
            first = true;
            for (Map.Entry<String, String> e : attrs.entrySet()) {
                sb.append(first ? "" : ", ").append(e.getKey()).append(" = ").append(e.getValue());
                first = false;
            }
            sb.append("];\n");
        }
        sb.append("    } -> (");
        for (int i = 0; i < f.outputs().size(); i++) sb.append(i == 0 ? "" : ", ").append(f.outputs().get(i).name());
        sb.append(");\n");
    }

    private static String arg(Arg a, Dialect d) {
        return switch (a) {
            case Arg.Ref r -> r.value().name();
            case Arg.Tuple t -> "(" + String.join(", ", t.values().stream().map(Value::name).toList()) + ")";
            case Arg.Inline i -> literal(i.literal(), d);
        };
    }

    /** {@code tensor<fp16, [1, 768, 1, 256]>}; scalars as {@code fp16} (short) or {@code tensor<fp16, []>} (verbose). */
    public static String type(TensorType t, Dialect d) {
        if (t.isScalar() && !d.verboseScalars()) return t.dtype().milName();
        StringBuilder sb = new StringBuilder("tensor<").append(t.dtype().milName()).append(", [");
        int[] s = t.shape();
        for (int i = 0; i < s.length; i++) sb.append(i == 0 ? "" : ", ").append(s[i]);
        return sb.append("]>").toString();
    }

    /** A literal in MIL syntax: {@code fp16(0.5)}, {@code tensor<int32, [2]>([0, 1])}, {@code tensor<…>(BLOBFILE(…))}. */
    public static String literal(Literal l, Dialect d) {
        TensorType t = l.type();
        if (l.isBlob()) {
            Literal.BlobRef b = l.blobRef();
            return type(t, d) + "(BLOBFILE(path = " + literal(Literal.string(b.path()), d) + ", offset = " + literal(Literal.uint64(b.offset()), d) + "))";
        }
        if (t.isScalar()) {
            String v = element(l, 0);
            return (d.verboseScalars() ? type(t, d) : t.dtype().milName()) + "(" + v + ")";
        }
        StringBuilder sb = new StringBuilder(type(t, d)).append("([");
        for (int i = 0; i < l.size(); i++) sb.append(i == 0 ? "" : ", ").append(element(l, i));
        return sb.append("])").toString();
    }

    private static String element(Literal l, int i) {
        return switch (l.dtype()) {
            case FP16 -> fp16Number(l.floatAt(i));
            case FP32 -> number(l.floatAt(i));
            case BOOL -> l.floatAt(i) != 0 ? "true" : "false";
            case STRING -> quote(((String[]) l.data())[i]);
            case UINT64 -> Long.toUnsignedString(l.longAt(i));
            default -> Long.toString(l.longAt(i));
        };
    }

    /** The exact value of {@code v}: a short decimal when one is exact, else a hex float; {@code inf}, {@code -inf}, {@code nan}. */
    public static String number(float v) {
        if (Float.isNaN(v)) return "nan";
        if (Float.isInfinite(v)) return v > 0 ? "inf" : "-inf";
        if (v == 0) return (Float.floatToRawIntBits(v) < 0) ? "-0.0" : "0.0";
        BigDecimal exact = new BigDecimal(v).stripTrailingZeros();
        if (exact.precision() <= 12 && Math.abs(exact.scale()) <= 12) {
            String s = exact.toPlainString();
            return s.contains(".") ? s : s + ".0";
        }
        return Float.toHexString(v).replace(".0p", "p");
    }

    /**
     * An fp16 value in the decimal forms hardware-proven MIL uses (maderix's generators print fp16 constants with
     * {@code %g} and {@code %f}, e.g. {@code fp16(0.125000)}, {@code fp16(1e-05)}; the only hex literal in any MIL that ran
     * is {@code fp16(0x1p-3)}, docs/ane-audit.md F11): the shortest decimal that reads back as the same fp16 bits whichever
     * way a reader rounds it, to the nearest fp16 directly, through fp32 ({@code strtof}) or through fp64
     * ({@code strtod}); never on a rounding tie. Plain from 1e-4 up ({@code 0.0013018}, {@code 65504.0}), C {@code %g}
     * exponent form below ({@code 6.1035e-05}); {@code inf}, {@code -inf}, {@code nan}, {@code -0.0}.
     */
    public static String fp16Number(float v) {
        short h = Fp16.fromFloat(v);
        float exactValue = Fp16.toFloat(h);
        if (Float.isNaN(exactValue) || Float.isInfinite(exactValue) || exactValue == 0) return number(exactValue);
        // the open interval of reals that round to h: halfway to each neighbour (past 65504 inf begins at 65520)
        double lo = midpoint(exactValue, (short) (h - 1)), hi = midpoint(exactValue, (short) (h + 1));
        if (lo > hi) { double t = lo; lo = hi; hi = t; }
        BigDecimal exact = new BigDecimal(exactValue), loExact = new BigDecimal(lo), hiExact = new BigDecimal(hi);
        for (int digits = 1; ; digits++) {
            BigDecimal d = exact.round(new MathContext(digits, RoundingMode.HALF_EVEN)).stripTrailingZeros();
            if (d.compareTo(loExact) <= 0 || d.compareTo(hiExact) >= 0) continue;                 // read exactly
            String text = d.toString();
            double viaDouble = Double.parseDouble(text);                                              // strtod, then to fp16
            if (viaDouble <= lo || viaDouble >= hi || Fp16.fromFloat(Float.parseFloat(text)) != h) continue;   // strtof, then to fp16
            return decimal(d);
        }
    }

    /** Halfway from v to the fp16 with bits n (exact in a double); an infinite neighbour counts as ±65536. */
    private static double midpoint(float v, short n) {
        float nv = Fp16.toFloat(n);
        double neighbour = Float.isInfinite(nv) ? Math.copySign(65536.0, nv) : nv;
        return (v + neighbour) / 2;
    }

    /** {@code 0.125}, {@code -1.0}, {@code 1.0133e-06}: plain from 1e-4 up, as C's %g below. */
    private static String decimal(BigDecimal d) {
        if (d.abs().compareTo(new BigDecimal("1e-4")) >= 0) {
            String s = d.toPlainString();
            return s.contains(".") ? s : s + ".0";
        }
        String digits = d.unscaledValue().abs().toString();
        int exponent = digits.length() - 1 - d.scale();
        String mantissa = digits.charAt(0) + (digits.length() > 1 ? "." + digits.substring(1) : "");
        return (d.signum() < 0 ? "-" : "") + mantissa + "e" + (exponent < 0 ? "-" : "+") + (Math.abs(exponent) < 10 ? "0" : "") + Math.abs(exponent);
    }

    static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\t' -> sb.append("\\t");
                default -> sb.append(c);
            }
        }
        return sb.append('"').toString();
    }
}
