package ane4j.mil;

import java.util.List;

/** An op argument inside the parentheses: a value reference, a tuple of values ({@code concat(values=(a,b))}), or an inline literal. */
public sealed interface Arg {
    record Ref(Value value) implements Arg {
        @Override public String toString() { return value.name(); }
    }

    record Tuple(List<Value> values) implements Arg {
        public Tuple { values = List.copyOf(values); }
        @Override public String toString() { return values.stream().map(Value::name).toList().toString(); }
    }

    record Inline(Literal literal) implements Arg {
        @Override public String toString() { return literal.toString(); }
    }

    static Arg of(Value v) { return new Ref(v); }
}
