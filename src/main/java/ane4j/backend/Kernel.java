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
