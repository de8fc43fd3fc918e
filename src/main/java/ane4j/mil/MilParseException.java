package ane4j.mil;

/** Malformed MIL text: the message starts with {@code line:column: } and says what was expected or what is wrong. */
public final class MilParseException extends MilException {
    private final int line;
    private final int column;
    private final int endColumn;
    private final String detail;

    public MilParseException(int line, int column, String detail) {
        this(line, column, column, detail);
    }

    /** A problem spanning columns {@code column..endColumn} of one line (e.g. a whole declared type). */
    public MilParseException(int line, int column, int endColumn, String detail) {
        super(line > 0 ? line + ":" + column + ": " + detail : detail);
        this.line = line;
        this.column = column;
        this.endColumn = Math.max(column, endColumn);
        this.detail = detail;
    }

    /** 1-based line of the problem (0 when it has no position, e.g. an unreadable weight file). */
    public int line() { return line; }

    /** 1-based column (in chars) of the problem. */
    public int column() { return column; }

    /** 1-based last column of the problem's span (= {@link #column()} for a single token's start). */
    public int endColumn() { return endColumn; }

    /** The message without the position. */
    public String detail() { return detail; }
}
