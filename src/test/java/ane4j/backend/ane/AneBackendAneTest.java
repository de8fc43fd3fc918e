package ane4j.backend.ane;

import ane4j.backend.Kernel;
import ane4j.backend.OutputDiff;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.backend.ref.RefBackend;
import ane4j.cli.Probes;
import ane4j.programs.AcceptancePrograms;
import ane4j.mil.AcceptanceCases;
import ane4j.mil.Program;
import ane4j.model.ModelConfig;
import ane4j.train.TrainingKernels;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * On Apple silicon only: programs compiled and run on the real ANE against the reference backend (fp16 storage), with
 * the fp16 tolerances of {@link OutputDiff#within}. Run alone ({@code mvn test -Dtest='*AneTest'}): the fake runtime of
 * the contract tests and the real framework cannot both be loaded in one JVM. About 45 compiles, under the budget.
 */
@EnabledOnOs(OS.MAC)
class AneBackendAneTest {
    static AneBackend ane;

    @BeforeAll
    static void ane() {
        AneBackend b = new AneBackend();
        assumeTrue(b.isAvailable(), () -> "ANE not available: " + b.unavailableReason());
        ane = b;
        System.out.println("[ane-test] chip " + b.chip() + ", dialect " + b.dialect());
    }

    static Map<String, TensorBuffer> inputs(Kernel k, long seed, float scale) {
        Map<String, TensorBuffer> m = new LinkedHashMap<>();
        long n = 0;
        for (TensorSpec s : k.inputs()) m.put(s.name(), TensorBuffer.random(s.type(), seed + n++, scale));
        return m;
    }

    /** Runs both backends on the same inputs; asserts every output within fp16 tolerance and prints the errors. */
    static void compare(String name, Program program, float scale) {
        try (Kernel a = ane.compile(program); Kernel r = new RefBackend().compile(program)) {
            Map<String, TensorBuffer> in = inputs(r, name.hashCode(), scale);
            Map<String, TensorBuffer> want = r.evaluate(in), got = a.evaluate(in);
            for (String out : want.keySet()) {
                OutputDiff d = OutputDiff.of(want.get(out), got.get(out));
                System.out.printf("[ane-test] %-40s %-8s max|err| %.3e mean|err| %.3e max|ref| %.3e%n", name, out, d.maxAbs(), d.meanAbs(), d.maxRef());
                assertTrue(d.maxRef() > 0, name + "/" + out + ": reference output is all zeros");
                assertTrue(d.within(OutputDiff.FP16_ATOL, OutputDiff.FP16_RTOL), name + "/" + out + ": " + d);
            }
        }
    }

    static boolean castSupported() { return ane.dialect() == MilDialect.PROGRAM_1_3_IOS18; }

    @Test
    void singleConv() {
        compare("probe conv 256x64", Probes.conv(256, 64), 1f);
        if (castSupported()) compare("a1 conv fp32 io", AcceptancePrograms.a1Conv(256, 64, AcceptancePrograms.uniform(1, 256 * 256, 1 / 16f)), 1f);
    }

    @Test
    void dynamicMatmulA4() {
        compare("a4 stories110m wo", AcceptancePrograms.a4DynamicMatmul(768, 256, 768), 0.25f);
    }

    @Test
    void attentionWithMask() {
        compare("probe attention+mask", Probes.attention(256, 4, 64), 1f);
    }

    static Stream<Arguments> acceptancePrograms() {
        return AcceptanceCases.goldenCases().stream().map(c -> Arguments.of(c.name(), c.program()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("acceptancePrograms")
    void everyAcceptanceProgram(String name, Program program) {
        compare(name, program, 0.25f);
    }

    static Stream<Arguments> trainingKernels() {
        List<Arguments> l = new ArrayList<>();
        for (String model : List.of("tiny", "stories110m"))
            for (TrainingKernels.Spec k : new TrainingKernels(ModelConfig.parse(model)).all())
                l.add(Arguments.of(model + "/" + k.name(), k.program()));
        return l.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("trainingKernels")
    void everyTrainingKernel(String name, Program program) {
        compare(name, program, 0.25f);
    }

    @Test
    void zeroCopySurfacesGiveTheSameResultAsCopies() {
        Program p = AcceptancePrograms.a4DynamicMatmul(768, 256, 768);
        try (AneKernel k = (AneKernel) ane.compile(p)) {
            Map<String, TensorBuffer> in = inputs(k, 11, 0.25f);
            float[] copied = k.evaluate(in).get("y").toFloatArray();
            TensorBuffer x = k.allocateInput("x"), y = k.allocateOutput("y");
            x.copyFrom(in.get("x"));
            k.evaluate(Map.of("x", x), Map.of("y", y));
            assertArrayEquals(copied, y.toFloatArray());
        }
    }
}
