package ane4j.backend;

import ane4j.mil.Program;

/**
 * Something that compiles MIL programs into runnable {@link Kernel}s: the ANE, or the reference interpreter.
 * Weights come from {@link Program#weights()}. Every compile counts against the backend's compile budget.
 */
public interface Backend {
    /** {@code ane} or {@code ref}. */
    String name();

    /** Whether this backend can run here; never throws. */
    boolean isAvailable();

    /** Compiles the program's {@code main} function (or its only one). */
    default Kernel compile(Program program) { return compile(program, program.main().name()); }

    /** Compiles one function of the program. */
    Kernel compile(Program program, String functionName);

    /** Compiles done so far by this backend. */
    long compileCount();

    /** The most compiles this backend allows ({@link Long#MAX_VALUE}: unlimited). */
    long compileBudget();

    /**
     * The chip this backend runs on or emulates, for the run's record and the loss-scale cap; never throws (what cannot
     * be read is "unknown (why)"). A backend that knows nothing of chips keeps this default.
     */
    default ChipDescription describeChip() { return ChipDescription.UNKNOWN; }

    /**
     * A reference backend that enforces no chip's rules (this backend's storage where it is one): the parts of a split
     * program that the chip cannot run are evaluated on it, on the CPU.
     */
    default Backend unconstrained() { return Backends.reference().unconstrained(); }
}
