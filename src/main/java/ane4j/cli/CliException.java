package ane4j.cli;

/** A user-facing command error: printed as one line, exit code 1. */
public final class CliException extends RuntimeException {
    public CliException(String message) { super(message); }
    public CliException(String message, Throwable cause) { super(message, cause); }

    /** "cannot read FILE: no such file" and the like, for a failed read of a file the user named. */
    static CliException cannotRead(java.nio.file.Path file, java.io.IOException e) {
        String why = e instanceof java.nio.file.NoSuchFileException ? "no such file"
                : e instanceof java.nio.file.AccessDeniedException ? "permission denied"
                : e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
        return new CliException("cannot read " + file + ": " + why, e);
    }
}
