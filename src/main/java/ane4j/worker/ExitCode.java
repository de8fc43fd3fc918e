package ane4j.worker;

/**
 * How a worker JVM ends. The worker exits with one of these codes; the supervisor reads them (and the signal, when the
 * worker was killed) to decide what to say and whether to restart.
 */
public enum ExitCode {
    /** Asked to shut down; nothing in flight. */
    DONE(0),
    /** Could not continue (bad start-up arguments, an unexpected error); the reason was printed to stderr. */
    FAILED(1),
    /** {@code -XX:+ExitOnOutOfMemoryError} exits the JVM with 3 when the heap is exhausted. */
    OUT_OF_MEMORY(3),
    /** The compile budget is exhausted; a checkpoint of training in flight was just written. Restart and resume. */
    RESTART_BUDGET(75),
    /** The parent's channel closed (the user's JVM went away); training in flight was checkpointed. */
    ORPHANED(76);

    public final int code;

    ExitCode(int code) { this.code = code; }

    /** The named code for {@code status}, or null. */
    public static ExitCode of(int status) {
        for (ExitCode c : values()) if (c.code == status) return c;
        return null;
    }

    /** One phrase for an exit status: a named code, a signal ({@code 128 + n} on Linux and macOS), or the number. */
    public static String describe(int status) {
        ExitCode c = of(status);
        if (c != null) return switch (c) {
            case DONE -> "exited normally";
            case FAILED -> "failed (exit 1)";
            case OUT_OF_MEMORY -> "ran out of heap (exit 3)";   // the supervisor adds how to raise it (Options.hints)
            case RESTART_BUDGET -> "compile budget reached";
            case ORPHANED -> "lost its parent";
        };
        if (status > 128 && status < 128 + 32) {
            int sig = status - 128;
            String name = switch (sig) {
                case 9 -> "SIGKILL";
                case 15 -> "SIGTERM";
                case 6 -> "SIGABRT (a native crash; see the hs_err file)";
                case 11 -> "SIGSEGV (a native crash)";
                case 10 -> "SIGBUS (a native crash)";
                case 2 -> "SIGINT";
                default -> "signal " + sig;
            };
            return "killed by " + name + " (exit " + status + ")";
        }
        return "exited with status " + status;
    }
}
