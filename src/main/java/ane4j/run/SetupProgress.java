package ane4j.run;

import java.util.function.Consumer;

/**
 * What a training run is doing before its first step, for progress lines ({@code starting worker…}, {@code compiling
 * kernel 3/10 (ffnFused)…}, {@code first step…}): the worker start and the kernel compiles take seconds, and without
 * this the line would say "step 0/40" all that time. {@link TrainingStep} reports each compile to whoever set up
 * the trainer with {@link #reporting}; nothing is reported outside it.
 *
 * @param stage   what is happening
 * @param done    with {@link Stage#COMPILING}: the kernel being compiled, 1-based; else 0
 * @param total   with {@link Stage#COMPILING}: how many kernels this setup compiles; else 0
 * @param kernel  with {@link Stage#COMPILING}: the kernel's name ({@code sdpaBwd1}, {@code woFwd · layer 2}); else ""
 */
public record SetupProgress(Stage stage, int done, int total, String kernel) {
    public enum Stage { STARTING_WORKER, COMPILING, FIRST_STEP }

    private static final ScopedValue<Consumer<SetupProgress>> SINK = ScopedValue.newInstance();

    public static SetupProgress startingWorker() { return new SetupProgress(Stage.STARTING_WORKER, 0, 0, ""); }

    public static SetupProgress compiling(int done, int total, String kernel) { return new SetupProgress(Stage.COMPILING, done, total, kernel); }

    public static SetupProgress firstStep() { return new SetupProgress(Stage.FIRST_STEP, 0, 0, ""); }

    /** {@code starting worker…}, {@code compiling kernel 3/10 (ffnFused)…}, {@code first step…} */
    public String line() {
        return switch (stage) {
            case STARTING_WORKER -> "starting worker…";
            case COMPILING -> "compiling kernel " + done + "/" + total + " (" + kernel + ")…";
            case FIRST_STEP -> "first step…";
        };
    }

    /**
     * Runs {@code setup} (building a {@link Trainer}) with its compiles reported to {@code sink}, then reports
     * {@link Stage#FIRST_STEP}; returns what {@code setup} returned.
     */
    public static <T> T reporting(Consumer<SetupProgress> sink, java.util.function.Supplier<T> setup) {
        T result = ScopedValue.where(SINK, sink).call(setup::get);
        sink.accept(firstStep());
        return result;
    }

    /** Tells the setup in progress (if any on this thread) that kernel {@code done} of {@code total} compiles now. */
    public static void reportCompiling(int done, int total, String kernel) {
        if (SINK.isBound()) SINK.get().accept(compiling(done, total, kernel));
    }
}
