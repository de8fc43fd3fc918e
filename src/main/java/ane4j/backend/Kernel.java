package ane4j.backend;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One compiled MIL function, ready to run. Inputs and outputs are {@link TensorBuffer}s of exactly the function's
 * types. Not thread-safe: evaluate from one thread at a time. Closing releases its buffers (and, on the ANE, the model).
 */
public interface Kernel extends AutoCloseable {
    List<TensorSpec> inputs();

    List<TensorSpec> outputs();

    /** Runs the function: reads every input, overwrites every output. */
    void evaluate(Map<String, TensorBuffer> inputs, Map<String, TensorBuffer> outputs);

    /** Runs the function into freshly allocated outputs (in the function's output order). */
    default Map<String, TensorBuffer> evaluate(Map<String, TensorBuffer> inputs) {
        Map<String, TensorBuffer> out = new LinkedHashMap<>();
        for (TensorSpec s : outputs()) out.put(s.name(), TensorBuffer.allocate(s.type()));
        evaluate(inputs, out);
        return out;
    }

    default TensorSpec input(String name) { return find(inputs(), name, "input"); }

    default TensorSpec output(String name) { return find(outputs(), name, "output"); }

    default TensorBuffer allocateInput(String name) { return TensorBuffer.allocate(input(name).type()); }

    default TensorBuffer allocateOutput(String name) { return TensorBuffer.allocate(output(name).type()); }

    /**
     * An input buffer this kernel reads without converting it, for a caller that writes it at every step and passes it
     * to this kernel only: the reference backend holds fp16 values as floats ({@link TensorBuffer#allocateFloatHeld}),
     * which it reads in place; every other backend returns {@link #allocateInput}.
     */
    default TensorBuffer allocateDirectInput(String name) { return allocateInput(name); }

    /** The output counterpart of {@link #allocateDirectInput}: written by this kernel without converting, read as any buffer. */
    default TensorBuffer allocateDirectOutput(String name) { return allocateOutput(name); }

    /**
     * Whether a caller that keeps several input sets for this kernel (one per layer, say) should hold them as
     * {@link #bind() bindings}: true where handing a separate buffer to {@link #evaluate} costs a copy of the whole
     * input (the ANE's IOSurfaces), false where bindings would only cost memory (the reference backend: one direct
     * input restaged per layer on demand costs a write of the weights, several held at once their fp32 size each).
     */
    default boolean prefersBoundInputs() { return false; }

    /**
     * A set of inputs of its own: write them in place through {@link Binding#input} and {@link Binding#evaluate}
     * runs the function on them without copying them (on the ANE: input IOSurfaces with their own request). This
     * default keeps buffers from {@link #allocateInput} and passes them to {@link #evaluate}.
     */
    default Binding bind() {
        Map<String, TensorBuffer> in = new LinkedHashMap<>();
        for (TensorSpec s : inputs()) in.put(s.name(), TensorBuffer.allocate(s.type()));
        return new Binding() {
            @Override public TensorBuffer input(String name) { return in.get(Kernel.this.input(name).name()); }

            @Override public void evaluate(Map<String, TensorBuffer> outputs) { Kernel.this.evaluate(in, outputs); }

            @Override public void close() {}
        };
    }

    /** Inputs bound to a kernel ({@link #bind()}); closed before the kernel, or with it. */
    interface Binding extends AutoCloseable {
        /** The bound input: what is written here is what the next {@link #evaluate} reads. */
        TensorBuffer input(String name);

        /** Runs the kernel on the bound inputs: overwrites every output. */
        void evaluate(Map<String, TensorBuffer> outputs);

        @Override void close();
    }

    @Override void close();

    /**
     * The buffer for {@code spec} in an evaluate map, checked for presence and type, with one-line errors naming the
     * function ({@code what}: "input" or "output"); for implementations.
     */
    static TensorBuffer argument(String function, Map<String, TensorBuffer> m, TensorSpec spec, String what) {
        TensorBuffer b = m.get(spec.name());
        if (b == null) throw new IllegalArgumentException("[kernel] " + function + ": missing " + what + " '" + spec.name() + "' " + spec.type() + " (given: " + m.keySet() + ")");
        if (!b.type().equals(spec.type()))
            throw new IllegalArgumentException("[kernel] " + function + ": " + what + " '" + spec.name() + "' is " + b.type() + " but the function has " + spec.type());
        return b;
    }

    private static TensorSpec find(List<TensorSpec> specs, String name, String what) {
        for (TensorSpec s : specs) if (s.name().equals(name)) return s;
        throw new IllegalArgumentException("[kernel] no " + what + " '" + name + "' (" + what + "s: " + specs.stream().map(TensorSpec::name).toList() + ")");
    }
}
