package ane4j.backend;

/**
 * The next compile would exceed the backend's compile budget ({@code ane4j.compileBudget}). On the ANE the in-process
 * compiler leaks and fails after about 119 compiles (maderix/ANE, M4), so the process that owns the backend must be
 * replaced; the supervisor does that and restores the kernels and the training state.
 */
public final class CompileBudgetExceededException extends BackendException {
    private final long count;
    private final long budget;

    public CompileBudgetExceededException(String backend, long count, long budget) {
        super("[" + backend + "] compile " + (count + 1) + " exceeds the compile budget of " + budget + " (" + count
                + " compiles done in this process); restart the worker process (the supervisor does this automatically) "
                + "or raise -D" + CountingBackend.BUDGET_PROPERTY);
        this.count = count;
        this.budget = budget;
    }

    /**
     * With a message of its own, e.g. a compile that failed the way the ANE compiler leak fails ({@code cause}: the
     * framework's error); {@code count} compiles came before it.
     */
    public CompileBudgetExceededException(String message, long count, long budget, Throwable cause) {
        super(message, cause);
        this.count = count;
        this.budget = budget;
    }

    /** Compiles done before the refused one. */
    public long count() { return count; }

    public long budget() { return budget; }
}
