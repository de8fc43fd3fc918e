package ane4j.train;

import ane4j.backend.TensorBuffer;
import ane4j.mil.Arg;
import ane4j.mil.DType;
import ane4j.mil.Function;
import ane4j.mil.Literal;
import ane4j.mil.Op;
import ane4j.mil.Operation;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The parameters of a generated training program as columns of one packed input {@code [1, C, 1, W]}, as the
 * hand-written kernels pack their weights next to the activations ({@link PackedLayout}, TrainingKernels): one compile
 * serves every step and the programs carry no weight file (macOS 27 refuses a program with two or more,
 * docs/macos27-ane.md C2).
 *
 * <pre>
 *   a parameter of shape [r, …] is the matrix [r, c] (c = the product of the other dims; a vector [n] is [n, 1]);
 *   it is cut into blocks of at most C rows, and the blocks of equal width c are stacked down the channels, column
 *   after column:                                   packed [1, C, 1, W]
 *       channels ↓   | wq  | wv  | w1  | w1  | w2 ... | b |
 *                    | wk  | wo  | w1' | w3  |        | b |
 *   inside the program each parameter is rebuilt from its blocks under its own name:
 *       block_i = slice_by_size(packed, [0, channel_i, 0, column_i], [1, rows_i, 1, c])
 *       param   = reshape(concat(block_1 … block_k, axis 1), shape)        (concat only when k > 1)
 * </pre>
 * Slices, concats and reshapes copy values exactly, so a step gives the same bits as with the parameters as separate
 * inputs ({@code GraphStepPackedTest}). C is chosen to waste the fewest elements with W at most 16384, the axis cap of
 * M1–M3 (chip rule axis-cap; C itself is the channel axis, capped at 65536 on every chip).
 */
public final class PackedParams {
    /** The width cap kept for the packed input: the smallest axis cap of any chip (M1–M3, chip rule axis-cap). */
    static final int MAX_WIDTH = 16384;
    /** The channel cap (chip rule channel-cap, every chip). */
    static final int MAX_CHANNELS = 65536;

    /** Rows {@code [rowFrom, rowFrom + rows)} of a parameter's matrix at channels {@code [channel, channel + rows)}, columns {@code [column, column + cols)}. */
    public record Block(String param, int rowFrom, int rows, int cols, int channel, int column) {}

    private final String input;
    private final DType dtype;
    private final int channels, width;
    private final Map<String, TensorType> types;
    private final List<Block> blocks;

    private PackedParams(String input, DType dtype, int channels, int width, Map<String, TensorType> types, List<Block> blocks) {
        this.input = input;
        this.dtype = dtype;
        this.channels = channels;
        this.width = width;
        this.types = types;
        this.blocks = blocks;
    }

    /** The packed input's name. */
    public String input() { return input; }

    /** The packed input's type, {@code [1, C, 1, W]}. */
    public TensorType type() { return TensorType.of(dtype, 1, channels, 1, width); }

    public List<Block> blocks() { return blocks; }

    /** The parameters packed, with their types. */
    public Map<String, TensorType> params() { return types; }

    /**
     * The layout of {@code params} (all of one float dtype) in an input named {@code input}.
     * @throws IllegalArgumentException when the parameters mix dtypes or do not fit [1, 65536, 1, 16384]
     */
    public static PackedParams plan(String input, Map<String, TensorType> params) {
        DType dt = null;
        for (var e : params.entrySet()) {
            if (dt != null && e.getValue().dtype() != dt)
                throw new IllegalArgumentException("[graph] parameter '" + e.getKey() + "' is " + e.getValue() + " but the others are " + dt
                        + ": packed parameters share one dtype; cast them in the graph");
            dt = e.getValue().dtype();
        }
        // candidate heights: every parameter's row count and the powers of two up to the channel cap
        Set<Integer> heights = new java.util.TreeSet<>();
        for (TensorType t : params.values()) heights.add(Math.min(rows(t), MAX_CHANNELS));
        for (int h = 1; h <= MAX_CHANNELS; h *= 2) heights.add(h);
        List<Block> best = null;
        long bestArea = Long.MAX_VALUE;
        int bestC = 0, bestW = 0;
        for (int c : heights) {
            List<Block> b = new ArrayList<>();
            int w = place(params, c, b);
            long area = (long) c * w;
            if (w <= MAX_WIDTH && (area < bestArea || (area == bestArea && w < bestW))) {
                best = b;
                bestArea = area;
                bestC = c;
                bestW = w;
            }
        }
        if (best == null) throw new IllegalArgumentException("[graph] the parameters (" + params.size() + ") do not fit one packed input [1, "
                + MAX_CHANNELS + ", 1, " + MAX_WIDTH + "]; train fewer of them at once");
        return new PackedParams(input, dt == null ? DType.FP32 : dt, Math.max(bestC, 1), Math.max(bestW, 1), new LinkedHashMap<>(params), List.copyOf(best));
    }

    /** Places every parameter's blocks for height {@code c}; returns the width used. */
    private static int place(Map<String, TensorType> params, int c, List<Block> into) {
        // widths in order of first appearance; the blocks of one width fill columns of height c one after the other
        Map<Integer, List<String>> byWidth = new LinkedHashMap<>();
        for (var e : params.entrySet()) byWidth.computeIfAbsent(cols(e.getValue()), k -> new ArrayList<>()).add(e.getKey());
        int column = 0;
        for (var e : byWidth.entrySet()) {
            int w = e.getKey(), y = 0;
            boolean open = false;
            for (String p : e.getValue()) {
                int r = rows(params.get(p));
                for (int from = 0; from < r; from += c) {
                    int n = Math.min(c, r - from);
                    if (!open || y + n > c) {
                        if (open) column += w;
                        open = true;
                        y = 0;
                    }
                    into.add(new Block(p, from, n, w, y, column));
                    y += n;
                }
            }
            if (open) column += w;
        }
        return column;
    }

    private static int rows(TensorType t) { return t.rank() == 0 ? 1 : t.shape()[0]; }

    private static int cols(TensorType t) { return t.rank() == 0 ? 1 : (int) (t.count() / t.shape()[0]); }

    // ---------------------------------------------------------------------------------------------------------------

    /**
     * {@code program}'s function with its parameter inputs replaced by the packed input (at the first parameter's place)
     * and each parameter it reads rebuilt from its blocks under its own name; a function reading no parameter is returned as is.
     */
    public Program rewrite(Program program) {
        Function f = program.main();
        List<Value> read = f.inputs().stream().filter(v -> types.containsKey(v.name())).toList();
        if (read.isEmpty()) return program;
        Set<String> names = new HashSet<>();
        for (Value v : f.inputs()) names.add(v.name());
        for (Operation o : f.operations()) for (Value v : o.outputs()) names.add(v.name());
        if (names.contains(input) && !types.containsKey(input))
            throw new IllegalArgumentException("[graph] the packed parameters' input '" + input + "' is also a value of " + f.name() + "; rename that value");
        Value packed = new Value(input, type());
        List<Value> inputs = new ArrayList<>();
        for (Value v : f.inputs()) {
            if (!types.containsKey(v.name())) inputs.add(v);
            else if (!inputs.contains(packed)) inputs.add(packed);
        }
        Builder b = new Builder(names);
        for (Value p : read) {
            List<Value> parts = new ArrayList<>();
            for (Block k : blocks) {
                if (!k.param().equals(p.name())) continue;
                parts.add(b.op(Op.SLICE_BY_SIZE, p.name() + "_block", Map.of("x", new Arg.Ref(packed),
                        "begin", new Arg.Ref(b.constant(Literal.int32s(0, k.channel(), 0, k.column()))),
                        "size", new Arg.Ref(b.constant(Literal.int32s(1, k.rows(), 1, k.cols()))))));
            }
            Value whole = parts.size() == 1 ? parts.get(0) : b.op(Op.CONCAT, p.name() + "_blocks", Map.of("values", new Arg.Tuple(parts),
                    "axis", new Arg.Ref(b.constant(Literal.int32(1))), "interleave", new Arg.Ref(b.constant(Literal.bool(false)))));
            b.named(Op.RESHAPE, p, Map.of("x", new Arg.Ref(whole), "shape", new Arg.Ref(b.constant(Literal.int32s(p.shape())))));
        }
        List<Operation> ops = new ArrayList<>(b.ops);
        ops.addAll(f.operations());
        return new Program(Map.of(f.name(), new Function(f.name(), inputs, ops, f.outputs())), program.weights());
    }

    /** Ops with fresh names (not among {@code taken}). */
    private static final class Builder {
        final Set<String> taken;
        final List<Operation> ops = new ArrayList<>();

        Builder(Set<String> taken) { this.taken = taken; }

        String fresh(String base) {
            String n = base;
            for (int i = 1; taken.contains(n); i++) n = base + "_" + i;
            taken.add(n);
            return n;
        }

        Value constant(Literal l) {
            Value v = new Value(fresh("packed_const"), l.type(), l);
            ops.add(new Operation(Op.CONST, Map.of(), Map.of("val", l), List.of(v), v.name()));
            return v;
        }

        Value op(Op op, String base, Map<String, Arg> args) {
            TensorType t = op.infer(args, Map.of()).get(0);
            Value v = new Value(fresh(base), t);
            ops.add(new Operation(op, args, Map.of(), List.of(v), v.name()));
            return v;
        }

        /** The op defining {@code as} (a former input: same name and type). */
        void named(Op op, Value as, Map<String, Arg> args) {
            TensorType t = op.infer(args, Map.of()).get(0);
            if (!t.equals(as.type())) throw new IllegalStateException("[graph] internal: " + as.name() + " rebuilt as " + t + ", not " + as.type());
            ops.add(new Operation(op, args, Map.of(), List.of(as), as.name()));
        }
    }

    // ---------------------------------------------------------------------------------------------------------------

    /** Copies the parameters from the flat array ({@code offsets}: each one's start) into the packed buffer. */
    public void pack(float[] flat, Map<String, Integer> offsets, TensorBuffer into) {
        for (Block k : blocks) {
            int base = offsets.get(k.param()) + k.rowFrom() * k.cols();
            for (int r = 0; r < k.rows(); r++)
                into.copyFrom(flat, base + r * k.cols(), (long) (k.channel() + r) * width + k.column(), k.cols());
        }
    }
}
