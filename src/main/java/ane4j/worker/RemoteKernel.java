package ane4j.worker;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.mil.TensorType;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A kernel compiled and run by the supervised worker, used like a local {@link Kernel}. The user's JVM keeps its MIL
 * text (and weight files), so a restarted worker compiles it again without the caller noticing. Buffers from
 * {@link #allocateInput}/{@link #allocateOutput} are shared memory: evaluating with them copies nothing. Any other
 * {@link TensorBuffer} works too, through one copy into a shared scratch buffer. Closing frees the shared buffers this
 * kernel allocated.
 */
public final class RemoteKernel implements Kernel {
    private final Supervisor supervisor;
    private final int id;
    private final String milText;
    private final String functionName;
    private final Path modelDir;
    private final List<SharedMemory.Region> owned = new ArrayList<>();
    private final Map<String, TensorBuffer> scratch = new HashMap<>();
    private volatile List<TensorSpec> inputs = List.of(), outputs = List.of();
    private volatile boolean closed;
    private volatile long workerNanos = -1;

    RemoteKernel(Supervisor supervisor, int id, String milText, String functionName, Path modelDir) {
        this.supervisor = supervisor;
        this.id = id;
        this.milText = milText;
        this.functionName = functionName;
        this.modelDir = modelDir;
    }

    int id() { return id; }

    /** The MIL text this kernel was compiled from (the source of truth for recompiles). */
    public String milText() { return milText; }

    /** The compiled function ({@code ""}: main or the only one). */
    public String functionName() { return functionName; }

    /** The directory {@code @model_path/} BLOBFILE paths resolve against, or null. */
    public Path modelDir() { return modelDir; }

    void specs(List<TensorSpec> in, List<TensorSpec> out) {
        this.inputs = in;
        this.outputs = out;
    }

    @Override public List<TensorSpec> inputs() { return inputs; }

    @Override public List<TensorSpec> outputs() { return outputs; }

    @Override
    public void evaluate(Map<String, TensorBuffer> in, Map<String, TensorBuffer> out) {
        if (closed) throw new IllegalStateException("[kernel] kernel " + id + " is closed");
        supervisor.evaluate(this, in, out);
    }

    @Override public TensorBuffer allocateInput(String name) { return allocate(input(name).type()); }

    @Override public TensorBuffer allocateOutput(String name) { return allocate(output(name).type()); }

    private TensorBuffer allocate(TensorType type) {
        SharedMemory.Region r = supervisor.allocateRegion(type.byteSize());
        synchronized (owned) { owned.add(r); }
        return TensorBuffer.wrap(r.segment(), type);
    }

    /** A shared buffer standing in for a caller's buffer that is not shared memory. */
    TensorBuffer scratch(String key, TensorType type) {
        synchronized (scratch) {
            TensorBuffer b = scratch.get(key);
            if (b == null || !b.type().equals(type)) {
                b = allocate(type);
                scratch.put(key, b);
            }
            return b;
        }
    }

    void workerNanos(long ns) { workerNanos = ns; }

    /** How long the last {@link #evaluate} ran inside the worker (the rest of its time is the round trip), or -1. */
    public long lastWorkerNanos() { return workerNanos; }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        List<SharedMemory.Region> rs;
        synchronized (owned) {
            rs = new ArrayList<>(owned);
            owned.clear();
        }
        supervisor.release(this, rs);
    }

    @Override public String toString() { return "RemoteKernel#" + id + inputs + "->" + outputs; }
}
