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
}
