package ane4j.run;

/**
 * Where a training run is, the one state type of every face and both sides of the worker's pipe: setting up (model,
 * data, kernels) before its first step, running, stopped between steps (it resumes from its checkpoint), finished (every
 * step done), or failed (its error says why).
 */
public enum RunState {
    PREPARING, RUNNING, STOPPED, FINISHED, FAILED;

    /** Finished, stopped or failed: nothing more happens until a resume. */
    public boolean ended() {
        return this == STOPPED || this == FINISHED || this == FAILED;
    }
}
