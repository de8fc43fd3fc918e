package ane4j.backend;

/** A program a backend cannot compile or run, or a kernel misuse; the message starts with a tag: {@code [conv] …}, {@code [kernel] …}. */
public class BackendException extends RuntimeException {
    public BackendException(String message) { super(message); }
    public BackendException(String message, Throwable cause) { super(message, cause); }
}
