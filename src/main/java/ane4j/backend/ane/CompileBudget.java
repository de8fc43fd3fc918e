package ane4j.backend.ane;

import ane4j.backend.AneException;
import ane4j.backend.BackendException;
import ane4j.backend.CompileBudgetExceededException;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts ANE compiles in this process against a budget. Apple's in-memory compiler leaks: after about
 * 119 compiles in one process further compiles fail (maderix/ANE README and tiny_train.m; 119–132 on M4
 * per PR #23; docs/ane-facts.md §6), and only a fresh process recovers. So the next compile past the budget
 * throws {@link CompileBudgetExceededException} (the backend SPI's) before anything is sent to the framework, and a compile
 * failure after {@code leakSuspectAfter} earlier compiles is reported the same way: the supervisor then
 * restarts the worker, whose fresh compile either succeeds or reports the real error with a low count.
 * Every attempt counts, failed ones included (the leak does not care whether the compile succeeded).
 */
public final class CompileBudget {
    public static final String PROPERTY = "ane4j.compileBudget";
    /** maderix's {@code MAX_COMPILES = 100} (stories_config.h), a margin below the observed ~119. */
    public static final int DEFAULT_BUDGET = 100;
    /** A compile failing after this many earlier compiles is taken for the leak (onset observed at 119–132). */
    public static final int LEAK_SUSPECT_AFTER = 100;

    private static CompileBudget process;

    private final int budget;
    private final int leakSuspectAfter;
    private final AtomicInteger used = new AtomicInteger();

    public CompileBudget(int budget, int leakSuspectAfter) {
        if (budget < 0) throw new IllegalArgumentException("[" + PROPERTY + "] budget " + budget + " must be >= 0");
        if (leakSuspectAfter < 0) throw new IllegalArgumentException("[ane.compile] leakSuspectAfter " + leakSuspectAfter + " must be >= 0");
        this.budget = budget;
        this.leakSuspectAfter = leakSuspectAfter;
    }

    /** The process-wide budget: {@code -Dane4j.compileBudget} (default {@value #DEFAULT_BUDGET}). */
    public static synchronized CompileBudget process() {
        if (process == null) {
            String text = System.getProperty(PROPERTY);
            int budget = DEFAULT_BUDGET;
            if (text != null && !text.isBlank()) {
                try {
                    budget = Integer.parseInt(text.trim());
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("[" + PROPERTY + "] \"" + text + "\" is not a number; use e.g. -D" + PROPERTY + "=100");
                }
            }
            process = new CompileBudget(budget, LEAK_SUSPECT_AFTER);
        }
        return process;
    }

    public int budget() { return budget; }

    public int used() { return used.get(); }

    public int remaining() { return Math.max(0, budget - used.get()); }

    /** Takes one compile from the budget, or throws if none is left. */
    public void acquire() {
        int n = used.getAndUpdate(u -> u < budget ? u + 1 : u);
        if (n >= budget)
            throw new CompileBudgetExceededException("[ane.compile] the compile budget of " + budget
                    + " per process is used up; restart the process (the supervisor does this) or raise -D" + PROPERTY
                    + " (Apple's compiler fails after about 119 compiles per process)", n, budget, null);
    }

    /**
     * The exception to throw for a failed compile: the failure itself, or a {@link CompileBudgetExceededException}
     * wrapping it when at least {@code leakSuspectAfter} compiles came before this one.
     */
    public BackendException classifyFailure(AneException failure) {
        int before = used.get() - 1;
        // macOS 27's bundle hash check (Code=10 verifyBundleAtPath) refuses the program itself, whatever came before:
        // a restart would fail the same way (docs/macos27-ane.md C2)
        if (before < leakSuspectAfter || failure.isBundleCheck()) return failure;
        return new CompileBudgetExceededException("[ane.compile] compile failed after " + before
                + " earlier compiles in this process, as the compiler leak does; restart the process. "
                + failure.getMessage(), before, budget, failure);
    }
}
