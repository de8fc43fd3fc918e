package ane4j.mil;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One MIL statement: {@code outputs = op(inputs)[name=label, attributes…]}. Inputs and attributes are kept sorted by
 * parameter name, which makes equality independent of the order they were written in and the writer deterministic.
 */
public record Operation(Op op, Map<String, Arg> inputs, Map<String, Literal> attributes, List<Value> outputs, String label) {
    public Operation {
        inputs = Collections.unmodifiableMap(new TreeMap<>(inputs));
        attributes = Collections.unmodifiableMap(new TreeMap<>(attributes));
        outputs = List.copyOf(outputs);
    }

    public Value output() {
        if (outputs.size() != 1) throw new MilException("[" + op.milName() + "] has " + outputs.size() + " outputs");
        return outputs.get(0);
    }

    /** The value of a const-valued parameter (an input produced by const, an inline literal, or a bracket attribute), or its default. */
    public Literal literal(String param) { return Op.literalOf(this.op, inputs, attributes, param); }

    /** The value bound to tensor parameter {@code param}, or null when absent. */
    public Value value(String param) {
        return inputs.get(param) instanceof Arg.Ref r ? r.value() : null;
    }

    /** The values of a tuple parameter ({@code concat values}). */
    public List<Value> values(String param) {
        return inputs.get(param) instanceof Arg.Tuple t ? t.values() : List.of();
    }

    /** Every value this operation reads, single and tuple parameters alike, in parameter order (literals left out). */
    public List<Value> reads() {
        List<Value> vs = new java.util.ArrayList<>();
        for (Arg a : inputs.values()) {
            if (a instanceof Arg.Ref r) vs.add(r.value());
            else if (a instanceof Arg.Tuple t) vs.addAll(t.values());
        }
        return vs;
    }
}
