package ane4j.notebook;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.mil.Program;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A compiled kernel as a notebook sees it: a {@link Kernel} that also runs on plain values
 * ({@code k.run(Map.of("x", new float[]{…}))}), remembers its program, and shows itself as a table of its inputs and
 * outputs with the MIL below.
 */
public final class CompiledProgram implements Kernel {
    private final String name;
    private final Program program;
    private final Kernel kernel;
    private final String backend;
    private final Cleaner.Cleanable release;
    private volatile boolean closed;

    // a kernel the notebook dropped (a cell's temporary, a reassigned variable) is released in the backend after GC,
    // so a worker does not keep and recompile it
    private static final Cleaner CLEANER = Cleaner.create(Thread.ofPlatform().daemon().name("ane4j-kernel-cleaner").factory());

    CompiledProgram(String name, Program program, Kernel kernel, String backend) {
        this.name = name;
        this.program = program;
        this.kernel = kernel;
        this.backend = backend;
        this.release = CLEANER.register(this, kernel::close);
    }

    public String name() { return name; }

    public Program program() { return program; }

    /** The backend's kernel underneath. */
    public Kernel kernel() { return kernel; }

    public String backend() { return backend; }

    public boolean isClosed() { return closed; }

    @Override public List<TensorSpec> inputs() { return kernel.inputs(); }

    @Override public List<TensorSpec> outputs() { return kernel.outputs(); }

    @Override
    public void evaluate(Map<String, TensorBuffer> inputs, Map<String, TensorBuffer> outputs) {
        if (closed) throw new IllegalStateException("[kernel] " + name + " is closed; compile it again");
        try {
            kernel.evaluate(inputs, outputs);
        } finally {
            Reference.reachabilityFence(this);   // not released by the cleaner while it runs
        }
    }

    /**
     * Runs the kernel on values: each input is a {@link TensorBuffer}, a {@code float[]} with one value per element,
     * or a number that fills the tensor. Returns the outputs by name, in the function's order.
     */
    public Map<String, TensorBuffer> run(Map<String, ?> values) {
        for (String k : values.keySet()) input(k);
        Map<String, TensorBuffer> in = new LinkedHashMap<>();
        for (TensorSpec s : inputs()) {
            Object v = values.get(s.name());
            if (v == null) throw new IllegalArgumentException("[kernel] " + name + " needs input '" + s.name() + "' (" + s.type() + "); inputs: " + inputs());
            in.put(s.name(), tensor(s, v));
        }
        return new Outputs(evaluate(in));
    }

    /** The outputs by name; prints as {@code {y=fp16[1,1,8,4] min 0  max 3.5  mean 1.2}} (the notebook shows grids). */
    static final class Outputs extends LinkedHashMap<String, TensorBuffer> {
        Outputs(Map<String, TensorBuffer> m) {
            super(m);
        }

        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder("{");
            forEach((k, t) -> sb.append(sb.length() > 1 ? ", " : "").append(k).append('=').append(t.type())
                    .append(' ').append(Renderers.stats(t.toFloatArray())));
            return sb.append('}').toString();
        }
    }

    /** {@link #run(Map)} for a kernel with one input and one output: the output's values. */
    public float[] run(float... input) {
        if (inputs().size() != 1 || outputs().size() != 1)
            throw new IllegalArgumentException("[kernel] " + name + " has " + inputs().size() + " inputs and " + outputs().size() + " outputs; use run(Map.of(\"name\", values))");
        return run(Map.of(inputs().getFirst().name(), input)).values().iterator().next().toFloatArray();
    }

    static TensorBuffer tensor(TensorSpec s, Object v) {
        return switch (v) {
            case TensorBuffer b when b.type().equals(s.type()) -> b;
            case TensorBuffer b -> {
                if (b.count() != s.type().count())
                    throw new IllegalArgumentException("[kernel] input '" + s.name() + "' is " + s.type() + " (" + s.type().count() + " elements), got " + b.type());
                TensorBuffer t = TensorBuffer.allocate(s.type());
                t.copyFrom(b);
                yield t;
            }
            case float[] f -> {
                if (f.length != s.type().count())
                    throw new IllegalArgumentException("[kernel] input '" + s.name() + "' needs " + s.type().count() + " values (" + s.type() + "), got " + f.length);
                yield TensorBuffer.of(s.type(), f);
            }
            case Number n -> {
                TensorBuffer t = TensorBuffer.allocate(s.type());
                t.fill(n.floatValue());
                yield t;
            }
            default -> throw new IllegalArgumentException("[kernel] input '" + s.name() + "' is a " + v.getClass().getSimpleName()
                    + "; give a TensorBuffer, a float[] of " + s.type().count() + " values, or a number");
        };
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        release.clean();
        Ane.released(this);
    }

    @Override
    public String toString() {
        return "kernel " + name + " on " + backend + ": " + inputs() + " -> " + outputs() + (closed ? " (closed)" : "");
    }

    /** An HTML summary: inputs and outputs with their types, and the program (highlighted, folded). */
    String html() {
        StringBuilder sb = new StringBuilder("<div class=\"ane4j-kernel\"><b>kernel ").append(Renderers.escape(name)).append("</b> on ")
                .append(Renderers.escape(backend)).append(closed ? " (closed)" : "")
                .append("<table><thead><tr><th></th><th>name</th><th>type</th></tr></thead><tbody>");
        for (TensorSpec s : inputs()) row(sb, "input", s);
        for (TensorSpec s : outputs()) row(sb, "output", s);
        sb.append("</tbody></table><details><summary>MIL</summary>").append(MilHighlighter.html(program)).append("</details></div>");
        return sb.toString();
    }

    private static void row(StringBuilder sb, String kind, TensorSpec s) {
        sb.append("<tr><td>").append(kind).append("</td><td>").append(Renderers.escape(s.name())).append("</td><td><code>")
                .append(Renderers.escape(s.type().toString())).append("</code></td></tr>");
    }
}
