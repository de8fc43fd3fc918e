package ane4j.mil;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A MIL program: named functions plus the weight files its BLOBFILE constants point into. Equality compares the graph
 * only (functions, ops, types, constants, BLOBFILE references); weight payloads are compared through {@link #weights()}.
 */
public final class Program {
    private final Map<String, Function> functions;
    private final Weights weights;

    public Program(Map<String, Function> functions, Weights weights) {
        if (functions.isEmpty()) throw new MilException("[mil] a program needs at least one function");
        this.functions = Collections.unmodifiableMap(new LinkedHashMap<>(functions));
        this.weights = Objects.requireNonNull(weights);
    }

    public Map<String, Function> functions() { return functions; }

    public Function function(String name) {
        Function f = functions.get(name);
        if (f == null) throw new MilException("[mil] no function '" + name + "' (functions: " + functions.keySet() + ")");
        return f;
    }

    /** The function called main, or the only one. */
    public Function main() {
        if (functions.containsKey("main")) return functions.get("main");
        if (functions.size() == 1) return functions.values().iterator().next();
        throw new MilException("[mil] no function 'main' among " + functions.keySet());
    }

    public Weights weights() { return weights; }

    /** The same graph with other weight payloads (e.g. after a parse, with the files read from disk). */
    public Program withWeights(Weights w) { return new Program(functions, w); }

    public Opset requiredOpset() {
        Opset max = Opset.IOS15;
        for (Function f : functions.values()) if (f.requiredOpset().compareTo(max) > 0) max = f.requiredOpset();
        return max;
    }

    @Override public boolean equals(Object o) { return o instanceof Program p && p.functions.equals(functions); }

    @Override public int hashCode() { return functions.hashCode(); }

    @Override public String toString() { return MilWriter.write(this, Dialect.IOS18); }
}
