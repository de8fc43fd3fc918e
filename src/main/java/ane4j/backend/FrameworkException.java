package ane4j.backend;

/**
 * An Objective-C exception raised inside a framework call, caught by the {@code @try/@catch} trampoline and turned into a
 * Java exception instead of aborting the JVM (docs/ane-audit.md F9). The message is {@code "[selector] raised Name: reason ..."}.
 */
public final class FrameworkException extends AneException {
    private final String selector, name, reason;

    public FrameworkException(String selector, String name, String reason) {
        super("[" + selector + "] raised " + name + ": " + reason + " (an Objective-C exception inside the framework; the process goes on)");
        this.selector = selector;
        this.name = name;
        this.reason = reason;
    }

    /** The selector whose call raised it. */
    public String selector() { return selector; }

    /** The exception's {@code name}, e.g. {@code NSInvalidArgumentException}. */
    public String name() { return name; }

    /** The exception's {@code reason}. */
    public String reason() { return reason; }
}
