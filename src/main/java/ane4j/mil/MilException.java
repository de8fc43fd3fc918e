package ane4j.mil;

/** A malformed MIL program or a builder misuse; the message starts with the op or component in brackets: {@code [matmul] …}. */
public class MilException extends RuntimeException {
    public MilException(String message) { super(message); }
    public MilException(String message, Throwable cause) { super(message, cause); }

    static MilException of(String op, String format, Object... args) {
        return new MilException("[" + op + "] " + String.format(format, args));
    }
}
