package ane4j.chip;

/** How much a broken rule matters on one chip. */
public enum Severity {
    /** The chip's compiler rejects the program, or a measurement shows silently wrong results: the backends refuse it. */
    ERROR,
    /** A cost, an approximate limit, or a limit measured elsewhere or contradicted by other sources: reported, not refused. */
    WARNING,
    /** A numeric cliff the program can meet at run time (values, not shapes); the reference backend can emulate it. */
    NOTE;

    @Override public String toString() { return name().toLowerCase(java.util.Locale.ROOT); }
}
