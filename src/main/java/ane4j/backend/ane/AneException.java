package ane4j.backend.ane;

import ane4j.backend.BackendException;

/** A failure reported by the ANE framework or by the ane4j ANE layer; the message starts with a {@code [selector]} or {@code [ane.*]} tag. */
public class AneException extends BackendException {
    public AneException(String message) { super(message); }
    public AneException(String message, Throwable cause) { super(message, cause); }
}
