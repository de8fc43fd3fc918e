package ane4j.train;

/** A checkpoint that cannot be used: truncated, corrupt, foreign, another version, or another model. */
public final class CheckpointFormatException extends RuntimeException {
    public CheckpointFormatException(String message) { super("[checkpoint] " + message); }
}
