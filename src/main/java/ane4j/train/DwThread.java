package ane4j.train;

import ane4j.train.TrainingStep.Phase;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The weight-gradient thread of a {@link TrainingStep}: the dW sgemms run on it, in the order they were queued,
 * overlapping the backend's work of the layers below. Waiting for it is timed as {@link Phase#DW_WAIT}.
 */
final class DwThread implements AutoCloseable {
    private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "ane4j-dw");
        t.setDaemon(true);
        return t;
    });
    private final List<Future<?>> pending = new ArrayList<>();
    private final StepTimer timer;

    DwThread(StepTimer timer) { this.timer = timer; }

    /** Queues a task; the future says when it has run (and so stopped reading its inputs). */
    Future<?> submit(Runnable task) {
        Future<?> f = thread.submit(task);
        pending.add(f);
        return f;
    }

    /** Waits until task {@code f} has run (tasks run in order: every task queued before it too). */
    void await(Future<?> f) {
        try (var _ = timer.phase(Phase.DW_WAIT)) {
            get(f);
        }
    }

    /** Waits until every queued task has run. */
    void awaitAll() {
        try (var _ = timer.phase(Phase.DW_WAIT)) {
            for (Future<?> f : pending) get(f);
        } finally {
            pending.clear();
        }
    }

    private static void get(Future<?> f) {
        try {
            f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("[train] interrupted while waiting for weight gradients", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("[train] a weight-gradient sgemm failed: " + e.getCause(), e.getCause());
        }
    }

    @Override public void close() { thread.shutdownNow(); }
}
