package ane4j.infer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.chip.Chip;
import ane4j.chip.ChipRules;
import ane4j.chip.Severity;
import ane4j.chip.Violation;
import ane4j.cli.Main;
import ane4j.mil.DType;
import ane4j.mil.Dialect;
import ane4j.mil.MilParser;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.model.ModelConfig;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every generation kernel of every preset (each prefill bucket up to seqLen, the decode pair, without and with LoRA on all
 * seven targets) carries no weight file (macOS 27's bundle check refuses two or more: docs/generation.md), survives its
 * MIL text (the worker compiles from the text), and passes the chip rules of every family with no error; the kernels
 * of one preset pass {@code ane4j mil check --chip} for every chip through the CLI.
 */
class GenerationKernelsTest {
    static final List<int[]> LORA = List.of(new int[] {0}, new int[] {8}, new int[] {64});
    static final List<String> ALL = List.of("q", "k", "v", "o", "w1", "w2", "w3");

    static List<GenerationKernels.Spec> all(ModelConfig c, int rank) {
        GenerationKernels k = new GenerationKernels(c, rank, rank == 0 ? List.of() : ALL, DType.FP16);
        int cap = (c.seqLen() + 31) / 32 * 32;
        List<GenerationKernels.Spec> out = new ArrayList<>();
        for (int s : BackendGenerator.defaultBuckets(cap)) {
            out.add(k.prefillAttn(s));
            out.add(k.ffn(s));
        }
        out.add(k.decodeAttn(cap));
        out.add(k.ffn(1));
        return out;
    }

    @Test
    void noWeightFileAndNoChipRuleErrorForAnyPresetBucketOrAdapter() {
        Map<String, TreeSet<String>> errors = new TreeMap<>(), warnings = new TreeMap<>();
        List<String> first = new ArrayList<>();
        for (String preset : ModelConfig.PRESETS) {
            ModelConfig c = ModelConfig.parse(preset);
            for (int[] r : LORA) {
                if (r[0] > 0 && (r[0] + 31) / 32 * 32 > c.dim()) continue;   // rank 64 on tiny (dim 64) fits; larger would not
                for (GenerationKernels.Spec s : all(c, r[0])) {
                    String name = s.layout().name() + (r[0] > 0 ? " lora" + r[0] : "");
                    assertTrue(s.program().weights().isEmpty(), preset + " " + name + " has weight files " + s.program().weights().files().keySet());
                    for (Chip chip : Chip.values())
                        for (Violation v : ChipRules.check(s.program(), chip)) {
                            if (v.isError()) {
                                errors.computeIfAbsent(preset, p -> new TreeSet<>()).add(v.rule().id() + " " + name + " " + chip);
                                if (first.size() < 5) first.add(preset + " " + name + " " + chip + ": " + v.format());
                            } else if (v.severity() == Severity.WARNING) warnings.computeIfAbsent(preset, p -> new TreeSet<>()).add(v.rule().id() + " " + chip);
                        }
                }
            }
        }
        warnings.forEach((p, ws) -> System.out.println("[chip rules] generation " + p + " warnings: " + ws));
        assertEquals(List.of(), first, "chip-rule errors: " + errors);
    }

    @Test
    void theMilTextIsTheProgram() {
        for (String preset : List.of("stories15m", "qwen3-0.6b"))
            for (GenerationKernels.Spec s : List.of(new GenerationKernels(ModelConfig.parse(preset)).prefillAttn(64), new GenerationKernels(ModelConfig.parse(preset)).decodeAttn(256),
                    new GenerationKernels(ModelConfig.parse(preset), 8, ALL, DType.FP16).ffn(1))) {
                String text = MilWriter.write(s.program(), Dialect.IOS18);
                Program back = MilParser.parse(text);
                assertEquals(text, MilWriter.write(back, Dialect.IOS18), preset + " " + s.layout().name());
            }
    }

    @Test
    void milCheckChipPassesThemOnEveryChip(@TempDir Path dir) throws IOException {
        ModelConfig c = ModelConfig.parse("qwen3-0.6b");   // the widest preset: GQA, QK-norm, head dim 128
        List<Path> files = new ArrayList<>();
        for (GenerationKernels.Spec s : List.of(new GenerationKernels(c).prefillAttn(256), new GenerationKernels(c).ffn(256), new GenerationKernels(c).decodeAttn(256),
                new GenerationKernels(c).ffn(1))) {
            Path f = dir.resolve(s.layout().name() + ".mil");
            Files.writeString(f, MilWriter.write(s.program(), Dialect.IOS18));
            files.add(f);
        }
        for (Chip chip : Chip.values())
            for (Path f : files) {
                var out = new ByteArrayOutputStream();
                var err = new ByteArrayOutputStream();
                int code = Main.run(new String[] {"mil", "check", f.toString(), "--chip", chip.name().toLowerCase(java.util.Locale.ROOT)},
                        new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
                String o = out.toString(StandardCharsets.UTF_8);
                assertEquals(0, code, f.getFileName() + " on " + chip + ":\n" + o + err.toString(StandardCharsets.UTF_8));
                assertTrue(o.contains(chip.name() + ": 0 errors"), o);
            }
    }
}
