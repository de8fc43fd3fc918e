package ane4j.mil;

/** Malformed MIL text: the message starts with {@code line:column: } and says what was expected or what is wrong. */
public final class MilParseException extends MilException {
    private final int line;
    private final int column;
    private final String detail;

    public MilParseException(int line, int column, String detail) {
        super(line > 0 ? line + ":" + column + ": " + detail : detail);
        this.line = line;
        this.column = column;
        this.detail = detail;
    }

    /** 1-based line of the problem (0 when it has no position, e.g. an unreadable weight file). */
    public int line() { return line; }

    /** 1-based column (in chars) of the problem. */
    public int column() { return column; }

    /** The message without the position. */
    public String detail() { return detail; }
}
