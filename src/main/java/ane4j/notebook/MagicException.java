package ane4j.notebook;

/** A magic was used wrongly or failed; the message is one line that names the problem and the fix. */
public class MagicException extends RuntimeException {
    public MagicException(String message) {
        super(message);
    }

    public MagicException(String message, Throwable cause) {
        super(message, cause);
    }
}
