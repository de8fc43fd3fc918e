package ane4j.backend.ref;

import ane4j.backend.BackendException;
import ane4j.backend.Fp16;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.blas.Parallel;
import ane4j.mil.DType;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;

/**
 * A function compiled by the {@link Planner}: a list of steps over planned fp32 buffers. Evaluating converts the inputs
 * into their buffers (fp32 native inputs are read in place), runs the steps, and converts the outputs (fp32 and
 * float-held outputs are written in place by the steps, when nothing else shares their memory).
 */
public final class RefKernel implements Kernel {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    /** One planned computation, labelled for error messages. */
    record Step(String label, Runnable run) {}

    private final String function;
    private final List<TensorSpec> inputs, outputs;
    private final List<Storage> inputStorages;
    /** Per fp16 input: the fp32 buffer a packed fp16 input is converted into, allocated at its first use (null before). */
    private final MemorySegment[] staging;
    private final List<T> outputViews;
    private final List<Step> steps;
    private final List<String> warnings;
    private final Arena arena;
    private final MemorySegment[] confinedCopy;
    private boolean closed;
    /** The function and its first output type: tells the training kernels apart in the profile (all are "main"). */
    private final String profileName;
    private static final Thread OTHER_THREAD = new Thread(() -> {});
    /** Whether every fp16 value the steps leave is already an fp16 value (fp16 storage: each op rounds its result). */
    private final boolean fp16Results;

    RefKernel(String function, List<TensorSpec> inputs, List<TensorSpec> outputs, List<Storage> inputStorages,
              List<T> outputViews, List<Step> steps, List<String> warnings, Arena arena, boolean fp16Results) {
        this.function = function;
        this.fp16Results = fp16Results;
        this.inputs = List.copyOf(inputs);
        this.outputs = List.copyOf(outputs);
        this.inputStorages = inputStorages;
        this.outputViews = outputViews;
        this.steps = List.copyOf(steps);
        this.warnings = List.copyOf(warnings);
        this.arena = arena;
        this.profileName = function + (outputs.isEmpty() ? "" : "→" + outputs.get(0).type());
        this.staging = new MemorySegment[inputs.size()];
        this.confinedCopy = new MemorySegment[inputs.size()];
    }

    @Override public List<TensorSpec> inputs() { return inputs; }

    /** fp16 inputs held as floats: {@link #evaluate} reads them in place, as it reads fp32 ones. */
    @Override public TensorBuffer allocateDirectInput(String name) { return direct(input(name)); }

    /** fp16 outputs held as floats: {@link #evaluate} rounds its fp32 results into them without packing them. */
    @Override public TensorBuffer allocateDirectOutput(String name) { return direct(output(name)); }

    private static TensorBuffer direct(TensorSpec s) {
        return s.type().dtype() == DType.FP16 ? TensorBuffer.allocateFloatHeld(s.type()) : TensorBuffer.allocate(s.type());
    }

    @Override public List<TensorSpec> outputs() { return outputs; }

    /** Compile-time warnings (e.g. an ignored attn_mask). */
    public List<String> warnings() { return warnings; }

    /** Number of planned steps (views cost none). */
    public int stepCount() { return steps.size(); }

    @Override
    public synchronized void evaluate(Map<String, TensorBuffer> in, Map<String, TensorBuffer> out) {
        if (closed) throw new IllegalStateException("[kernel] " + function + " is closed");
        long t0 = Profile.ON ? System.nanoTime() : 0;
        for (int i = 0; i < inputs.size(); i++) {
            TensorSpec s = inputs.get(i);
            TensorBuffer b = Kernel.argument(function, in, s, "input");
            Storage st = inputStorages.get(i);
            boolean fp32 = b.dtype() == DType.FP32 || b.floatHeld();
            if (fp32 && b.segment().isAccessibleBy(OTHER_THREAD)) st.seg = b.segment();
            else if (fp32) {
                // a thread-confined fp32 (or float-held) input: copy it, the GEMM uses two threads
                if (confinedCopy[i] == null) confinedCopy[i] = arena.allocate(Math.max(1, st.floats) * 4, 64);
                MemorySegment.copy(b.segment(), 0, confinedCopy[i], 0, st.floats * 4);
                st.seg = confinedCopy[i];
            }
            else {
                if (staging[i] == null) staging[i] = arena.allocate(Math.max(1, st.floats) * 4, 64);
                st.seg = staging[i];
                toFloats(b, staging[i]);
            }
        }
        for (TensorSpec s : outputs) Kernel.argument(function, out, s, "output");
        // outputs that can hold the results as the steps leave them are written by the steps themselves, in place
        MemorySegment[] planned = new MemorySegment[outputs.size()];
        for (int i = 0; i < outputs.size(); i++) {
            T v = outputViews.get(i);
            TensorBuffer b = out.get(outputs.get(i).name());
            if (bindable(i, v, b, in, out)) {
                planned[i] = v.st.seg;
                v.st.seg = b.segment();
            }
        }
        if (Profile.ON) t0 = Profile.add(profileName, "(inputs)", t0);
        try {
            for (Step step : steps) {
                try {
                    step.run().run();
                    if (Profile.ON) t0 = Profile.add(profileName, step.label(), t0);
                } catch (BackendException e) {
                    throw e;
                } catch (RuntimeException e) {
                    throw new BackendException("[" + step.label() + "] failed: " + e, e);
                }
            }
            for (int i = 0; i < outputs.size(); i++)
                if (planned[i] == null) fromView(outputViews.get(i), out.get(outputs.get(i).name()), fp16Results);
        } finally {
            for (int i = 0; i < outputs.size(); i++) if (planned[i] != null) outputViews.get(i).st.seg = planned[i];
        }
        if (Profile.ON) Profile.add(profileName, "(outputs)", t0);
        for (Storage st : inputStorages) st.seg = null;
    }

    /**
     * Whether output i may be computed straight into b: b holds floats as the steps leave them (fp32, or fp16 held as
     * floats when every op rounds its result), the output is a whole planned buffer of its own, b is reachable from
     * the pool's threads and shares no memory with an input or another output.
     */
    private boolean bindable(int i, T v, TensorBuffer b, Map<String, TensorBuffer> in, Map<String, TensorBuffer> out) {
        boolean floats = b.dtype() == DType.FP32 && !b.floatHeld() || b.dtype() == DType.FP16 && b.floatHeld() && fp16Results;
        if (!floats || v.st.kind != Storage.Kind.TEMP || !v.isContiguous() || v.off != 0 || v.count() != v.st.floats) return false;
        if (!b.segment().isAccessibleBy(OTHER_THREAD) || b.segment().byteSize() < 4 * v.count()) return false;
        for (int j = 0; j < i; j++) {
            TensorBuffer other = out.get(outputs.get(j).name());
            if (outputViews.get(j).st == v.st || other.segment().asOverlappingSlice(b.segment()).isPresent()) return false;
        }
        for (TensorBuffer x : in.values()) if (x.segment().asOverlappingSlice(b.segment()).isPresent()) return false;
        return true;
    }

    /** Converts a buffer into fp32 floats, in two halves on two threads when large. */
    private static void toFloats(TensorBuffer b, MemorySegment dst) {
        long n = b.count();
        if (b.dtype() == DType.FP16 && n >= PARALLEL_CONVERT_MIN) {
            Parallel.forEach(2, half -> Fp16.toFloats(b.segment(), half * (n / 2), dst, half * (n / 2), half == 0 ? n / 2 : n - n / 2));
            return;
        }
        if (b.dtype() == DType.FP16) { Fp16.toFloats(b.segment(), 0, dst, 0, n); return; }
        for (long i = 0; i < n; i++) dst.setAtIndex(F, i, b.get(i));
    }

    /** Conversions from this many elements run in two halves on two threads (about 0.6 ns per element on one). */
    private static final long PARALLEL_CONVERT_MIN = 1 << 18;

    private static void fromView(T v, TensorBuffer b, boolean fp16Results) {
        MemorySegment s = v.st.seg, d = b.segment();
        if (v.isContiguous()) {
            long n = v.count();
            switch (b.dtype()) {
                case FP32 -> MemorySegment.copy(s, v.off * 4, d, 0, n * 4);
                case FP16 -> {
                    if (b.floatHeld() && fp16Results) {
                        // already fp16 values: the floats as they are
                        MemorySegment.copy(s, v.off * 4, d, 0, n * 4);
                        return;
                    }
                    if (b.floatHeld()) {
                        long off = v.off;
                        if (n >= PARALLEL_CONVERT_MIN) Parallel.forEach(2, half -> Fp16.roundInto(s, off + half * (n / 2), d, half * (n / 2), half == 0 ? n / 2 : n - n / 2));
                        else Fp16.roundInto(s, off, d, 0, n);
                        return;
                    }
                    if (n >= PARALLEL_CONVERT_MIN) {
                        long off = v.off;
                        Parallel.forEach(2, half -> Fp16.fromFloats(s, off + half * (n / 2), d, half * (n / 2), half == 0 ? n / 2 : n - n / 2));
                    } else Fp16.fromFloats(s, v.off, d, 0, n);
                }
                default -> { for (long i = 0; i < n; i++) b.set(i, s.getAtIndex(F, v.off + i)); }
            }
            return;
        }
        long[] dense = ane4j.mil.Shapes.strides(v.shape);
        Iter it = new Iter(v.shape, new long[][] {dense, v.strides}, new long[] {0, v.off});
        long di = it.inner[0], si = it.inner[1];
        it.run((o, n) -> { for (int i = 0; i < n; i++) b.set(o[0] + i * di, s.getAtIndex(F, o[1] + i * si)); });
    }

    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        arena.close();
    }
}
