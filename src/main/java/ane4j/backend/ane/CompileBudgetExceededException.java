package ane4j.backend.ane;

/**
 * The process has used its compile budget, or a compile failed the way the ANE compiler leak fails.
 * The only remedy is a fresh process (the supervisor restarts the worker); see {@link CompileBudget}.
 */
public final class CompileBudgetExceededException extends AneException {
    public CompileBudgetExceededException(String message) { super(message); }
    public CompileBudgetExceededException(String message, Throwable cause) { super(message, cause); }
}
