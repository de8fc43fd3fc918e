package ane4j.mil;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;

/** Builds a {@link Program}: functions are added in order; weights from every function go into one {@link Weights}. */
public final class ProgramBuilder {
    private final Map<String, Function> functions = new LinkedHashMap<>();
    private final Weights.Builder weights = new Weights.Builder();
    private String weightFile;

    ProgramBuilder() {}

    /**
     * Puts every weight of the following functions into one file {@code @model_path/weights/<file>} (as the peak and INT8
     * benchmarks do) instead of one file per weight (the default, as the training kernels do).
     */
    public ProgramBuilder packWeightsInto(String file) {
        this.weightFile = file;
        return this;
    }

    public ProgramBuilder function(String name, Consumer<FunctionBuilder> body) {
        if (functions.containsKey(name)) throw new MilException("[mil] function '" + name + "' is defined twice");
        FunctionBuilder f = new FunctionBuilder(name, weights, weightFile);
        body.accept(f);
        functions.put(name, f.build());
        return this;
    }

    public Program build() { return new Program(functions, weights.build()); }
}
