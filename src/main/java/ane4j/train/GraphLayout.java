package ane4j.train;

import ane4j.model.ParameterView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * What a graph run trains, as its checkpoints and run record name it: the graph file, its loss output, and the trained
 * inputs in the order of the flat parameter array with their shapes. A parameter of shape [r, …] is the matrix
 * [r, product of the rest] (a vector [n] stays [n]); matrices get AdamW's weight decay, vectors not ({@link GraphStep}).
 * <pre>
 *   graph = mlp.mil
 *   loss = loss
 *   param.w1 = 128 64
 *   param.b1 = 128
 * </pre>
 */
public record GraphLayout(String graph, String loss, List<Param> params) {
    /** One trained input of the graph and its shape. */
    public record Param(String name, int[] shape) {
        public Param {
            shape = shape.clone();
        }

        @Override public int[] shape() { return shape.clone(); }

        public int size() { return Math.toIntExact(Arrays.stream(shape).asLongStream().reduce(1, Math::multiplyExact)); }

        @Override public boolean equals(Object o) { return o instanceof Param p && p.name.equals(name) && Arrays.equals(p.shape, shape); }

        @Override public int hashCode() { return name.hashCode() * 31 + Arrays.hashCode(shape); }
    }

    public GraphLayout {
        params = List.copyOf(params);
    }

    /** Number of parameter floats. */
    public int size() { return params.stream().mapToInt(Param::size).sum(); }

    /** The flat layout's views, as {@link GraphStep#views()} makes them. */
    public List<ParameterView> views() {
        List<ParameterView> out = new ArrayList<>();
        int offset = 0;
        for (Param p : params) {
            int[] s = p.shape();
            int rows = s[0], cols = p.size() / rows;
            out.add(new ParameterView(p.name(), offset, s.length == 1 ? new int[] {rows} : new int[] {rows, cols}, s.length > 1));
            offset += p.size();
        }
        return out;
    }

    /** The {@code key = value} lines above (the checkpoint's state section and the run record's model block). */
    public String toText() {
        StringBuilder b = new StringBuilder("graph = " + graph + "\nloss = " + loss + "\nparameters = " + size());
        for (Param p : params) b.append("\nparam.").append(p.name()).append(" = ").append(String.join(" ", Arrays.stream(p.shape()).mapToObj(Integer::toString).toList()));
        return b.toString();
    }

    /** Reads {@link #toText()}; {@code where} names the source in the one-line error. */
    public static GraphLayout fromText(String text, String where) {
        String graph = null, loss = null;
        List<Param> params = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (line.isBlank()) continue;
            int eq = line.indexOf(" = ");
            if (eq < 0) throw new CheckpointFormatException(where + ": graph line '" + line + "' is not 'key = value'");
            String k = line.substring(0, eq), v = line.substring(eq + 3);
            try {
                if (k.equals("graph")) graph = v;
                else if (k.equals("loss")) loss = v;
                else if (k.startsWith("param.")) params.add(new Param(k.substring(6), Arrays.stream(v.split(" ")).mapToInt(Integer::parseInt).toArray()));
            } catch (NumberFormatException e) {
                throw new CheckpointFormatException(where + ": graph line '" + line + "' has a shape that is not whole numbers");
            }
        }
        if (graph == null || loss == null || params.isEmpty()) throw new CheckpointFormatException(where + ": the graph block lacks graph, loss or a param line");
        return new GraphLayout(graph, loss, params);
    }
}
