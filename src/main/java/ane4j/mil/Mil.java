package ane4j.mil;

/**
 * Entry point of the fluent MIL API:
 * <pre>{@code
 * Program p = Mil.program().function("main", f -> {
 *     var x = f.input("x", fp16(1, 768, 1, 256));
 *     var y = f.sigmoid(x);
 *     f.output(y);
 * }).build();
 * }</pre>
 * Shapes and dtypes are checked as each op is added.
 */
public final class Mil {
    private Mil() {}

    public static ProgramBuilder program() { return new ProgramBuilder(); }

    public static TensorType fp16(int... shape) { return TensorType.of(DType.FP16, shape); }
    public static TensorType fp32(int... shape) { return TensorType.of(DType.FP32, shape); }
    public static TensorType int8(int... shape) { return TensorType.of(DType.INT8, shape); }
    public static TensorType uint8(int... shape) { return TensorType.of(DType.UINT8, shape); }
    public static TensorType int16(int... shape) { return TensorType.of(DType.INT16, shape); }
    public static TensorType int32(int... shape) { return TensorType.of(DType.INT32, shape); }
    public static TensorType bool(int... shape) { return TensorType.of(DType.BOOL, shape); }

    /**
     * The gradient program of {@code program}'s main function (reverse mode, emitted as MIL; see
     * {@link ane4j.mil.grad.Grad}): inputs are the function's inputs (plus {@code d_<loss>} when the loss has more than
     * one element), outputs the loss and {@code d_<w>} for each w in {@code wrt}.
     */
    public static Program grad(Program program, String loss, String... wrt) {
        return ane4j.mil.grad.Grad.program(program, loss, java.util.List.of(wrt));
    }

    /** The gradient program of one function (its weights, if any, are those of the program it came from: use {@link #grad(Program, String, String...)}). */
    public static Program grad(Function function, String loss, String... wrt) {
        return grad(new Program(java.util.Map.of(function.name(), function), Weights.empty()), loss, wrt);
    }

    /** Parses MIL text (either dialect). */
    public static Program parse(String text) { return MilParser.parse(text); }
}
