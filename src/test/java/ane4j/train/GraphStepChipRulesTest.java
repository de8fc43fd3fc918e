package ane4j.train;

import ane4j.backend.ref.RefBackend;
import ane4j.chip.Chip;
import ane4j.chip.ChipRules;
import ane4j.chip.Violation;
import ane4j.mil.DType;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.model.LlamaGraph;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The programs of the generic training split obey the chip rules (what `ane4j mil check --chip` checks): stories15m
 * built with the fluent API, fp16, split by {@link GraphStep}: no error on M4 and M5 (warnings remain: 64-byte last
 * axes, contraction of 48 in attention, small surfaces); on M1 they break rules, and every ANE part of their
 * {@link ane4j.chip.ProgramSplit} breaks none. Not yet run on Apple hardware.
 */
class GraphStepChipRulesTest {
    @Test
    void stories15mSplitHasNoChipRuleErrorsOnM4AndM5() {
        ModelConfig c = ModelConfig.parse("stories15m");
        List<String> names = new ParameterLayout(c).views().stream().map(v -> LlamaGraph.inputName(v.name())).toList();
        try (GraphStep step = new GraphStep(LlamaGraph.build(c, DType.FP16, 512f), "loss", names, new RefBackend(RefBackend.Options.ANE_LIKE), GraphStep.Options.defaults())) {
            for (Program p : List.of(step.forwardProgram(), step.backwardProgram()))
                for (String chip : List.of("m4", "m5")) {
                    List<Violation> errors = ChipRules.errors(ChipRules.check(MilWriter.write(p, ane4j.mil.Dialect.IOS18), p, Chip.parse(chip)));
                    assertEquals(List.of(), errors.stream().map(Violation::format).toList(), p.main().name() + " on " + chip);
                }
            // the same with the loss on the CPU (the graph ends at the logits: bench step --kernels generated)
            try (GraphStep head = new GraphStep(LlamaGraph.buildLogits(c, DType.FP16), new CpuLossHead("logits", "targets"), names,
                    new RefBackend(RefBackend.Options.ANE_LIKE), GraphStep.Options.defaults())) {
                for (Program p : List.of(head.forwardProgram(), head.backwardProgram()))
                    for (String chip : List.of("m4", "m5")) {
                        List<Violation> errors = ChipRules.errors(ChipRules.check(MilWriter.write(p, ane4j.mil.Dialect.IOS18), p, Chip.parse(chip)));
                        assertEquals(List.of(), errors.stream().map(Violation::format).toList(), "loss head: " + p.main().name() + " on " + chip);
                    }
            }
            // on M1 (axis cap 16384, contraction multiple of 32, no cast) the programs break rules; every ANE part of their split none
            for (Program p : List.of(step.forwardProgram(), step.backwardProgram())) {
                assertTrue(!ChipRules.errors(ChipRules.check(p, Chip.M1)).isEmpty(), p.main().name());
                List<ane4j.chip.ProgramSplit.Part> parts = ane4j.chip.ProgramSplit.split(p, Chip.M1);
                long ops = p.main().operations().stream().filter(o -> o.op() != ane4j.mil.Op.CONST).count();
                java.util.Set<String> aneOps = new java.util.HashSet<>();
                for (var part : parts) {
                    assertTrue(!part.inputs().isEmpty() && !part.outputs().isEmpty(), part.function().name() + " " + part.inputs() + " → " + part.outputs());
                    if (part.where() != ane4j.chip.ProgramSplit.Where.ANE) continue;
                    assertEquals(List.of(), ChipRules.errors(ChipRules.check(part.program(), Chip.M1)).stream().map(Violation::format).toList(), part.function().name());
                    part.function().operations().stream().filter(o -> o.op() != ane4j.mil.Op.CONST).forEach(o -> aneOps.add(o.label()));
                }
                // most of the work stays on the ANE: only the ops a rule forbids go to the CPU
                assertTrue(aneOps.size() > 0.9 * ops, p.main().name() + ": " + aneOps.size() + " of " + ops + " ops on the ANE");
            }
        }
    }
}
