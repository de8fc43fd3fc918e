package ane4j.mil;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Writes a {@link Program} as MIL text, deterministically: one statement per line, arguments and attributes in
 * alphabetical order, fp16/fp32 literals printed exactly (as a decimal when it is exact in a few digits, else as a C
 * hex float such as {@code 0x1.554p-10}).
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
            case FP16, FP32 -> number(l.floatAt(i));
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
