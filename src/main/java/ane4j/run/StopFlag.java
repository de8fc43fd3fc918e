package ane4j.run;

/**
 * A request to stop a training run at its next step boundary, the one stop flag of a run in each JVM: the run handle
 * sets it ({@code %train stop}, Ctrl-C, a signal), every layer between passes the same object down, and the trainer
 * serves it with a checkpoint and clears it, so that a resume continues. In a worker JVM the trainer's flag is the
 * worker's copy of it, set by the parent's STOP_TRAINING.
 */
public final class StopFlag {
    private volatile boolean requested;

    /** Asks for a stop (from any thread, a signal handler included). */
    public void request() { requested = true; }

    public boolean requested() { return requested; }

    /** The stop was served (or the run continues): the next run goes on until asked again. */
    public void clear() { requested = false; }
}
