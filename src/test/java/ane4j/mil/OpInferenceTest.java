package ane4j.mil;

import static ane4j.mil.Mil.*;
import static org.junit.jupiter.api.Assertions.*;

import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** Shape and dtype inference of every op in {@link Op}, through the builder, including the error messages. */
class OpInferenceTest {
    /** Runs body in a fresh function with input x of the given type and returns what it returns. */
    static <T> T in(TensorType xType, Function<FunctionBuilder, T> body) {
        Object[] out = new Object[1];
        Mil.program().function("main", f -> {
            var x = f.input("x", xType);
            out[0] = body.apply(f);
            f.output(x);
        });
        @SuppressWarnings("unchecked") T t = (T) out[0];
        return t;
    }

    static TensorType type(TensorType xType, Function<FunctionBuilder, Value> body) { return in(xType, body).type(); }

    static void fails(String expected, TensorType xType, Function<FunctionBuilder, ?> body) {
        var e = assertThrows(MilException.class, () -> in(xType, body));
        assertTrue(e.getMessage().contains(expected), "message was: " + e.getMessage());
    }

    /** A constant of type t (zeros): a value of that type without declaring more inputs. */
    static Value input(FunctionBuilder f, TensorType t) { return f.constant(Literal.ofFloats(t, new float[(int) t.count()])); }

    @Test
    void conv() {
        var w = fp16(8, 4, 3, 3);
        assertEquals(fp16(1, 8, 6, 6), type(fp16(1, 4, 8, 8), f -> f.conv(input(f, fp16(1, 4, 8, 8)), input(f, w))));
        // strides 2, same padding: ceil(8/2) = 4
        assertEquals(fp16(1, 8, 4, 4), type(fp16(1), f -> f.conv(input(f, fp16(1, 4, 8, 8)), input(f, w), null, new int[] {2, 2}, "same", new int[4], new int[] {1, 1}, 1)));
        // custom padding 1 each side, dilation 2: (8 + 2 − 5)/1 + 1 = 6
        assertEquals(fp16(1, 8, 6, 6), type(fp16(1), f -> f.conv(input(f, fp16(1, 4, 8, 8)), input(f, w), null, new int[] {1, 1}, "custom", new int[] {1, 1, 1, 1}, new int[] {2, 2}, 1)));
        // groups 2: weight [8, 2, 1, 1]
        assertEquals(fp16(1, 8, 8, 8), type(fp16(1), f -> f.conv(input(f, fp16(1, 4, 8, 8)), input(f, fp16(8, 2, 1, 1)), input(f, fp16(8)), new int[] {1, 1}, "valid", new int[4], new int[] {1, 1}, 2)));
        fails("[conv] x has 4 channels but weight [8,3,3,3] expects 3", fp16(1), f -> f.conv(input(f, fp16(1, 4, 8, 8)), input(f, fp16(8, 3, 3, 3))));
        fails("groups 3 must divide C_in 4 and C_out 8", fp16(1), f -> f.conv(input(f, fp16(1, 4, 8, 8)), input(f, fp16(8, 4, 1, 1)), null, new int[] {1, 1}, "valid", new int[4], new int[] {1, 1}, 3));
        fails("does not fit spatial dim 2", fp16(1), f -> f.conv(input(f, fp16(1, 4, 2, 2)), input(f, w)));
        fails("pad_type 'full' is not one of", fp16(1), f -> f.conv(input(f, fp16(1, 4, 8, 8)), input(f, w), null, new int[] {1, 1}, "full", new int[4], new int[] {1, 1}, 1));
        fails("pad needs 4 entries", fp16(1), f -> f.conv(input(f, fp16(1, 4, 8, 8)), input(f, w), null, new int[] {1, 1}, "custom", new int[2], new int[] {1, 1}, 1));
        fails("bias is [4]: expected [8]", fp16(1), f -> f.conv(input(f, fp16(1, 4, 8, 8)), input(f, w), input(f, fp16(4)), new int[] {1, 1}, "valid", new int[4], new int[] {1, 1}, 1));
        fails("x is fp16 but weight is fp32", fp16(1), f -> f.conv(input(f, fp16(1, 4, 8, 8)), input(f, fp32(8, 4, 3, 3))));
    }

    @Test
    void matmul() {
        assertEquals(fp16(1, 12, 256, 256), type(fp16(1), f -> f.matmul(input(f, fp16(1, 12, 256, 64)), input(f, fp16(1, 12, 256, 64)), false, true)));
        assertEquals(fp16(1, 12, 64, 64), type(fp16(1), f -> f.matmul(input(f, fp16(1, 12, 256, 64)), input(f, fp16(1, 1, 256, 64)), true, false)));
        assertEquals(fp32(3), type(fp16(1), f -> f.matmul(input(f, fp32(3, 4)), input(f, fp32(4)))));
        fails("[matmul] x is [1,12,256,64] but y is [1,12,32,64]: inner dimensions 64 and 32 differ", fp16(1),
                f -> f.matmul(input(f, fp16(1, 12, 256, 64)), input(f, fp16(1, 12, 32, 64))));
        fails("batch dimensions do not broadcast", fp16(1), f -> f.matmul(input(f, fp16(2, 3, 4)), input(f, fp16(3, 4, 5))));
        fails("x is fp16 but y is fp32", fp16(1), f -> f.matmul(input(f, fp16(3, 4)), input(f, fp32(4, 5))));
    }

    @Test
    void elementwiseBinary() {
        for (var op : List.<java.util.function.BiFunction<FunctionBuilder, Value[], Value>>of(
                (f, v) -> f.add(v[0], v[1]), (f, v) -> f.sub(v[0], v[1]), (f, v) -> f.mul(v[0], v[1]), (f, v) -> f.realDiv(v[0], v[1]), (f, v) -> f.pow(v[0], v[1]))) {
            assertEquals(fp16(1, 12, 256, 256), type(fp16(1), f -> op.apply(f, new Value[] {input(f, fp16(1, 12, 256, 256)), input(f, fp16(1, 1, 256, 256))})));
            assertEquals(fp16(1, 768, 1, 256), type(fp16(1), f -> op.apply(f, new Value[] {input(f, fp16(1, 768, 1, 1)), input(f, fp16(1, 1, 1, 256))})));
            assertEquals(fp16(2, 3), type(fp16(1), f -> op.apply(f, new Value[] {input(f, fp16(2, 3)), f.fp16(2)})));
            fails("x is [1,768,1,256] but y is [1,512,1,256]: shapes do not broadcast", fp16(1), f -> op.apply(f, new Value[] {input(f, fp16(1, 768, 1, 256)), input(f, fp16(1, 512, 1, 256))}));
            fails("x is fp16 but y is fp32: both operands must have the same dtype (insert a cast)", fp16(1), f -> op.apply(f, new Value[] {input(f, fp16(2)), input(f, fp32(2))}));
        }
        assertEquals(int32(2), type(fp16(1), f -> f.add(f.ints(1, 2), f.ints(3, 4))));
        fails("[pow] x must be fp16 or fp32, found int32", fp16(1), f -> f.pow(f.ints(1, 2), f.ints(3, 4)));
        fails("[add] x is bool: expected fp16, fp32 or int32", fp16(1), f -> f.add(f.bool(true), f.bool(false)));
    }

    @Test
    void elementwiseUnary() {
        for (var op : List.<java.util.function.BiFunction<FunctionBuilder, Value, Value>>of(FunctionBuilder::rsqrt, FunctionBuilder::sqrt,
                FunctionBuilder::exp, FunctionBuilder::sigmoid, FunctionBuilder::silu, FunctionBuilder::relu, FunctionBuilder::tanh)) {
            assertEquals(fp32(1, 4, 1, 8), type(fp16(1), f -> op.apply(f, input(f, fp32(1, 4, 1, 8)))));
            fails("x must be fp16 or fp32, found int32", fp16(1), f -> op.apply(f, f.ints(1, 2)));
        }
        fails("[rsqrt] epsilon must be a float scalar", fp16(1), f -> f.apply(Op.RSQRT, Map.of("x", Arg.of(input(f, fp16(2))), "epsilon", Arg.of(f.int32(1))), Map.of()));
    }

    @Test
    void reductions() {
        for (Op op : List.of(Op.REDUCE_SUM, Op.REDUCE_MEAN, Op.REDUCE_MAX)) {
            Function<Boolean, Function<int[], Function<FunctionBuilder, Value>>> r = keep -> axes -> f -> {
                var a = Map.of("x", Arg.of(input(f, fp16(1, 768, 1, 256))), "axes", Arg.of(f.ints(axes)), "keep_dims", Arg.of(f.bool(keep)));
                return f.apply(op, a, Map.of()).get(0);
            };
            assertEquals(fp16(1, 1, 1, 256), type(fp16(1), r.apply(true).apply(new int[] {1})));
            assertEquals(fp16(1, 1, 256), type(fp16(1), r.apply(false).apply(new int[] {1})));
            assertEquals(fp16(1, 768, 1), type(fp16(1), r.apply(false).apply(new int[] {-1})));
            assertEquals(fp16(), type(fp16(1), f -> f.apply(op, Map.of("x", Arg.of(input(f, fp16(2, 3)))), Map.of()).get(0)));
            fails("axes 4 is out of range for rank 4 (valid: -4..3)", fp16(1), r.apply(true).apply(new int[] {4}));
            fails("axis -1 appears twice in axes [3, -1]", fp16(1), r.apply(true).apply(new int[] {3, -1}));
        }
    }

    @Test
    void softmax() {
        assertEquals(fp16(1, 32000, 1, 256), type(fp16(1), f -> f.softmax(input(f, fp16(1, 32000, 1, 256)), 1)));
        fails("[softmax] axis 4 is out of range for rank 4", fp16(1), f -> f.softmax(input(f, fp16(1, 2, 3, 4)), 4));
        fails("[softmax] x must be fp16 or fp32", fp16(1), f -> f.softmax(f.ints(1, 2), 0));
    }

    @Test
    void reshape() {
        assertEquals(fp16(1, 12, 64, 256), type(fp16(1), f -> f.reshape(input(f, fp16(1, 768, 1, 256)), 1, 12, 64, 256)));
        assertEquals(fp16(1, 12, 64, 256), type(fp16(1), f -> f.reshape(input(f, fp16(1, 768, 1, 256)), 1, 12, -1, 256)));
        fails("[reshape] x is [1,768,1,256] (196608 elements) but shape [1,12,32,256] has 98304 elements", fp16(1), f -> f.reshape(input(f, fp16(1, 768, 1, 256)), 1, 12, 32, 256));
        fails("has more than one -1", fp16(1), f -> f.reshape(input(f, fp16(4, 4)), -1, -1));
        fails("cannot infer -1 in [3, -1] for 16 elements", fp16(1), f -> f.reshape(input(f, fp16(4, 4)), 3, -1));
        fails("dimensions must be positive", fp16(1), f -> f.reshape(input(f, fp16(4, 4)), -2, 16));
    }

    @Test
    void transpose() {
        assertEquals(fp16(1, 12, 256, 64), type(fp16(1), f -> f.transpose(input(f, fp16(1, 12, 64, 256)), 0, 1, 3, 2)));
        fails("[transpose] perm [0, 1, 2] has 3 entries but x has rank 4", fp16(1), f -> f.transpose(input(f, fp16(1, 2, 3, 4)), 0, 1, 2));
        fails("perm [0, 1, 1, 2] is not a permutation", fp16(1), f -> f.transpose(input(f, fp16(1, 2, 3, 4)), 0, 1, 1, 2));
        fails("perm entry 4 is out of range", fp16(1), f -> f.transpose(input(f, fp16(1, 2, 3, 4)), 0, 1, 2, 4));
    }

    @Test
    void sliceBySize() {
        assertEquals(fp16(1, 768, 1, 64), type(fp16(1), f -> f.sliceBySize(input(f, fp16(1, 768, 1, 320)), new int[] {0, 0, 0, 256}, new int[] {1, 768, 1, 64})));
        assertEquals(fp16(1, 768, 1, 64), type(fp16(1), f -> f.sliceBySize(input(f, fp16(1, 768, 1, 320)), new int[] {0, 0, 0, 256}, new int[] {1, -1, 1, -1})));
        fails("[slice_by_size] axis 3: begin 300 size 64 is outside x [1,768,1,320] (dimension 320)", fp16(1),
                f -> f.sliceBySize(input(f, fp16(1, 768, 1, 320)), new int[] {0, 0, 0, 300}, new int[] {1, 768, 1, 64}));
        fails("must both have 4 entries", fp16(1), f -> f.sliceBySize(input(f, fp16(1, 768, 1, 320)), new int[] {0, 0}, new int[] {1, 1}));
    }

    @Test
    void concat() {
        assertEquals(fp16(1, 3840, 1, 256), type(fp16(1), f -> f.concat(1, input(f, fp16(1, 768, 1, 256)), input(f, fp16(1, 3072, 1, 256)))));
        assertEquals(fp16(1, 4, 1, 8), type(fp16(1), f -> f.concat(1, true, input(f, fp16(1, 2, 1, 8)), input(f, fp16(1, 2, 1, 8)))));
        fails("[concat] values[1] is [1,768,1,128] but values[0] is [1,768,1,256]: dimensions other than axis 1 must match", fp16(1),
                f -> f.concat(1, input(f, fp16(1, 768, 1, 256)), input(f, fp16(1, 768, 1, 128))));
        fails("values[1] is fp32 but values[0] is fp16", fp16(1), f -> f.concat(0, input(f, fp16(2)), input(f, fp32(2))));
        fails("values[1] has rank 1 but values[0] has rank 2", fp16(1), f -> f.concat(0, input(f, fp16(2, 2)), input(f, fp16(2))));
        fails("interleave needs equal sizes along axis 0", fp16(1), f -> f.concat(0, true, input(f, fp16(2)), input(f, fp16(3))));
        fails("values is empty", fp16(1), f -> f.concat(0));
    }

    @Test
    void split() {
        assertEquals(List.of(fp16(1, 2, 8), fp16(1, 2, 8), fp16(1, 2, 8)), in(fp16(1), f -> f.split(input(f, fp16(1, 6, 8)), 1, 3)).stream().map(Value::type).toList());
        assertEquals(List.of(fp16(1, 6, 3), fp16(1, 6, 5)), in(fp16(1), f -> f.splitSizes(input(f, fp16(1, 6, 8)), -1, 3, 5)).stream().map(Value::type).toList());
        fails("[split] num_splits 4 does not divide dimension 6 of axis 1", fp16(1), f -> f.split(input(f, fp16(1, 6, 8)), 1, 4));
        fails("split_sizes [3, 4] must be positive and sum to 8", fp16(1), f -> f.splitSizes(input(f, fp16(1, 6, 8)), 2, 3, 4));
        fails("give num_splits or split_sizes", fp16(1),
                f -> f.apply(Op.SPLIT, Map.of("x", Arg.of(input(f, fp16(4))), "axis", Arg.of(f.int32(0))), Map.of()));
    }

    @Test
    void castIdentitySelect() {
        assertEquals(fp32(1, 4), type(fp16(1), f -> f.cast(input(f, fp16(1, 4)), DType.FP32)));
        fails("[cast] dtype 'uint64' is not a cast target", fp16(1), f -> f.cast(input(f, fp16(1, 4)), DType.UINT64));
        assertEquals(fp16(3, 5), type(fp16(1), f -> f.identity(input(f, fp16(3, 5)))));
        assertEquals(fp16(2, 4), type(fp16(1), f -> f.select(f.constant(Literal.of(Mil.bool(2, 1), new boolean[] {true, false})), input(f, fp16(1, 4)), input(f, fp16(4)))));
        fails("[select] cond must be bool, found fp16", fp16(1), f -> f.select(input(f, fp16(4)), input(f, fp16(4)), input(f, fp16(4))));
        fails("a is fp16 but b is fp32", fp16(1), f -> f.select(f.bool(true), input(f, fp16(4)), input(f, fp32(4))));
        fails("do not broadcast", fp16(1), f -> f.select(f.bool(true), input(f, fp16(4)), input(f, fp16(3))));
    }

    @Test
    void constants() {
        assertEquals(int32(3), type(fp16(1), f -> f.ints(1, 2, 3)));
        assertEquals(fp16(8, 8, 1, 1), type(fp16(1), f -> f.weight("w", fp16(8, 8, 1, 1), new float[64])));
        fails("[const] fp16[2] needs 2 values, got 3", fp16(1), f -> f.tensor(fp16(2), 1, 2, 3));
        fails("[weight] w: int8[4] needs 4 bytes, got 3", fp16(1), f -> f.weight("w", int8(4), new byte[3], null));
        fails("[const] missing required attribute 'val'", fp16(1), f -> f.apply(Op.CONST, Map.of(), Map.of()));
        // W and w would be one file on macOS's case-insensitive disk: refused, not overwritten
        fails("[blob] weight files @model_path/weights/W.bin and @model_path/weights/w.bin differ only in case", fp16(1),
                f -> { f.weight("W", fp16(2), new float[2]); return f.weight("w", fp16(2), new float[2]); });
    }

    @Test
    void constexprAffineDequantize() {
        assertEquals(fp16(4, 4, 1, 1), type(fp16(1), f -> f.constexprAffineDequantize("w", int8(4, 4, 1, 1), new byte[16], Literal.fp16(0.125f), Literal.int8(0), 0, null)));
        Literal perAxis = Literal.ofFloats(fp32(4), 1, 2, 3, 4);
        assertEquals(fp32(4, 4, 1, 1), type(fp16(1), f -> f.constexprAffineDequantize("w", int8(4, 4, 1, 1), new byte[16], perAxis, Literal.int8(0), 0, null)));
        fails("[constexpr_affine_dequantize] scale is fp32[3]: expected a scalar or a vector of 4 (the size of axis)", fp16(1),
                f -> f.constexprAffineDequantize("w", int8(4, 4, 1, 1), new byte[16], Literal.ofFloats(fp32(3), 1, 2, 3), Literal.int8(0), 0, null));
        fails("zero_point is uint8: expected int8 (or a float)", fp16(1), f -> f.constexprAffineDequantize("w", int8(4, 4, 1, 1), new byte[16], Literal.fp16(1), Literal.uint8(0), 0, null));
        fails("axis 4 is out of range for rank 4", fp16(1), f -> f.constexprAffineDequantize("w", int8(4, 4, 1, 1), new byte[16], Literal.fp16(1), Literal.int8(0), 4, null));
    }

    @Test
    void quantizeAndDequantize() {
        assertEquals(int8(1, 512, 64, 64), type(fp16(1), f -> f.quantize(input(f, fp16(1, 512, 64, 64)), 0.125f, DType.INT8)));
        assertEquals(uint8(1, 4, 2), type(fp16(1), f -> f.quantize(input(f, fp16(1, 4, 2)), Literal.ofFloats(fp16(4), 1, 2, 3, 4), Literal.of(uint8(4), new byte[4]), 1, DType.UINT8)));
        fails("[quantize] per-channel scale or zero_point needs axis", fp16(1), f -> f.quantize(input(f, fp16(1, 4, 2)), Literal.ofFloats(fp16(4), 1, 2, 3, 4), null, null, DType.INT8));
        fails("scale is fp16[4]: expected a scalar or a vector of 2", fp16(1), f -> f.quantize(input(f, fp16(1, 4, 2)), Literal.ofFloats(fp16(4), 1, 2, 3, 4), null, 2, DType.INT8));
        fails("output_dtype 'int32' must be int8 or uint8", fp16(1), f -> f.quantize(input(f, fp16(4)), 1f, DType.INT32));
        fails("zero_point is int8 but the quantized type is uint8", fp16(1), f -> f.quantize(input(f, fp16(4)), Literal.fp16(1), Literal.int8(0), null, DType.UINT8));
        assertEquals(fp16(1, 4, 2), type(fp16(1), f -> f.dequantize(f.quantize(input(f, fp16(1, 4, 2)), 0.5f, DType.INT8), 0.5f)));
        assertEquals(fp32(4), type(fp16(1), f -> f.dequantize(f.quantize(input(f, fp16(4)), 0.5f, DType.INT8), Literal.fp32(2), null, null)));
        fails("[dequantize] input must be int8 or uint8, found fp16", fp16(1), f -> f.dequantize(input(f, fp16(4)), 0.5f));
    }

    @Test
    void scaledDotProductAttention() {
        assertEquals(fp16(1, 12, 8, 32), type(fp16(1), f -> f.scaledDotProductAttention(input(f, fp16(1, 12, 8, 64)), input(f, fp16(1, 12, 16, 64)), input(f, fp16(1, 12, 16, 32)), input(f, fp16(1, 1, 8, 16)))));
        fails("[scaled_dot_product_attention] query is [1,12,8,64] but key is [1,12,16,32]: embedding sizes 64 and 32 differ", fp16(1),
                f -> f.scaledDotProductAttention(input(f, fp16(1, 12, 8, 64)), input(f, fp16(1, 12, 16, 32)), input(f, fp16(1, 12, 16, 32))));
        fails("sequence lengths differ", fp16(1), f -> f.scaledDotProductAttention(input(f, fp16(1, 2, 8, 4)), input(f, fp16(1, 2, 16, 4)), input(f, fp16(1, 2, 15, 4))));
        fails("batch dimensions of query", fp16(1), f -> f.scaledDotProductAttention(input(f, fp16(1, 2, 8, 4)), input(f, fp16(1, 3, 8, 4)), input(f, fp16(1, 3, 8, 4))));
        fails("attn_mask [1,1,8,15] does not broadcast to the scores [1,2,8,16]", fp16(1),
                f -> f.scaledDotProductAttention(input(f, fp16(1, 2, 8, 4)), input(f, fp16(1, 2, 16, 4)), input(f, fp16(1, 2, 16, 4)), input(f, fp16(1, 1, 8, 15))));
        fails("expected rank 3 or more", fp16(1), f -> f.scaledDotProductAttention(input(f, fp16(8, 4)), input(f, fp16(8, 4)), input(f, fp16(8, 4))));
    }

    @Test
    void layerNorm() {
        assertEquals(fp16(1, 256, 768), type(fp16(1), f -> f.layerNorm(input(f, fp16(1, 256, 768)), new int[] {-1}, input(f, fp16(768)), input(f, fp16(768)), 1e-5f)));
        fails("[layer_norm] gamma is [256] but the normalized shape is [768]", fp16(1), f -> f.layerNorm(input(f, fp16(1, 256, 768)), new int[] {-1}, input(f, fp16(256)), null, 1e-5f));
        fails("axes 3 is out of range for rank 3", fp16(1), f -> f.layerNorm(input(f, fp16(1, 256, 768)), new int[] {3}, null, null, 1e-5f));
    }

    @Test
    void gather() {
        assertEquals(fp16(5, 7, 768), type(fp16(1), f -> f.gather(input(f, fp16(32000, 768)), f.constant(Literal.of(int32(5, 7), new int[35])), 0)));
        assertEquals(fp16(4, 3), type(fp16(1), f -> f.gather(input(f, fp16(4, 10)), f.ints(1, 2, 3), 1)));
        fails("[gather] indices must be an integer tensor, found fp16", fp16(1), f -> f.gather(input(f, fp16(4, 10)), input(f, fp16(3)), 0));
        fails("axis 2 is out of range for rank 2", fp16(1), f -> f.gather(input(f, fp16(4, 10)), f.ints(1), 2));
        // batch_dims 1: x [2,5,3], indices [2,4] along axis 1 → [2,4,3]
        assertEquals(fp16(2, 4, 3), type(fp16(1), f -> f.apply(Op.GATHER, Map.of("x", Arg.of(input(f, fp16(2, 5, 3))),
                "indices", Arg.of(f.constant(Literal.of(int32(2, 4), new int[8]))), "axis", Arg.of(f.int32(1)), "batch_dims", Arg.of(f.int32(1))), Map.of()).get(0)));
        fails("batch_dims 1: x [2,5,3] and indices [3,4] differ in dimension 0", fp16(1), f -> f.apply(Op.GATHER, Map.of("x", Arg.of(input(f, fp16(2, 5, 3))),
                "indices", Arg.of(f.constant(Literal.of(int32(3, 4), new int[12]))), "axis", Arg.of(f.int32(1)), "batch_dims", Arg.of(f.int32(1))), Map.of()));
    }

    @Test
    void argumentKindsAreChecked() {
        fails("[reshape] 'shape' must be a constant (a const value or a literal), found the runtime value", int32(4),
                f -> f.apply(Op.RESHAPE, Map.of("x", Arg.of(input(f, fp16(4))), "shape", Arg.of(f.relu(input(f, fp16(2))))), Map.of()));
        fails("[concat] 'values' must be a tuple of values", fp16(1), f -> f.apply(Op.CONCAT, Map.of("values", Arg.of(input(f, fp16(2))), "axis", Arg.of(f.int32(0))), Map.of()));
        fails("[relu] unknown parameter 'y' (parameters: x)", fp16(1), f -> f.apply(Op.RELU, Map.of("y", Arg.of(input(f, fp16(2)))), Map.of()));
        fails("[matmul] missing required parameter 'y'", fp16(1), f -> f.apply(Op.MATMUL, Map.of("x", Arg.of(input(f, fp16(2)))), Map.of()));
        fails("[relu] unknown attribute 'val'", fp16(1), f -> f.apply(Op.RELU, Map.of("x", Arg.of(input(f, fp16(2)))), Map.of("val", Literal.fp16(1))));
    }

    /** The ops added for training small graphs (issue 31): log, erf, gelu, comparisons, tile, linear, pooling. */
    @Test
    void trainingOps() {
        assertEquals(fp32(2, 3), type(fp32(1), f -> f.log(input(f, fp32(2, 3)))));
        assertEquals(fp16(2, 3), type(fp16(1), f -> f.gelu(input(f, fp16(2, 3)), "TANH_APPROXIMATION")));
        fails("[gelu] mode 'FAST' is not one of", fp16(1), f -> f.gelu(input(f, fp16(2)), "FAST"));
        fails("[erf] x must be fp16 or fp32", fp16(1), f -> f.erf(f.constant(Literal.of(int32(2), new int[2]))));
        assertEquals(bool(2, 3), type(fp16(1), f -> f.greater(input(f, fp16(2, 3)), f.fp16(0))));
        assertEquals(bool(4), type(fp16(1), f -> f.equal(f.ints(1, 2, 3, 4), f.int32(2))));
        fails("[less] x is fp16 but y is fp32", fp16(1), f -> f.less(input(f, fp16(2)), input(f, fp32(2))));
        assertEquals(fp16(2, 6, 3), type(fp16(1), f -> f.tile(input(f, fp16(1, 3, 3)), 2, 2, 1)));
        fails("[tile] reps [2] has 1 entries but x [1,3] has rank 2", fp16(1), f -> f.tile(input(f, fp16(1, 3)), 2));
        assertEquals(fp32(5, 7, 4), type(fp32(1), f -> f.linear(input(f, fp32(5, 7, 3)), input(f, fp32(4, 3)), input(f, fp32(4)))));
        fails("[linear] x is [5,3] but weight is [4,2]: weight must be [D_out, 3]", fp32(1), f -> f.linear(input(f, fp32(5, 3)), input(f, fp32(4, 2)), null));
        assertEquals(fp16(2, 3, 4, 4), type(fp16(1), f -> f.maxPool(input(f, fp16(2, 3, 8, 9)), new int[] {2, 2}, new int[] {2, 2})));
        assertEquals(fp16(1, 3, 4, 5), type(fp16(1), f -> f.pool(Op.AVG_POOL, input(f, fp16(1, 3, 8, 9)), new int[] {3, 3}, new int[] {2, 2}, "same", null)));
        fails("[avg_pool] kernel [5, 5] does not fit", fp16(1), f -> f.avgPool(input(f, fp16(1, 3, 4, 4)), new int[] {5, 5}, new int[] {1, 1}));
        assertEquals(fp32(1), type(fp32(1), f -> f.crossEntropyLabels(input(f, fp32(4, 10)), f.ints(1, 2, 3, 4))));
    }

    /** Every op of the table is exercised above; this pins the list so a new op cannot slip in untested. */
    @Test
    void everyOpIsCovered() {
        Set<Op> covered = EnumSet.of(Op.CONV, Op.MATMUL, Op.ADD, Op.SUB, Op.MUL, Op.REAL_DIV, Op.POW, Op.RSQRT, Op.SQRT, Op.EXP,
                Op.REDUCE_SUM, Op.REDUCE_MEAN, Op.REDUCE_MAX, Op.SIGMOID, Op.SILU, Op.RELU, Op.TANH, Op.SOFTMAX, Op.RESHAPE,
                Op.TRANSPOSE, Op.SLICE_BY_SIZE, Op.CONCAT, Op.SPLIT, Op.CAST, Op.IDENTITY, Op.SELECT, Op.CONST,
                Op.CONSTEXPR_AFFINE_DEQUANTIZE, Op.QUANTIZE, Op.DEQUANTIZE, Op.SCALED_DOT_PRODUCT_ATTENTION, Op.LAYER_NORM, Op.GATHER,
                Op.LOG, Op.ERF, Op.GELU, Op.EQUAL, Op.NOT_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.LESS, Op.LESS_EQUAL, Op.TILE, Op.LINEAR,
                Op.AVG_POOL, Op.MAX_POOL);
        assertEquals(EnumSet.allOf(Op.class), covered);
    }
}
