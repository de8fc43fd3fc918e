package ane4j.blas;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;

/**
 * A few daemon threads that help the calling thread through the blocks of one GEMM. The caller takes blocks too, so a
 * product never waits for a busy pool: blocks nobody has started when the caller is free are done by the caller, and
 * several callers (the training step's main and weight-gradient threads) can share the pool without deadlock.
 */
final class ThreadPool {
    private static volatile ThreadPool shared;
    private static final ThreadLocal<Boolean> WORKER = ThreadLocal.withInitial(() -> false);

    private final LinkedBlockingQueue<Runnable> queue = new LinkedBlockingQueue<>();
    private final int helpers;

    private ThreadPool(int helpers) {
        this.helpers = helpers;
        for (int i = 0; i < helpers; i++) {
            Thread t = new Thread(this::work, "ane4j-blas-" + (i + 1));
            t.setDaemon(true);
            t.start();
        }
    }

    /** The process-wide pool: one helper thread per core beyond the caller's (created on first use). */
    static ThreadPool shared() {
        ThreadPool p = shared;
        if (p != null) return p;
        synchronized (ThreadPool.class) {
            if (shared == null) shared = new ThreadPool(Math.max(1, Runtime.getRuntime().availableProcessors() - 1));
            return shared;
        }
    }

    /** True on a pool thread: a GEMM called from one runs in one piece. */
    static boolean isWorker() { return WORKER.get(); }

    private void work() {
        WORKER.set(true);
        while (true) {
            try {
                Runnable r = queue.poll();
                // a short spin before sleeping: the parallel loops of one kernel evaluation follow each other within
                // microseconds, and waking a sleeping thread (a halted vCPU in a VM) can cost more than a block's work
                for (long until = System.nanoTime() + SPIN_NANOS; r == null && System.nanoTime() < until; r = queue.poll()) Thread.onSpinWait();
                (r != null ? r : queue.take()).run();
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** How long an idle pool thread polls before it sleeps (far below OpenBLAS's own spin, which took whole cores). */
    private static final long SPIN_NANOS = Long.getLong("ane4j.blas.spinMicros", 50) * 1000;

    /** Runs {@code body(0 … blocks−1)}, each once, on the caller and the pool; rethrows the first failure. */
    void run(int blocks, IntConsumer body) {
        AtomicInteger next = new AtomicInteger(), done = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread caller = Thread.currentThread();
        Runnable take = () -> {
            for (int i; (i = next.getAndIncrement()) < blocks; ) {
                try {
                    body.accept(i);
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
                if (done.incrementAndGet() == blocks) java.util.concurrent.locks.LockSupport.unpark(caller);
            }
        };
        for (int i = 0; i < Math.min(helpers, blocks - 1); i++) queue.add(take);
        // while the caller runs blocks it is one of the loop's threads: a GEMM or loop inside a block runs in one piece
        // there too, as on the pool threads (the other threads are busy with this loop's blocks)
        boolean wasWorker = WORKER.get();
        WORKER.set(true);
        try {
            take.run();
        } finally {
            WORKER.set(wasWorker);
        }
        while (done.get() < blocks) java.util.concurrent.locks.LockSupport.park(this);
        Throwable t = failure.get();
        if (t instanceof RuntimeException r) throw r;
        if (t instanceof Error e) throw e;
        if (t != null) throw new IllegalStateException("[sgemm] a block failed: " + t, t);
    }
}
