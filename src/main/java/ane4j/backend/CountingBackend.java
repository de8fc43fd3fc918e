package ane4j.backend;

import ane4j.mil.Program;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The shared base of the backends: counts compiles and enforces the compile budget. The budget is
 * {@code -Dane4j.compileBudget} when set, else the backend's default (100 for the ANE, unlimited for ref), unless the
 * constructor is given one. The compile past the budget throws {@link CompileBudgetExceededException} before any work.
 */
public abstract class CountingBackend implements Backend {
    public static final String BUDGET_PROPERTY = "ane4j.compileBudget";
    public static final long UNLIMITED = Long.MAX_VALUE;

    private final AtomicLong compiles = new AtomicLong();
    private final long budget;
    private final boolean chargeOnCompile;

    /** @param budget the budget, or null for {@code -Dane4j.compileBudget} or else {@code defaultBudget} */
    protected CountingBackend(Long budget, long defaultBudget) { this(budget, defaultBudget, true); }

    /**
     * @param chargeOnCompile false: {@link #compile} does not count; the backend calls {@link #chargeCompile()} itself
     *                        once it knows a real compile follows (the ANE loads programs Apple's daemon already compiled
     *                        without compiling them)
     */
    protected CountingBackend(Long budget, long defaultBudget, boolean chargeOnCompile) {
        long b = budget != null ? budget : budgetFromProperty(defaultBudget);
        if (b < 0) throw new IllegalArgumentException("[backend] compile budget " + b + " is negative");
        this.budget = b;
        this.chargeOnCompile = chargeOnCompile;
    }

    /** {@code -D}{@value #BUDGET_PROPERTY} of this JVM, or null when it is not set. */
    public static Long budgetProperty() {
        String s = System.getProperty(BUDGET_PROPERTY);
        return s == null || s.isBlank() ? null : budgetFromProperty(0);
    }

    static long budgetFromProperty(long defaultBudget) {
        String s = System.getProperty(BUDGET_PROPERTY);
        if (s == null || s.isBlank()) return defaultBudget;
        try {
            long b = Long.parseLong(s.strip());
            if (b < 0) throw new NumberFormatException();
            return b;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("[backend] -D" + BUDGET_PROPERTY + "=" + s + " is not a non-negative integer");
        }
    }

    @Override
    public final Kernel compile(Program program, String functionName) {
        if (chargeOnCompile) chargeCompile();
        return doCompile(program, functionName);
    }

    /** Counts one compile, or throws {@link CompileBudgetExceededException} when the budget has none left. */
    protected final void chargeCompile() {
        long done;
        do {
            done = compiles.get();
            if (done >= budget) throw new CompileBudgetExceededException(name(), done, budget);
        } while (!compiles.compareAndSet(done, done + 1));
    }

    /** Compiles one function; unless the backend charges itself, the budget has already been checked and the compile counted. */
    protected abstract Kernel doCompile(Program program, String functionName);

    @Override public final long compileCount() { return compiles.get(); }

    @Override public final long compileBudget() { return budget; }
}
