package ane4j.session;

import ane4j.run.RunSpec;
import ane4j.backend.Kernel;
import ane4j.mil.MilParser;
import ane4j.mil.Program;
import ane4j.run.StopFlag;
import ane4j.train.Trainer;

/**
 * Where backend work runs: compiling MIL into kernels and training. {@link WorkerSession} (the default of notebooks and
 * the CLI) runs it in a supervised child JVM; {@link LocalSession} runs it in this JVM. A notebook's {@code Ane} holds
 * its current session; {@code ane4j train} makes one per run.
 */
public interface Session extends AutoCloseable {

    /** What the session is and where the work runs, for {@code %ane}. */
    record Status(String backend, String chip, String dialect, long compiles, long compileBudget, String worker) {
        /** Compiles left before the budget is reached ({@link Long#MAX_VALUE}: unlimited). */
        public long compilesLeft() {
            return compileBudget == Long.MAX_VALUE ? Long.MAX_VALUE : Math.max(0, compileBudget - compiles);
        }
    }

    /** Compiles the program's main function. */
    Kernel compile(Program program);

    /** Parses MIL text and compiles it; parse errors are {@link ane4j.mil.MilParseException}s with line:column. */
    default Kernel compile(String milText) {
        return compile(MilParser.parse(milText));
    }

    /**
     * Prepares a training run (model, data, kernels) without running a step yet. The run's description says its backend,
     * storage and compile budget (compiles per backend process before it is replaced; null: the backend's default).
     *
     * @param listener receives every step and one-line messages (restarts, skipped updates)
     */
    Training train(RunSpec run, Trainer.Listener listener, StopFlag stop);

    /** {@link #train(RunSpec, Trainer.Listener, StopFlag)} with a stop flag of its own ({@link Training#requestStop}). */
    default Training train(RunSpec run, Trainer.Listener listener) {
        return train(run, listener, new StopFlag());
    }

    Status status();

    /** The backend's name ({@code ane}, {@code ref}), without the rest of {@link #status()}. */
    default String backendName() {
        return status().backend();
    }

    @Override
    void close();
}
