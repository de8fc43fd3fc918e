package ane4j.chip;

import ane4j.mil.MilWriter;
import ane4j.mil.TensorType;

/**
 * One broken rule: where (function, value, and line:col when the program came from text; 0 otherwise), what, the limit
 * and its source.
 */
public record Violation(Rule rule, Severity severity, Chip chip, String function, String value, TensorType type,
                        String detail, int line, int column) {

    /** The same violation at a position in the MIL text. */
    public Violation at(int atLine, int atColumn) {
        return new Violation(rule, severity, chip, function, value, type, detail, atLine, atColumn);
    }

    public boolean isError() { return severity == Severity.ERROR; }

    /** The limit on this violation's chip, e.g. {@code 16384}; empty when the rule has no number. */
    public String limit() {
        long l = rule.limit(chip);
        return l == 0 ? "" : Long.toString(l);
    }

    /** {@code reshape_83 tensor<fp16, [1, 8, 1, 32768]>: axis 3 is 32768} — what broke, without the rule. */
    public String what() {
        String v = value == null ? "function " + function : value + (type == null ? "" : " " + MilWriter.type(type, ane4j.mil.Dialect.IOS18));
        return v + ": " + detail;
    }

    /**
     * One line: {@code 12:9: error [axis-cap] reshape_83 tensor<…>: axis 3 is 32768 (limit 16384 on M3; ANEForge …)}; the
     * position is left out when unknown.
     */
    public String format() {
        String where = line > 0 ? line + ":" + column + ": " : "";
        String lim = limit().isEmpty() ? "" : "limit " + limit() + " on " + chip + "; ";
        return where + severity + " [" + rule.id() + "] " + what() + " (" + lim + "source: " + rule.source() + ")";
    }

    @Override public String toString() { return format(); }
}
