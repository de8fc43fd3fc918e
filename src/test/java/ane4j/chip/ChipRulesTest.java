package ane4j.chip;

import ane4j.mil.DType;
import ane4j.mil.Dialect;
import ane4j.mil.FunctionBuilder;
import ane4j.mil.Mil;
import ane4j.mil.MilParser;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.*;

/** Each rule at its limit and just past it, on the chips it applies to; positions; the package's dependencies. */
class ChipRulesTest {
    static Program program(Consumer<FunctionBuilder> body) { return Mil.program().function("main", body).build(); }

    static TensorType fp16(int... shape) { return TensorType.of(DType.FP16, shape); }

    /** x → mul(reshape(x, shape), 2): one value of {@code shape}. */
    static Program reshaped(int... shape) {
        int n = 1;
        for (int s : shape) n *= s;
        int count = n;
        return program(f -> f.output(f.named("y", f.mul(f.reshape(f.input("x", fp16(1, 64, 1, count / 64)), shape), 2f))));
    }

    static List<String> ids(List<Violation> vs, Severity s) {
        return vs.stream().filter(v -> v.severity() == s).map(v -> v.rule().id()).distinct().toList();
    }

    @Test
    void axisCapIs16384OnM1ToM3And65536OnM4AndM5() {
        for (Chip c : Chip.values()) {
            long cap = c.isA16Tier() ? 65536 : 16384;
            assertEquals(List.of(), ids(ChipRules.check(reshaped(1, 1, 4, (int) cap), c), Severity.ERROR), c + " at the cap");
            List<Violation> over = ChipRules.errors(ChipRules.check(reshaped(1, 1, 2, (int) cap + 64), c));
            assertEquals(Rule.AXIS_CAP, over.get(0).rule(), c + " past the cap");
            assertEquals("axis 3 is " + (cap + 64), over.get(0).detail());
            assertEquals(Long.toString(cap), over.get(0).limit());
        }
    }

    @Test
    void theChannelAxisHasItsOwnCapOf65536() {
        assertEquals(List.of(), ids(ChipRules.check(reshaped(1, 65536, 1, 2), Chip.M1), Severity.ERROR));
        assertEquals(List.of("channel-cap"), ids(ChipRules.check(reshaped(1, 65600, 1, 1), Chip.M5), Severity.ERROR));
    }

    @Test
    void transposesAndTheInputsTheyReadTakeTheWideExtent() {
        Program p = program(f -> f.output(f.named("y", f.transpose(f.input("x", fp16(1, 1, 20000, 16)), 0, 1, 3, 2))));
        assertEquals(List.of(), ids(ChipRules.check(p, Chip.M1), Severity.ERROR));
        Program q = program(f -> f.output(f.named("y", f.mul(f.input("x", fp16(1, 1, 20000, 16)), 2f))));
        assertEquals(List.of("axis-cap"), ids(ChipRules.check(q, Chip.M1), Severity.ERROR));
    }

    @Test
    void matmulContractionNotAMultipleOf32IsAnErrorOnM1AndAWarningElsewhere() {
        Program p = program(f -> {
            Value q = f.input("q", fp16(1, 4, 64, 16)), k = f.input("k", fp16(1, 4, 64, 16));
            f.output(f.named("y", f.matmul(q, k, false, true)));
        });
        assertEquals(List.of("matmul-contraction-32"), ids(ChipRules.check(p, Chip.M1), Severity.ERROR));
        for (Chip c : List.of(Chip.M2, Chip.M3, Chip.M4, Chip.M5)) {
            assertEquals(List.of(), ids(ChipRules.check(p, c), Severity.ERROR), c.toString());
            assertTrue(ids(ChipRules.check(p, c), Severity.WARNING).contains("matmul-contraction-32"), c.toString());
        }
        Program t = program(f -> {   // transpose_x: the contraction is x's second-to-last axis (64)
            Value a = f.input("a", fp16(1, 4, 64, 16)), b = f.input("b", fp16(1, 4, 64, 16));
            f.output(f.named("y", f.matmul(a, b, true, false)));
        });
        assertEquals(List.of(), ids(ChipRules.check(t, Chip.M1), Severity.ERROR));
    }

    @Test
    void lastAxisPaddingAndSmallSurfacesAreWarningsWithTheirCost() {
        List<Violation> vs = ChipRules.check(reshaped(1, 4, 64, 16), Chip.M4);
        assertEquals(List.of(), ids(vs, Severity.ERROR));
        Violation pad = vs.stream().filter(v -> v.rule() == Rule.LAST_AXIS_64_BYTES).findFirst().orElseThrow();
        assertEquals("last axis is 32 bytes, stored as 64 (2.00× the memory and traffic)", pad.detail());
        Violation small = vs.stream().filter(v -> v.rule() == Rule.MIN_SURFACE).findFirst().orElseThrow();
        assertTrue(small.detail().startsWith("input is 8192 bytes: below both measured minimums"), small.detail());
        List<Violation> mid = ChipRules.check(reshaped(1, 64, 1, 256), Chip.M4);   // 32 KB
        assertTrue(mid.stream().anyMatch(v -> v.rule() == Rule.MIN_SURFACE && v.detail().contains("above ironmill's 16 KB, below Orion's 48 KB")), mid.toString());
        assertTrue(ChipRules.check(reshaped(1, 64, 1, 512), Chip.M4).stream().noneMatch(v -> v.rule() == Rule.MIN_SURFACE));
    }

    @Test
    void convKernelWidthIs13BeforeTheA16TierAnd15OnAnErrorOnlyWhereMeasured() {
        Program p = program(f -> f.output(f.named("y", f.conv(f.input("x", fp16(1, 8, 1, 64)), f.weight("w", fp16(8, 8, 1, 14), new float[8 * 8 * 14])))));
        for (Chip c : Chip.values()) {
            // 14 was rejected on a live M1; M2/M3 inherit 13 unmeasured and ironmill says 16: a warning there
            assertEquals(c == Chip.M1 ? List.of("conv-kernel-width") : List.of(), ids(ChipRules.check(p, c), Severity.ERROR), c.toString());
            assertEquals(c == Chip.M2 || c == Chip.M3, ids(ChipRules.check(p, c), Severity.WARNING).contains("conv-kernel-width"), c.toString());
        }
    }

    @Test
    void packedWeightFilesFailOnM1() {
        Program p = program(f -> {
            Value x = f.input("x", fp16(1, 1, 64, 64));
            Value a = f.weight("a", fp16(1, 1, 64, 64), new float[64 * 64], "packed.bin");
            Value b = f.weight("b", fp16(1, 1, 64, 64), new float[64 * 64], "packed.bin");
            f.output(f.named("y", f.add(f.matmul(x, a), f.matmul(x, b))));
        });
        assertEquals(List.of("packed-blob"), ids(ChipRules.check(p, Chip.M1), Severity.ERROR));
        assertTrue(ids(ChipRules.check(p, Chip.M2), Severity.WARNING).contains("packed-blob"));
        assertTrue(ChipRules.check(p, Chip.M3).stream().noneMatch(v -> v.rule() == Rule.PACKED_BLOB));
    }

    @Test
    void largeBakedWeightsAreAWarning() {
        int n = 2048;
        Program p = program(f -> f.output(f.named("y", f.matmul(f.input("x", fp16(1, 1, 64, n)), f.weight("w", fp16(1, 1, n, n + 64), new float[n * (n + 64)])))));
        List<Violation> vs = ChipRules.check(p, Chip.M4);
        assertEquals(List.of(), ids(vs, Severity.ERROR));
        assertTrue(vs.stream().anyMatch(v -> v.rule() == Rule.WEIGHT_BUDGET && v.detail().startsWith("8.3 MB")), vs.toString());
    }

    @Test
    void numericCliffsAreNotesOnTheChipsThatHaveThem() {
        Program p = program(f -> {
            Value x = f.input("x", fp16(1, 64, 1, 128));
            f.output(f.named("y", f.sliceBySize(x, new int[] {0, 0, 0, 64}, new int[] {1, 64, 1, 64})));
        });
        for (Chip c : Chip.values())
            assertEquals(c.isA16Tier() ? List.of() : List.of("slice-clamp"), ids(ChipRules.check(p, c), Severity.NOTE), c.toString());
    }

    @Test
    void violationsCarryTheLineAndColumnOfTheirValueInTheText() {
        Program p = reshaped(1, 1, 2, 20000);
        for (Dialect d : Dialect.values()) {
            String text = MilWriter.write(p, d);
            Program parsed = MilParser.parse(text);
            List<String> lines = text.lines().toList();
            List<Violation> vs = ChipRules.check(text, parsed, Chip.M2);
            assertFalse(ChipRules.errors(vs).isEmpty());
            for (Violation v : vs) {
                if (v.value() == null) continue;
                assertTrue(v.line() > 0, v.toString());
                String line = lines.get(v.line() - 1);
                assertEquals(v.value(), line.substring(v.column() - 1, v.column() - 1 + v.value().length()), line);
                String after = line.substring(v.column() - 1 + v.value().length()).stripLeading();
                if (v.value().equals("x")) assertTrue(line.contains("func main") && (after.startsWith(")") || after.startsWith(",")), line);
                else assertTrue(after.startsWith("="), line);
            }
        }
    }

    @Test
    void theRefusalIsOneLineNamingRuleChipLimitAndSource() {
        var e = assertThrows(ChipRuleException.class, () -> ChipRules.requireCompatible(reshaped(1, 1, 2, 20000), "main", Chip.M1));
        assertTrue(e.getMessage().startsWith("[ane] main breaks chip rule axis-cap on M1: reshape_"), e.getMessage());
        assertTrue(e.getMessage().contains("axis 3 is 20000 (limit 16384; source: ANEForge aneforge/_targets.py _LIMITS max_tensor_dim {A13: 16384, A16: 65536})"), e.getMessage());
        assertTrue(e.getMessage().contains("ANECCompile() FAILED") && e.getMessage().endsWith("--chip m1"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
        assertEquals(2, e.errors().size());   // the reshape and the mul after it
        ChipRules.requireCompatible(reshaped(1, 1, 2, 20000), "main", Chip.M4);
    }

    @Test
    void chipsFromSubTypesAndNames() {
        assertEquals(Chip.M1, Chip.fromSubType("h13g").orElseThrow());
        assertEquals(Chip.M4, Chip.fromSubType("H16G").orElseThrow());
        assertEquals(Chip.M5, Chip.fromSubType("h17s").orElseThrow());
        assertTrue(Chip.fromSubType("h12").isEmpty());
        assertTrue(Chip.fromSubType(null).isEmpty());
        assertEquals(Chip.M3, Chip.parse("m3"));
        assertEquals(Chip.M2, Chip.parse("h14g"));
        var e = assertThrows(IllegalArgumentException.class, () -> Chip.parse("m9"));
        assertTrue(e.getMessage().startsWith("[chip] unknown chip 'm9'"), e.getMessage());
    }

    @Test
    void everyRuleHasASourceAndAppliesSomewhere() {
        for (Rule r : Rule.values()) {
            assertFalse(r.source().isBlank(), r.id());
            assertTrue(Stream.of(Chip.values()).anyMatch(r::appliesTo), r.id());
            assertEquals(r, Rule.byId(r.id()));
        }
        assertFalse(Rule.SLICE_CLAMP.appliesTo(Chip.M4));
        assertTrue(Rule.SLICE_CLAMP.appliesTo(Chip.M3));
    }

    /** docs/DESIGN.md package table: {@code chip} may depend on {@code mil} only. */
    @Test
    void theChipPackageDependsOnMilOnly() throws IOException {
        Pattern ref = Pattern.compile("\\bane4j\\.(?!mil\\b|chip\\b)[a-z]+");
        List<String> offenders = new ArrayList<>();
        try (Stream<Path> files = Files.list(Path.of("src/main/java/ane4j/chip"))) {
            for (Path p : files.toList()) {
                Matcher m = ref.matcher(Files.readString(p));
                while (m.find()) offenders.add(p.getFileName() + ": " + m.group());
            }
        }
        assertEquals(List.of(), offenders);
        assertTrue(ref.matcher("import ane4j.backend.Kernel;").find(), "the scan sees a forbidden reference");
    }
}
