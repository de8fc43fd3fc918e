package ane4j.mil;

import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/** A MIL function: typed inputs, operations in order (SSA), outputs. Immutable. */
public record Function(String name, List<Value> inputs, List<Operation> operations, List<Value> outputs) {
    public Function {
        inputs = List.copyOf(inputs);
        operations = List.copyOf(operations);
        outputs = List.copyOf(outputs);
    }

    /** The newest opset any op of this function needs. */
    public Opset requiredOpset() {
        Opset max = Opset.IOS15;
        for (Operation op : operations) if (op.op().opset().compareTo(max) > 0) max = op.op().opset();
        return max;
    }

    public Value input(String inputName) {
        for (Value v : inputs) if (v.name().equals(inputName)) return v;
        throw new MilException("[mil] function " + name + " has no input '" + inputName + "' (inputs: " + inputs.stream().map(Value::name).toList() + ")");
    }

    /** Distinct ops used, for summaries. */
    public Set<Op> opsUsed() {
        Set<Op> s = EnumSet.noneOf(Op.class);
        for (Operation o : operations) s.add(o.op());
        return s;
    }
}
