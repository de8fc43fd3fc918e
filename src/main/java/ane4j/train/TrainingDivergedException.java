package ane4j.train;

/** A run stopped because it diverged: the message is the one-line diagnosis (symptom, likely cause, fix, checkpoint kept). */
public final class TrainingDivergedException extends IllegalStateException {
    public TrainingDivergedException(String message) { super(message); }
}
