package ane4j.worker;

import ane4j.run.RunState;
import ane4j.run.StepMetrics;
import ane4j.run.StopFlag;
import ane4j.run.RunFolder;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A training run in the supervised worker. The user's JVM keeps its identity (the options and run directory); the
 * worker keeps its state and checkpoints it. Steps replayed after a restart are checked against the first time they
 * ran (a difference is reported) and are not passed to the listener again. The listener is called from one thread
 * of the session, in order; {@link #await} returns after it has seen every step.
 */
public final class TrainingSession {
    /** Where the run is: the next step to run, of how many; how often the worker was restarted under it. */
    public record Status(RunState state, long nextStep, long steps, int restarts, String error) {}

    private final Supervisor supervisor;
    private final RunFolder folder;   // held from the start to the end of the run
    private final TrainOptions options;
    private final java.util.Map<String, String> placement;
    private final Trainer.Listener listener;
    // the first loss of each recent step, to check a replay after a restart (replays start at the last checkpoint, so
    // the window of checkpointEvery steps back, or REPLAY_WINDOW, is enough); the steps themselves, downsampled
    private final TreeMap<Long, Float> firstLoss = new TreeMap<>();
    private final ane4j.run.StepHistory steps = new ane4j.run.StepHistory();
    private static final int REPLAY_WINDOW = 4096;
    private final CompletableFuture<List<StepMetrics>> done = new CompletableFuture<>();
    // the listener runs here, in order, so a listener that calls the supervisor cannot block the channel's reader
    private final ExecutorService delivery = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("ane4j-train-events").factory());
    private volatile RunState state = RunState.RUNNING;
    private volatile int requestId = -1;
    private volatile WorkerProcess worker;
    private volatile int attachments;
    private volatile String error;
    private final StopFlag stop;   // the run's
    private long maxStep = -1;
    private int restarts;

    TrainingSession(Supervisor supervisor, TrainOptions options, java.util.Map<String, String> placement, Trainer.Listener listener, StopFlag stop,
                    RunFolder folder) {
        this.stop = stop;
        this.supervisor = supervisor;
        this.folder = folder;
        this.options = options;
        this.placement = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(placement));
        this.listener = listener != null ? listener : m -> {};
    }

    public TrainOptions options() { return options; }

    /** Where and how the run layer runs it (compileBudget, inProcess, heap), for the run record. */
    java.util.Map<String, String> placement() { return placement; }

    public java.nio.file.Path runDir() { return options.runDir(); }

    void requestStop() { stop.request(); }

    /** The run's stop flag is set: a worker that attaches (or re-attaches after a restart) is told at once. */
    boolean stopRequested() { return stop.requested(); }

    boolean isActive() { return state == RunState.RUNNING; }

    int attachments() { return attachments; }

    void attach(WorkerProcess w, int id) {
        this.worker = w;
        this.requestId = id;
        attachments++;
    }

    /**
     * The worker always starts training with {@code resume = true}; its "resumed from"/"no checkpoint" line is news only
     * when the user asked for a resume, and only the first time (a restart says it in its own line). A restarted worker
     * sets the run up again: the notes of that setup (e.g. "[eval] validation loss every …") were said at the start.
     */
    private boolean hides(String line) {
        boolean resumeLine = line.startsWith("[train] resumed from step") || line.startsWith("[train] no checkpoint in");
        if (resumeLine) return attachments > 1 || !options.resume();
        return !said.add(line) && attachments > 1;
    }

    private final java.util.Set<String> said = java.util.concurrent.ConcurrentHashMap.newKeySet();

    WorkerProcess worker() { return worker; }

    boolean owns(int id, WorkerProcess w) { return id == requestId && w == worker; }

    synchronized void restarted() { restarts++; }

    /** A step from the worker; true when it is new (not a replay after a restart). */
    boolean onStep(StepMetrics m) {
        Float first;
        synchronized (this) {
            first = firstLoss.get(m.step());
            if (first == null && m.step() <= maxStep - replayWindow()) return false;   // older than any replay: seen before
            if (first == null) {
                firstLoss.put(m.step(), m.loss());
                steps.add(m);
                maxStep = Math.max(maxStep, m.step());
                while (firstLoss.firstKey() <= maxStep - replayWindow()) firstLoss.pollFirstEntry();
            }
        }
        if (first == null) {
            deliver(() -> listener.onStep(m));
            return true;
        }
        if (Float.floatToRawIntBits(first) != Float.floatToRawIntBits(m.loss()))
            onMessage("[worker] step " + m.step() + " replayed after a restart gave loss " + m.loss() + ", the first run " + first + ": the run is not deterministic");
        return false;
    }

    void onMessage(String line) {
        if (!hides(line)) deliver(() -> listener.onMessage(line));
    }

    /** Setup progress of the run's first start (a restart sets up again: that is told by its restart line). */
    void onSetup(ane4j.run.SetupProgress p) {
        if (attachments <= 1) deliver(() -> listener.onSetup(p));
    }

    private void deliver(Runnable r) {
        try {
            delivery.execute(r);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // the run has ended; late events are dropped
        }
    }

    synchronized void finish(RunState s, String message) {
        if (state != RunState.RUNNING) return;
        state = s;
        folder.close();
        if (s == RunState.FAILED) error = message;
        List<StepMetrics> h = history();
        // completes after the listener has seen every step
        deliver(() -> {
            if (s == RunState.FAILED) done.completeExceptionally(new WorkerException(message));
            else done.complete(h);
        });
        delivery.shutdown();
    }

    synchronized long maxStep() { return maxStep; }

    private long replayWindow() { return Math.max(REPLAY_WINDOW, 2L * options.checkpointEvery()); }

    /** The steps reported so far, one per step, in order (downsampled beyond {@link ane4j.run.StepHistory#RECENT}). */
    public synchronized List<StepMetrics> history() { return steps.list(); }

    public synchronized Status status() { return new Status(state, maxStep + 1, options.steps(), restarts, error); }

    /** Asks the worker to checkpoint and stop at the next step boundary; {@link #await} then returns. */
    public void stop() { supervisor.stopTraining(this); }

    /** Blocks until the run ends; returns the step history. @throws WorkerException when it failed */
    public List<StepMetrics> await() {
        try {
            return done.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new WorkerException("[worker] interrupted while waiting for training");
        } catch (ExecutionException e) {
            throw (WorkerException) e.getCause();
        }
    }

    /** {@link #await()} with a limit. @throws WorkerException when it failed or did not end in time */
    public List<StepMetrics> await(Duration timeout) {
        try {
            return done.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new WorkerException("[worker] interrupted while waiting for training");
        } catch (ExecutionException e) {
            throw (WorkerException) e.getCause();
        } catch (TimeoutException e) {
            throw new WorkerException("[worker] training did not finish within " + timeout.toSeconds() + " s (at step " + (maxStep() + 1) + ")");
        }
    }

    public boolean isDone() { return done.isDone(); }
}
