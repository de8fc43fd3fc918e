package ane4j.notebook;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.Locale;

/** Numbers as a researcher reads them: four significant digits, integers whole, tiny and huge values in e-notation. */
public final class Format {
    private Format() {}

    /** {@code 6.2373528 → 6.237}, {@code 0.00006000000212 → 6e-05}, {@code 16961.4 → 16961}, {@code 2.0 → 2}. */
    public static String num(double v) {
        if (Double.isNaN(v)) return "NaN";
        if (Double.isInfinite(v)) return v > 0 ? "inf" : "-inf";
        if (v == 0) return "0";
        double a = Math.abs(v);
        if (a >= 1e9 || a < 1e-3) return sci(v);
        if (a >= 1000) return Long.toString(Math.round(v));
        String s = new BigDecimal(v).round(new MathContext(4)).stripTrailingZeros().toPlainString();
        return s.equals("-0") ? "0" : s;
    }

    /** {@code 6e-05}, {@code 2.4e-03}: a mantissa of up to 3 significant digits and a two-digit exponent. */
    static String sci(double v) {
        String s = String.format(Locale.ROOT, "%.2e", v);
        int e = s.indexOf('e');
        String mantissa = s.substring(0, e), exponent = s.substring(e);
        if (mantissa.contains(".")) mantissa = mantissa.replaceAll("0+$", "").replaceAll("\\.$", "");
        return mantissa + exponent;
    }

    /** A number (any boxed type) as {@link #num}; anything else as its string. */
    public static String value(Object o) {
        return switch (o) {
            case null -> "";
            case Double d -> num(d);
            case Float f -> num(f);
            case Number n -> n.toString();
            default -> o.toString();
        };
    }

    /** {@code 0:42}, {@code 1:02:03}: a wall time. */
    public static String duration(double seconds) {
        if (seconds < 60) return num(seconds) + " s";
        long s = Math.round(seconds);
        return s >= 3600 ? String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
                : String.format(Locale.ROOT, "%d:%02d", s / 60, s % 60);
    }
}
