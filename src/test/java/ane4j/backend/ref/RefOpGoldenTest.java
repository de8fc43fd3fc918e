package ane4j.backend.ref;

import ane4j.backend.TensorBuffer;
import ane4j.golden.OpGolden;
import ane4j.golden.OpGolden.Case;
import ane4j.golden.OpGolden.GoldenTensor;
import ane4j.mil.Arg;
import ane4j.mil.DType;
import ane4j.mil.Literal;
import ane4j.mil.Mil;
import ane4j.mil.Op;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Every golden case of every op (numpy/PyTorch vectors from tools/gen_op_golden.py) on the reference backend. Tensor
 * parameters become function inputs, const parameters and attributes become constants. attn_mask is honoured here: the
 * goldens define MIL's semantics, the ANE's ignoring of the mask is tested separately.
 */
class RefOpGoldenTest {
    static final RefBackend REF = new RefBackend(RefBackend.Options.HONOR_SDPA_MASK);

    static Stream<Case> cases() { return OpGolden.allCases().stream(); }

    /** Cases the MIL model (ane4j.mil, not this backend) rejects while building; reported to the MIL owner. */
    static final Map<String, String> MIL_GAPS = Map.of();

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void matchesGolden(Case c) {
        org.junit.jupiter.api.Assumptions.assumeFalse(MIL_GAPS.containsKey(c.id()), () -> c.id() + ": " + MIL_GAPS.get(c.id()));
        Op op = Op.fromMilName(c.op());
        assertNotNull(op, c.op());
        Map<String, TensorBuffer> feeds = new LinkedHashMap<>();
        List<String> outNames = new ArrayList<>();
        Program p = Mil.program().function("main", f -> {
            Map<String, Value> inputs = new HashMap<>();
            // declare runtime inputs first (tensor parameters and tuple members of rank ≥ 1)
            for (var e : c.inputs().entrySet()) {
                Op.Param prm = op.param(e.getKey());
                if (prm.kind() == Op.Kind.TENSOR && e.getValue().rank() > 0) {
                    inputs.put(e.getKey(), f.input(e.getKey(), type(e.getValue())));
                    feeds.put(e.getKey(), buffer(e.getValue()));
                }
            }
            if (inputs.isEmpty() && c.tuples().isEmpty()) f.input("unused", Mil.fp32(1));
            Map<String, List<Value>> tuples = new HashMap<>();
            for (var e : c.tuples().entrySet()) {
                List<Value> vs = new ArrayList<>();
                for (int i = 0; i < e.getValue().size(); i++) {
                    String n = e.getKey() + "_" + i;
                    vs.add(f.input(n, type(e.getValue().get(i))));
                    feeds.put(n, buffer(e.getValue().get(i)));
                }
                tuples.put(e.getKey(), vs);
            }
            Map<String, Arg> args = new LinkedHashMap<>();
            Map<String, Literal> attrs = new LinkedHashMap<>();
            for (var e : c.inputs().entrySet()) {
                Op.Param prm = op.param(e.getKey());
                if (inputs.containsKey(e.getKey())) args.put(e.getKey(), new Arg.Ref(inputs.get(e.getKey())));
                else if (prm.kind() == Op.Kind.ATTRIBUTE) attrs.put(e.getKey(), literal(e.getValue()));
                else args.put(e.getKey(), new Arg.Ref(f.constant(literal(e.getValue()))));
            }
            tuples.forEach((k, v) -> args.put(k, new Arg.Tuple(v)));
            List<Value> outs = f.apply(op, args, attrs);
            for (Value v : outs) outNames.add(v.name());
            f.output(outs.toArray(Value[]::new));
        }).build();
        try (RefKernel k = REF.compileRef(p)) {
            if (p.main().inputs().get(0).name().equals("unused")) feeds.put("unused", TensorBuffer.allocate(Mil.fp32(1)));
            Map<String, TensorBuffer> out = k.evaluate(feeds);
            for (int i = 0; i < c.expected().size(); i++) {
                GoldenTensor e = c.expected(i);
                TensorBuffer got = out.get(outNames.get(i));
                assertArrayEquals(e.shape(), got.shape(), c.id() + " output " + i + " shape");
                assertEquals(e.dtype(), got.dtype(), c.id() + " output " + i + " dtype");
                OpGolden.checkTensor(c.id() + "#" + i, e, got.toFloatArray(), c.atol(), c.rtol());
            }
        }
    }

    static TensorType type(GoldenTensor t) { return TensorType.of(t.dtype(), t.shape()); }

    static TensorBuffer buffer(GoldenTensor t) {
        TensorBuffer b = TensorBuffer.allocate(type(t));
        if (t.dtype() == DType.FP16) {
            short[] h = t.fp16Bits();
            for (int i = 0; i < h.length; i++) b.segment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, i, h[i]);
        } else b.copyFrom(t.asFloats());
        return b;
    }

    static Literal literal(GoldenTensor t) {
        TensorType ty = type(t);
        return switch (t.dtype()) {
            case FP16 -> Literal.of(ty, t.fp16Bits());
            case FP32 -> Literal.of(ty, t.asFloats());
            case INT32 -> Literal.of(ty, t.asInts());
            case INT8, UINT8 -> {
                int[] v = t.asInts();
                byte[] b = new byte[v.length];
                for (int i = 0; i < v.length; i++) b[i] = (byte) v[i];
                yield Literal.of(ty, b);
            }
            case INT16 -> {
                int[] v = t.asInts();
                short[] s = new short[v.length];
                for (int i = 0; i < v.length; i++) s[i] = (short) v[i];
                yield Literal.of(ty, s);
            }
            case BOOL -> Literal.of(ty, t.asBools());
            case STRING -> Literal.of(ty, t.asStrings());
            case UINT64 -> throw new IllegalArgumentException("uint64");
        };
    }
}
