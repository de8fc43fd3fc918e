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

    /**
     * The same program with every BLOBFILE constant in one weight file, {@code @model_path/weights/<file>} (MILBlob v2:
     * a 64-byte header, then a 64-byte record and the 64-aligned data of each blob, each BLOBFILE offset naming its record).
     * macOS 27 compiles a program only when at most one file sits under {@code weights/} (docs/macos27-ane.md C2, C3: pmetal's
     * {@code pack_weights}, the "Q38" notes). Blobs keep their first-use order; a blob referenced twice is stored once.
     * Returns this program when it has at most one weight file already.
     */
    public Program packedWeights(String file) {
        if (weights.files().size() <= 1) return this;
        String path = Weights.MODEL_PATH + "weights/" + file;
        Map<Literal.BlobRef, Long> moved = new java.util.LinkedHashMap<>();
        Weights.Builder packed = new Weights.Builder();
        java.util.function.UnaryOperator<Literal> repack = l -> {
            if (!l.isBlob()) return l;
            Long offset = moved.get(l.blobRef());
            if (offset == null) {
                MilBlob.Entry e = weights.resolve(l.blobRef());
                offset = packed.add(path, e.dtype(), e.data());
                moved.put(l.blobRef(), offset);
            }
            return Literal.blob(l.type(), path, offset);
        };
        Map<Value, Value> renamed = new java.util.HashMap<>();
        Map<String, Function> out = new LinkedHashMap<>();
        for (Function f : functions.values()) {
            java.util.List<Operation> ops = new java.util.ArrayList<>();
            for (Operation o : f.operations()) {
                // BLOBFILE literals sit in const's val and in other ops' attributes (constexpr_affine_dequantize's data)
                Map<String, Literal> attrs = new LinkedHashMap<>();
                o.attributes().forEach((k, l) -> attrs.put(k, repack.apply(l)));
                java.util.List<Value> outs = new java.util.ArrayList<>();
                for (Value v : o.outputs()) {
                    if (v.constant() == null || !v.constant().isBlob()) { outs.add(v); continue; }
                    Value nv = new Value(v.name(), v.type(), repack.apply(v.constant()));
                    renamed.put(v, nv);
                    outs.add(nv);
                }
                Map<String, Arg> ins = new LinkedHashMap<>();
                o.inputs().forEach((k, a) -> ins.put(k, switch (a) {
                    case Arg.Ref r -> new Arg.Ref(renamed.getOrDefault(r.value(), r.value()));
                    case Arg.Tuple t -> new Arg.Tuple(t.values().stream().map(v -> renamed.getOrDefault(v, v)).toList());
                    case Arg.Inline i -> new Arg.Inline(repack.apply(i.literal()));
                }));
                ops.add(new Operation(o.op(), ins, attrs, outs, o.label()));
            }
            out.put(f.name(), new Function(f.name(), f.inputs(), ops, f.outputs().stream().map(v -> renamed.getOrDefault(v, v)).toList()));
        }
        return new Program(out, packed.build());
    }

    public Opset requiredOpset() {
        Opset max = Opset.IOS15;
        for (Function f : functions.values()) if (f.requiredOpset().compareTo(max) > 0) max = f.requiredOpset();
        return max;
    }

    @Override public boolean equals(Object o) { return o instanceof Program p && p.functions.equals(functions); }

    @Override public int hashCode() { return functions.hashCode(); }

    @Override public String toString() { return MilWriter.write(this, Dialect.IOS18); }
}
