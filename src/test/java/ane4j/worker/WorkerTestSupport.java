package ane4j.worker;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;

/** A very small model and token file (fast worker start-up), and a log that tests can read. */
final class WorkerTestSupport {
    private WorkerTestSupport() {}

    /** dim 32, hidden 64, 1 layer, 2 heads, vocab 64, seqLen 16: static weights spend 2 + 8 compiles at start, 8 per update. */
    static Path microModel(Path dir) throws IOException {
        Path f = dir.resolve("micro.conf");
        Files.writeString(f, "name = micro\ndim = 32\nhiddenDim = 64\nnLayers = 1\nnHeads = 2\nvocabSize = 64\nseqLen = 16\n");
        return f;
    }

    static Path tokens(Path dir) throws IOException {
        Random r = new Random(7);
        ByteBuffer b = ByteBuffer.allocate(8000).order(ByteOrder.LITTLE_ENDIAN);
        while (b.hasRemaining()) b.putShort((short) r.nextInt(64));
        Path f = dir.resolve("tokens.bin");
        Files.write(f, b.array());
        return f;
    }

    static Map<String, String> trainOptions(Path dir, Path runDir, int steps, String weights, int checkpointEvery) throws IOException {
        return Map.of("model", microModel(dir).toString(), "data", tokens(dir).toString(), "steps", Integer.toString(steps),
                "weights", weights, "runDir", runDir.toString(), "checkpointEvery", Integer.toString(checkpointEvery),
                "warmup", "3", "lr", "3e-3", "keep", "3", "backend", "ref");
    }

    /** Collects log lines (thread-safe). */
    static final class Log implements java.util.function.Consumer<String> {
        final List<String> lines = Collections.synchronizedList(new ArrayList<>());

        @Override public void accept(String s) { lines.add(s); }

        List<String> matching(String prefix) {
            synchronized (lines) { return lines.stream().filter(l -> l.startsWith(prefix)).toList(); }
        }
    }

    static Supervisor.Options options(Log log) {
        return Supervisor.Options.defaults().withBackend("ref").withRefStorage("fp16").withHeap("512m").withLog(log);
    }

    /** A run started on the supervisor's transport, watched as the run layer watches it: its steps, its end. */
    static final class Started implements Supervisor.TrainingEvents {
        private final Supervisor supervisor;
        private final ane4j.train.Trainer.Listener listener;
        private final List<ane4j.run.StepMetrics> steps = Collections.synchronizedList(new ArrayList<>());
        private final java.util.concurrent.CompletableFuture<List<ane4j.run.StepMetrics>> end = new java.util.concurrent.CompletableFuture<>();
        final ane4j.run.StopFlag stopFlag = new ane4j.run.StopFlag();
        volatile ane4j.run.RunState state = ane4j.run.RunState.RUNNING;

        private Started(Supervisor supervisor, ane4j.train.Trainer.Listener listener) {
            this.supervisor = supervisor;
            this.listener = listener != null ? listener : m -> {};
        }

        @Override public void onStep(ane4j.run.StepMetrics m) {
            steps.add(m);
            listener.onStep(m);
        }

        @Override public void onEnd(ane4j.run.RunState s, String error) {
            state = s;
            if (s == ane4j.run.RunState.FAILED) end.completeExceptionally(new WorkerException(error));
            else end.complete(List.copyOf(steps));
        }

        long nextStep() {
            synchronized (steps) { return steps.isEmpty() ? 0 : steps.getLast().step() + 1; }
        }

        boolean isDone() { return end.isDone(); }

        void stop() { supervisor.stopTraining(stopFlag); }

        List<ane4j.run.StepMetrics> await(java.time.Duration timeout) throws Exception {
            try {
                return end.get(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                throw (WorkerException) e.getCause();
            }
        }
    }

    static Started start(Supervisor s, ane4j.run.TrainOptions o, ane4j.train.Trainer.Listener listener) {
        Started run = new Started(s, listener);
        s.startTraining(ane4j.run.RunSpec.of(o.toMap()), run, run.stopFlag);
        return run;
    }
}
