package ane4j.session;

import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.Tokenizer;
import ane4j.run.StepMetrics;
import java.nio.file.Path;
import java.util.List;

/** A training run inside a {@link Session}: run it a few steps at a time, read its model. */
public interface Training extends AutoCloseable {

    /**
     * Runs the rest of the run, or until its stop flag is served (at the next update boundary, with a checkpoint);
     * returns the metrics of the steps it ran. A later call continues.
     */
    List<StepMetrics> run();

    /** Makes a running {@link #run} return at the next update boundary (from another thread): sets the run's stop flag. */
    void requestStop();

    /** Micro-steps done so far. */
    long stepsDone();

    /** Micro-steps of the whole run. */
    long totalSteps();

    default boolean finished() {
        return stepsDone() >= totalSteps();
    }

    ModelConfig config();

    /** The current weights (live: they change as the run goes on). */
    Parameters parameters();

    /**
     * The LoRA adapters as trained, unmerged (null: not a LoRA run), to go with {@link #baseParameters()}: the generation
     * kernels take them as inputs instead of the fused {@link #parameters()}.
     */
    default ane4j.train.LoraAdapters adapters() {
        return null;
    }

    /** The weights the {@link #adapters()} apply to (the frozen base of a LoRA run); {@link #parameters()} otherwise. */
    default Parameters baseParameters() {
        return parameters();
    }

    /** The tokenizer of the training data, or null when the data came without one. */
    Tokenizer tokenizer();

    /** The run directory: run.txt, metrics.jsonl, checkpoints. */
    Path runDir();

    /** The newest checkpoint of the run, written now if the last step has none (a stopped run resumes from it); null before a step. */
    Path checkpoint();

    /** How often the backend had to be replaced (compile budget reached, worker died). */
    int restarts();

    /** Where the run trains, for the run record (null: as the session's status says). */
    default String worker() {
        return null;
    }

    @Override
    void close();
}
