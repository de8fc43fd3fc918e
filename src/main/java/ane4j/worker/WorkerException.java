package ane4j.worker;

/** The worker could not do what was asked: it could not start, kept dying, timed out, or reported an error. */
public class WorkerException extends RuntimeException {
    public WorkerException(String message) { super(message); }

    public WorkerException(String message, Throwable cause) { super(message, cause); }
}
