package ane4j.blas;

import java.util.function.IntConsumer;

/**
 * A parallel loop on the threads that also run ane4j's split GEMMs (the caller plus one thread per further core), for
 * work that sits between GEMMs: sharing one set of threads avoids waking a second pool's threads and having more
 * runnable threads than cores.
 */
public final class Parallel {
    private Parallel() {}

    private static final int THREADS = Math.max(1, Runtime.getRuntime().availableProcessors());

    /** Threads a loop runs on: the caller and the pool (the number of cores). */
    public static int threads() { return THREADS; }

    /** Runs {@code body(0 … blocks−1)}, each once; sequentially on one core or when called from a pool thread. */
    public static void forEach(int blocks, IntConsumer body) {
        if (blocks <= 1 || THREADS == 1 || ThreadPool.isWorker()) {
            for (int i = 0; i < blocks; i++) body.accept(i);
            return;
        }
        ThreadPool.shared().run(blocks, body);
    }
}
