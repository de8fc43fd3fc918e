package ane4j.backend.ane;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A function compiled for the ANE: an {@link AneProgram} whose inputs and outputs are IOSurfaces. Any
 * {@link TensorBuffer}s of the right types work ({@link #evaluate} copies them in and out), but the buffers from
 * {@link #allocateInput}/{@link #allocateOutput} ARE the surfaces: writing one writes the ANE's input, and evaluate skips
 * the copy for them. Between evaluations those surfaces stay locked for the CPU; evaluate unlocks them while the ANE runs.
 * After {@link #close()} they throw instead of touching freed memory. {@link #bind()} gives input surfaces of their own
 * with their own request (one per layer in training, as maderix keeps them), evaluated without any input copy.
 * Not thread-safe (calls are serialised).
 */
public final class AneKernel implements Kernel {
    private final String function;
    private final List<TensorSpec> inputs, outputs;
    private final AneProgram program;
    private final String milText;
    private final MilDialect dialect;
    private final Map<String, Slot> slots = new LinkedHashMap<>();
    private final Arena scope = Arena.ofShared();   // the lifetime of the zero-copy surface buffers
    private final List<Bound> bindings = new ArrayList<>();
    private long evaluations, lastEvaluateNanos, copiedInputBytes;
    private boolean closed;

    /**
     * One input or output: its surface, and the zero-copy buffer on it once handed out (with the CPU lock it holds). A
     * strided slot (macOS ≥ 27, rows not a multiple of 64 bytes: {@link #rowStride}) has no zero-copy buffer: it is
     * copied row by row at every evaluate ({@code plain} is the buffer handed out instead).
     */
    private static final class Slot {
        final TensorSpec spec;
        final AneSurface surface;
        final boolean input;
        final long rowBytes, stride, rows;       // stride == rowBytes: packed
        TensorBuffer buffer, plain;
        AneSurface.Access held;

        Slot(TensorSpec spec, AneSurface surface, boolean input, boolean rows64) {
            this.spec = spec;
            this.surface = surface;
            this.input = input;
            int[] sh = spec.type().shape();
            this.rowBytes = (long) sh[sh.length - 1] * spec.type().dtype().byteSize();
            this.stride = rowStride(rowBytes, rows64);
            this.rows = rowBytes == 0 ? 0 : spec.type().byteSize() / rowBytes;
        }

        boolean strided() { return stride != rowBytes; }
    }

    /**
     * The bytes between two rows of a tensor in its surface: packed, except on macOS ≥ 27 where the I/O layouts pad rows to
     * 64 bytes (docs/macos27-ane.md C7, pmetal's AneTensorLayout restride; one source; not yet run on Apple hardware).
     */
    static long rowStride(long rowBytes, boolean rows64) { return rows64 ? (rowBytes + 63) / 64 * 64 : rowBytes; }

    /** The surface bytes a tensor needs with its row stride. */
    static long surfaceBytes(TensorSpec spec, boolean rows64) {
        int[] sh = spec.type().shape();
        long row = (long) sh[sh.length - 1] * spec.type().dtype().byteSize();
        return row == 0 ? spec.type().byteSize() : spec.type().byteSize() / row * rowStride(row, rows64);
    }

    AneKernel(String function, List<TensorSpec> inputs, List<TensorSpec> outputs, AneProgram program, String milText, MilDialect dialect) {
        this(function, inputs, outputs, program, milText, dialect, false);
    }

    AneKernel(String function, List<TensorSpec> inputs, List<TensorSpec> outputs, AneProgram program, String milText, MilDialect dialect, boolean rows64) {
        this.dialect = dialect;
        this.function = function;
        this.inputs = List.copyOf(inputs);
        this.outputs = List.copyOf(outputs);
        this.program = program;
        this.milText = milText;
        for (TensorSpec s : inputs) slots.put(s.name(), new Slot(s, program.input(s.name()), true, rows64));
        for (TensorSpec s : outputs) slots.put(s.name(), new Slot(s, program.output(s.name()), false, rows64));
    }

    /** Packed bytes → rows at {@code stride} (zeros between). */
    private static MemorySegment strided(MemorySegment packed, Slot s) {
        MemorySegment out = MemorySegment.ofArray(new byte[Math.toIntExact(s.rows * s.stride)]);
        for (long r = 0; r < s.rows; r++) MemorySegment.copy(packed, r * s.rowBytes, out, r * s.stride, s.rowBytes);
        return out;
    }

    @Override public List<TensorSpec> inputs() { return inputs; }

    @Override public List<TensorSpec> outputs() { return outputs; }

    /** The program behind this kernel (hex id, directory, compile and load times, surfaces). */
    public AneProgram program() { return program; }

    /** Whether this kernel's program was compiled, loaded from the aned daemon's cache, or shared with a live identical one. */
    public AneProgram.Origin origin() { return program.origin(); }

    /** The MIL dialect this kernel was compiled in. */
    public MilDialect dialect() { return dialect; }

    /** The MIL text that was compiled. */
    public String milText() { return milText; }

    /** Wall time of the last {@link #evaluate}, copies included. */
    public synchronized long lastEvaluateNanos() { return lastEvaluateNanos; }

    public synchronized long evaluations() { return evaluations; }

    /** Bytes {@link #evaluate} copied from caller buffers into input surfaces so far (none for surface buffers and bindings). */
    public synchronized long copiedInputBytes() { return copiedInputBytes; }

    /** True: an input buffer that is not a surface costs a whole copy at every evaluate. */
    @Override public boolean prefersBoundInputs() { return true; }

    /** Input surfaces of their own ({@link AneProgram#newInputSet()}), written in place, evaluated with no input copy. */
    @Override
    public synchronized Binding bind() {
        checkOpen();
        for (TensorSpec spec : inputs)
            if (slots.get(spec.name()).strided())
                throw new ane4j.backend.BackendException("[kernel] " + function + " (ane): input '" + spec.name() + "' " + spec.type() + " has rows of "
                        + slots.get(spec.name()).rowBytes + " bytes, which macOS 27 reads at a 64-byte stride: it cannot be bound in place; "
                        + "evaluate with plain buffers (copied row by row) or make its last axis a multiple of 64 bytes");
        Bound b = new Bound(program.newInputSet());
        bindings.add(b);
        return b;
    }

    /** The input's IOSurface as a buffer (always the same one): write it and pass it to evaluate, no copy. */
    @Override
    public synchronized TensorBuffer allocateInput(String name) { return surfaceBuffer(input(name).name()); }

    /** The output's IOSurface as a buffer (always the same one): evaluate leaves the result there, no copy. */
    @Override
    public synchronized TensorBuffer allocateOutput(String name) { return surfaceBuffer(output(name).name()); }

    private TensorBuffer surfaceBuffer(String name) {
        checkOpen();
        Slot s = slots.get(name);
        if (s.strided()) {                          // no packed view of a strided surface: a plain buffer, copied by evaluate
            if (s.plain == null) s.plain = TensorBuffer.allocate(s.spec.type());
            return s.plain;
        }
        if (s.buffer == null) {
            s.held = s.surface.lockForWrite();
            MemorySegment memory = s.held.segment().reinterpret(scope, null);
            s.buffer = TensorBuffer.wrap(memory, s.spec.type());
        }
        return s.buffer;
    }

    @Override
    public synchronized void evaluate(Map<String, TensorBuffer> in, Map<String, TensorBuffer> out) {
        checkOpen();
        long t0 = System.nanoTime();
        for (TensorSpec spec : inputs) {
            Slot s = slots.get(spec.name());
            TensorBuffer b = Kernel.argument(function, in, spec, "input").packed();
            if (isSurface(s, b)) continue;
            if (s.strided()) s.surface.write(strided(b.segment(), s));
            else if (s.held != null) s.held.segment().copyFrom(b.segment());
            else s.surface.write(b.segment());
            copiedInputBytes += b.byteSize();
        }
        run(program::evaluate, out, t0);
    }

    /** Checks the outputs, unlocks the held surfaces, runs {@code evaluate}, locks them again, copies the outputs out. */
    private void run(Runnable evaluate, Map<String, TensorBuffer> out, long t0) {
        for (TensorSpec spec : outputs) Kernel.argument(function, out, spec, "output");
        for (Slot s : slots.values()) if (s.held != null) { s.held.close(); s.held = null; }
        try {
            evaluate.run();
        } finally {
            for (Slot s : slots.values()) if (s.buffer != null) s.held = s.surface.lockForWrite();
        }
        for (TensorSpec spec : outputs) {
            Slot s = slots.get(spec.name());
            TensorBuffer b = out.get(spec.name());
            if (isSurface(s, b)) continue;
            TensorBuffer raw = b.floatHeld() ? TensorBuffer.allocate(b.type()) : b;
            if (s.strided()) {
                MemorySegment padded = MemorySegment.ofArray(new byte[Math.toIntExact(s.rows * s.stride)]);
                s.surface.read(padded);
                for (long r = 0; r < s.rows; r++) MemorySegment.copy(padded, r * s.stride, raw.segment(), r * s.rowBytes, s.rowBytes);
            } else if (s.held != null) raw.segment().copyFrom(s.held.segment());
            else s.surface.read(raw.segment());
            if (raw != b) b.copyFrom(raw);
        }
        evaluations++;
        lastEvaluateNanos = System.nanoTime() - t0;
    }

    /** A binding: its input surfaces stay locked for the CPU (and written in place) except while its request runs. */
    private final class Bound implements Binding {
        private final AneProgram.InputSet set;
        private final Map<String, TensorBuffer> buffers = new LinkedHashMap<>();
        private final List<AneSurface.Access> held = new ArrayList<>();
        private boolean closed;

        Bound(AneProgram.InputSet set) {
            this.set = set;
            for (TensorSpec spec : inputs) {
                AneSurface.Access a = set.input(spec.name()).lockForWrite();
                held.add(a);
                buffers.put(spec.name(), TensorBuffer.wrap(a.segment().reinterpret(scope, null), spec.type()));
            }
        }

        @Override
        public TensorBuffer input(String name) {
            synchronized (AneKernel.this) {
                check();
                return buffers.get(AneKernel.this.input(name).name());
            }
        }

        @Override
        public void evaluate(Map<String, TensorBuffer> out) {
            synchronized (AneKernel.this) {
                check();
                long t0 = System.nanoTime();
                run(() -> {
                    for (AneSurface.Access a : held) a.close();
                    held.clear();
                    try {
                        set.evaluate();
                    } finally {
                        for (TensorSpec spec : inputs) held.add(set.input(spec.name()).lockForWrite());
                    }
                }, out, t0);
            }
        }

        private void check() {
            checkOpen();
            if (closed) throw new IllegalStateException("[kernel] " + function + " (ane): this binding is closed");
        }

        @Override
        public void close() {
            synchronized (AneKernel.this) {
                if (closed) return;
                bindings.remove(this);
                release();
            }
        }

        void release() {
            if (closed) return;
            closed = true;
            for (AneSurface.Access a : held) a.close();
            held.clear();
            set.close();
        }
    }

    private static boolean isSurface(Slot s, TensorBuffer b) {
        return s.buffer != null && (b == s.buffer || (b.segment().isNative() && b.segment().address() == s.buffer.segment().address()));
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("[kernel] " + function + " (ane) is closed");
    }

    /** Unlocks the surfaces, invalidates the zero-copy buffers, unloads the model and frees the surfaces. */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        try {
            for (Slot s : slots.values()) if (s.held != null) { s.held.close(); s.held = null; }
            for (Bound b : List.copyOf(bindings)) b.release();
            bindings.clear();
            scope.close();
        } finally {
            program.close();
        }
    }

    @Override public String toString() { return "AneKernel(" + function + ", " + program.identifier() + ")"; }
}
