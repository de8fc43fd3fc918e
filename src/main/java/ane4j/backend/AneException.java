package ane4j.backend;


/**
 * A failure reported by the ANE framework or by the ane4j ANE layer; the message starts with a {@code [selector]} or
 * {@code [ane.*]} tag. It lives here, beside {@link BackendException}, because both {@code backend.ane} (whose handlers
 * catch it on every OS) and {@code backend.ane.ffm} (which throws it) use it, and in ffm it would load the FFM layer
 * off-Mac (AneRuntimeTest).
 * <p>
 * When the framework returned an NSError, {@link #domain()}, {@link #code()} and {@link #underlying()} (the
 * localizedDescription of its {@code NSUnderlyingError}) say what Apple said; otherwise domain and underlying are null.
 */
public class AneException extends BackendException {
    private final String domain;
    private final long code;
    private final String underlying;

    public AneException(String message) { this(message, null, 0, null, null); }
    public AneException(String message, Throwable cause) { this(message, null, 0, null, cause); }

    public AneException(String message, String domain, long code, String underlying, Throwable cause) {
        super(message, cause);
        this.domain = domain;
        this.code = code;
        this.underlying = underlying;
    }

    /** The same error under a new message (domain, code and underlying kept). */
    public AneException withMessage(String message) { return new AneException(message, domain, code, underlying, this); }

    /** The NSError domain, null when no NSError came back. */
    public String domain() { return domain; }

    /** The NSError code (0 when no NSError came back). */
    public long code() { return code; }

    /** The localizedDescription of the NSError's NSUnderlyingError, null when none. */
    public String underlying() { return underlying; }

    /**
     * macOS 27's bundle hash check refused the program: Code=10 with a {@code verifyBundleAtPath} message (docs/macos27-ane.md
     * C1/C2). Not the compiler leak, and not helped by a restart; the fix is at most one weight file.
     */
    public boolean isBundleCheck() {
        String all = getMessage() + " " + (underlying == null ? "" : underlying);
        return all.contains("verifyBundleAtPath") || (code == 10 && all.contains("bundle"));
    }
}
