package ane4j.train;

import ane4j.backend.Backend;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.chip.Chip;
import ane4j.chip.ProgramSplit;
import ane4j.mil.Program;
import ane4j.mil.Value;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A program the chip would refuse, run as its {@link ProgramSplit} parts: the ANE parts on the backend, the CPU parts on
 * the CPU backend, boundary tensors handed from part to part. Same inputs and outputs as the unsplit program.
 */
public final class SplitKernel implements Kernel {
    private final List<ProgramSplit.Part> parts;
    private final List<Kernel> kernels = new ArrayList<>();
    private final List<TensorSpec> inputs = new ArrayList<>(), outputs = new ArrayList<>();

    /** Splits {@code program} (one function) for {@code chip} and compiles every part. */
    public SplitKernel(Program program, Chip chip, int maxOps, Backend ane, Backend cpu, String name) {
        this.parts = ProgramSplit.split(program, chip, maxOps);
        for (Value v : program.main().inputs()) inputs.add(new TensorSpec(v.name(), v.type()));
        for (Value v : program.main().outputs()) outputs.add(new TensorSpec(v.name(), v.type()));
        try {
            for (int i = 0; i < parts.size(); i++) {
                ProgramSplit.Part p = parts.get(i);
                kernels.add((p.where() == ProgramSplit.Where.ANE ? ane : cpu).compile(p.program(), p.function().name()));
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    public List<ProgramSplit.Part> parts() { return parts; }

    @Override public List<TensorSpec> inputs() { return inputs; }

    @Override public List<TensorSpec> outputs() { return outputs; }

    @Override
    public void evaluate(Map<String, TensorBuffer> in, Map<String, TensorBuffer> out) {
        // every value by name: the inputs, then each part's outputs as it runs
        Map<String, TensorBuffer> env = new HashMap<>(in);
        for (int i = 0; i < parts.size(); i++) {
            Map<String, TensorBuffer> pin = new HashMap<>();
            for (String n : parts.get(i).inputs()) {
                TensorBuffer b = env.get(n);
                if (b == null) throw new IllegalArgumentException("[split] no value for '" + n + "', an input of " + parts.get(i).function().name());
                pin.put(n, b);
            }
            env.putAll(kernels.get(i).evaluate(pin));
        }
        for (TensorSpec s : outputs) out.get(s.name()).copyFrom(env.get(s.name()));
    }

    @Override
    public void close() {
        for (Kernel k : kernels) k.close();
        kernels.clear();
    }
}
