package ane4j.mil.grad;

import ane4j.mil.MilException;

/**
 * A program that cannot be differentiated as asked, in one line: {@code [grad] no gradient for op X at 7:9 (value att); fix}.
 * {@link #line()} and {@link #column()} point at the value's definition in the program's MIL text (the file given to
 * {@code ane4j mil grad}, or for a built program its canonical text, {@code mil fmt}); 0 when there is none.
 */
public final class GradException extends MilException {
    private final int line, column;

    GradException(int line, int column, String message) {
        super("[grad] " + message);
        this.line = line;
        this.column = column;
    }

    public int line() { return line; }

    public int column() { return column; }
}
