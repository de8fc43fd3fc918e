package ane4j.cli;

/** A user-facing command error: printed as one line, exit code 1. */
public final class CliException extends RuntimeException {
    public CliException(String message) { super(message); }
    public CliException(String message, Throwable cause) { super(message, cause); }
}
