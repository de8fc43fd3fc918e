package ane4j.train;

import ane4j.backend.BackendException;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.backend.ref.RefBackend;
import ane4j.chip.Chip;
import ane4j.chip.ChipRules;
import ane4j.chip.ProgramSplit;
import ane4j.chip.Violation;
import ane4j.mil.DType;
import ane4j.mil.Dialect;
import ane4j.mil.Mil;
import ane4j.mil.MilParser;
import ane4j.mil.MilWriter;
import ane4j.mil.Op;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.model.Rng;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static ane4j.mil.Mil.fp16;
import static ane4j.mil.Mil.int32;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Programs too large for the ANE cut at op boundaries ({@link ProgramSplit}): an MLP with a 20000-class head, whose
 * [8, 20000] logits break M1–M3's axis cap of 16384 (chip rule axis-cap), trained through {@link GraphStep}: every ANE
 * part of its forward and backward passes the M1 rules (what `ane4j mil check --chip m1` checks), the reference
 * backend emulating M1 refuses the unsplit programs and runs the split ones, and a step gives the same bits as the
 * unsplit programs on the plain reference backend.
 */
class ProgramSplitTest {
    static final int B = 8, IN = 64, HID = 128, K = 20000;

    static Program wideHead() {
        return Mil.program().function("main", f -> {
            var x = f.input("x", fp16(B, IN));
            var labels = f.input("labels", int32(B));
            var w1 = f.input("w1", fp16(HID, IN));
            var b1 = f.input("b1", fp16(HID));
            var w2 = f.input("w2", fp16(K, HID));
            var h = f.relu(f.linear(x, w1, b1));
            f.output(f.named("loss", f.crossEntropyLabels(f.linear(h, w2, null), labels)));
        }).build();
    }

    static final List<String> PARAMS = List.of("w1", "b1", "w2");
    /** The ops a view of the inputs is made of (copied into each part that reads it). */
    static final java.util.Set<Op> VIEWS = java.util.EnumSet.of(Op.SLICE_BY_SIZE, Op.RESHAPE, Op.CONCAT);

    static Map<String, TensorBuffer> batch() {
        Rng r = new Rng(7);
        TensorBuffer x = TensorBuffer.allocate(TensorType.of(DType.FP16, B, IN)), y = TensorBuffer.allocate(TensorType.of(DType.INT32, B));
        for (int i = 0; i < B * IN; i++) x.set(i, r.nextFloat() * 2 - 1);
        for (int i = 0; i < B; i++) y.set(i, (i * 4099) % K);
        return Map.of("x", x, "labels", y);
    }

    static float[] params(int size) {
        Rng r = new Rng(11);
        float[] p = new float[size];
        for (int i = 0; i < size; i++) p[i] = (r.nextFloat() * 2 - 1) * 0.1f;
        return p;
    }

    @Test
    void everyAnePartPassesTheM1Rules() {
        try (GraphStep step = new GraphStep(wideHead(), "loss", PARAMS, new RefBackend(RefBackend.Options.ANE_LIKE), GraphStep.Options.defaults())) {
            for (Program p : List.of(step.forwardProgram(), step.backwardProgram())) {
                assertTrue(!errors(p, Chip.M1).isEmpty(), p.main().name() + " breaks no M1 rule unsplit: the test graph is not wide enough");
                List<ProgramSplit.Part> parts = ProgramSplit.split(p, Chip.M1);
                long ane = parts.stream().filter(x -> x.where() == ProgramSplit.Where.ANE).count();
                assertTrue(ane >= 1 && ane < parts.size(), p.main().name() + ": " + parts.stream().map(x -> x.where() + " " + x.function().operations().size()).toList());
                Map<String, Integer> seen = new LinkedHashMap<>();
                for (ProgramSplit.Part part : parts) {
                    // the part as MIL text, parsed back: what `ane4j mil check --chip m1` reads
                    Program reparsed = MilParser.parse(MilWriter.write(part.program(), Dialect.IOS18));
                    if (part.where() == ProgramSplit.Where.ANE) assertEquals(List.of(), errors(reparsed, Chip.M1), part.function().name());
                    for (var o : part.function().operations()) if (o.op() != Op.CONST) seen.merge(o.label(), 1, Integer::sum);
                    assertTrue(!part.outputs().isEmpty(), part.function().name() + " has no output");
                }
                // every op of the program is in a part; only views of the inputs (the parameters' rebuild) and ops on
                // constants alone are in several
                java.util.Set<String> fromConstants = new java.util.HashSet<>();
                for (var o : p.main().operations()) {
                    boolean constant = o.op() == Op.CONST || (!o.inputs().isEmpty() && o.inputs().values().stream().allMatch(a ->
                            !(a instanceof ane4j.mil.Arg.Ref r) || fromConstants.contains(r.value().name())) && o.inputs().values().stream().noneMatch(a -> a instanceof ane4j.mil.Arg.Tuple));
                    if (constant) o.outputs().forEach(v -> fromConstants.add(v.name()));
                    if (o.op() == Op.CONST) continue;
                    int n = seen.getOrDefault(o.label(), 0);
                    assertTrue(n == 1 || (n > 1 && (VIEWS.contains(o.op()) || constant)), o.label() + " " + o.op().milName() + " is in " + n + " parts");
                }
                // no part without inputs
                for (ProgramSplit.Part part : parts) assertTrue(!part.inputs().isEmpty(), part.function().name() + " has no input");
                // nothing to cut where the program fits (M4: 65536-wide axes)
                assertEquals(List.of(), errors(p, Chip.M4));
                assertEquals(1, ProgramSplit.split(p, Chip.M4).size());
            }
        }
    }

    @Test
    void splitStepGivesTheSameBitsAndTheM1EmulationRunsIt() {
        RefBackend m1 = new RefBackend(RefBackend.Options.ANE_LIKE.withChip(Chip.M1));
        float[][] grads = new float[3][];
        float[] loss = new float[3];
        // 0: unsplit on the plain reference backend; 1: split for M1 as asked; 2: split for the chip the backend emulates
        for (int k = 0; k < 3; k++)
            try (GraphStep step = k == 0 ? new GraphStep(wideHead(), "loss", PARAMS, new RefBackend(RefBackend.Options.ANE_LIKE), GraphStep.Options.defaults())
                    : k == 1 ? new GraphStep(wideHead(), "loss", PARAMS, new RefBackend(RefBackend.Options.ANE_LIKE), GraphStep.Options.defaults().withSplitFor(Chip.M1))
                    : new GraphStep(wideHead(), "loss", PARAMS, m1, GraphStep.Options.defaults())) {
                grads[k] = new float[step.size()];
                loss[k] = step.forwardBackward(params(step.size()), grads[k], batch());
                if (k == 0) {
                    // the reference backend emulating M1 refuses the unsplit programs, as Apple's compiler would
                    BackendException e = assertThrows(BackendException.class, () -> m1.compile(step.forwardProgram()));
                    assertTrue(e.getMessage().contains("axis-cap"), e.getMessage());
                } else assertTrue(step.kernels().get(0) instanceof SplitKernel sk && sk.parts().size() > 1);
            }
        for (int k = 1; k < 3; k++) {
            assertEquals(Float.floatToIntBits(loss[0]), Float.floatToIntBits(loss[k]), "loss " + loss[0] + " vs " + loss[k]);
            assertArrayEquals(grads[0], grads[k], 0f);
        }
        assertTrue(Math.abs(grads[1][0]) + Math.abs(grads[1][grads[1].length - 1]) > 0 || java.util.stream.IntStream.range(0, grads[1].length).anyMatch(i -> grads[1][i] != 0));
    }

    @Test
    void anOpBudgetCutsConsecutiveAneParts() {
        try (GraphStep step = new GraphStep(wideHead(), "loss", PARAMS, new RefBackend(RefBackend.Options.ANE_LIKE), GraphStep.Options.defaults())) {
            Program p = step.forwardProgram();
            RefBackend ref = new RefBackend(RefBackend.Options.ANE_LIKE);
            try (Kernel whole = ref.compile(p); SplitKernel parts = new SplitKernel(p, Chip.M4, 3, ref, ref, "forward")) {
                assertTrue(parts.parts().size() >= 4, "parts: " + parts.parts().size());
                for (ProgramSplit.Part part : parts.parts())
                    assertTrue(part.function().operations().stream().filter(o -> o.op() != Op.CONST && !VIEWS.contains(o.op())).count() <= 3, part.function().name());
                Map<String, TensorBuffer> in = new LinkedHashMap<>(batch());
                for (TensorSpec s : whole.inputs()) if (!in.containsKey(s.name())) in.put(s.name(), TensorBuffer.random(s.type(), 5, 0.1f));
                Map<String, TensorBuffer> a = whole.evaluate(in), b = parts.evaluate(in);
                assertEquals(a.keySet(), b.keySet());
                for (String n : a.keySet()) assertArrayEquals(a.get(n).toFloatArray(), b.get(n).toFloatArray(), 0f, n);
            }
        }
    }

    /** A constant past the cap: the ops reading it go to the CPU (with a copy of it), the rest stays on the ANE. */
    @Test
    void theReadersOfAWideConstantGoToTheCpu() {
        float[] wide = new float[20000];
        for (int i = 0; i < wide.length; i++) wide[i] = (i % 7) * 0.01f;
        Program p = Mil.program().function("main", f -> {
            var x = f.input("x", fp16(4, 64));
            var s = f.reduceSum(f.tensor(fp16(20000), wide), false, 0);
            f.output(f.named("y", f.add(f.relu(x), s)));
        }).build();
        assertTrue(!errors(p, Chip.M1).isEmpty());
        List<ProgramSplit.Part> parts = ProgramSplit.split(p, Chip.M1);
        assertEquals(List.of(ProgramSplit.Where.CPU, ProgramSplit.Where.ANE), parts.stream().map(ProgramSplit.Part::where).toList());
        assertEquals(List.of(), errors(parts.get(1).program(), Chip.M1));
        RefBackend ref = new RefBackend(RefBackend.Options.ANE_LIKE);
        try (Kernel whole = ref.compile(p); SplitKernel split = new SplitKernel(p, Chip.M1, Integer.MAX_VALUE, new RefBackend(RefBackend.Options.ANE_LIKE.withChip(Chip.M1)), ref, "main")) {
            Map<String, TensorBuffer> in = Map.of("x", TensorBuffer.random(TensorType.of(DType.FP16, 4, 64), 3, 1f));
            assertArrayEquals(whole.evaluate(in).get("y").toFloatArray(), split.evaluate(in).get("y").toFloatArray(), 0f);
        }
    }

    private static List<String> errors(Program p, Chip chip) {
        return ChipRules.errors(ChipRules.check(p, chip)).stream().map(Violation::format).toList();
    }
}
