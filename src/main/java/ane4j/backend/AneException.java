package ane4j.backend;


/**
 * A failure reported by the ANE framework or by the ane4j ANE layer; the message starts with a {@code [selector]} or
 * {@code [ane.*]} tag. It lives here, beside {@link BackendException}, because both {@code backend.ane} (whose handlers
 * catch it on every OS) and {@code backend.ane.ffm} (which throws it) use it, and in ffm it would load the FFM layer
 * off-Mac (AneRuntimeTest).
 */
public class AneException extends BackendException {
    public AneException(String message) { super(message); }
    public AneException(String message, Throwable cause) { super(message, cause); }
}
