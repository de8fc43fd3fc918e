package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ane4j.model.Json;
import ane4j.model.ModelConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bench step --lora R --compare-full --compare-torch}: the LoRA step, the full step (each in its own JVM) and
 * PyTorch's LoRA and full steps (tools/torch_lora_step.py) in one run, on a small model. Not the speed: that the sides
 * are the steps they claim to be (trained-parameter counts from the shapes, the same first loss with B = 0, PyTorch's
 * independent adapters of the same size), and the ratios and table that come from them.
 */
@Tag("process")
class LoraStepBenchTest {
    @TempDir Path dir;

    private static double num(Map<String, Object> s, String key) { return ((Number) s.get(key)).doubleValue(); }

    @SuppressWarnings("unchecked")
    @Test
    void loraAndFullStepsSideBySideWithPyTorch() throws Exception {
        Path json = dir.resolve("lora.json");
        var r = BenchCommandTest.run("bench", "step", "--quick", "--steps", "1", "--warmup", "0", "--backend", "ref",
                "--lora", "4", "--lora-targets", "q,v,o,w2", "--compare-full", "--rounds", "2", "--compare-torch", "--json", json.toString());
        assumeTrue(r.code() == 0 || !r.err().contains("torch_lora_step.py failed"), "no PyTorch for /usr/bin/python3: " + r.err());
        assertEquals(0, r.code(), r.err() + r.out());
        Map<String, Object> m = (Map<String, Object>) Json.parse(Files.readString(json));
        Map<String, Object> s = BenchCommandTest.summary(m);
        ModelConfig c = ModelConfig.parse("tiny");
        // rank 4 on q (d → q), v (d → kv), o (q → d), w2 (hidden → d): r·(in + out) per matrix per layer
        long adapters = 4L * c.nLayers() * ((c.dim() + c.qDim()) + (c.dim() + c.kvDim()) + (c.qDim() + c.dim()) + (c.hiddenDim() + c.dim()));
        assertEquals(adapters, num(s, "trainedParameters"));
        assertEquals(num(m, "parameters"), num(s, "fullTrainedParameters"));
        // PEFT's B = 0: the LoRA side's first step is the full side's model on the same tokens
        assertEquals(num(s, "fullFirstLoss"), num(s, "firstLoss"));
        Map<String, Object> loraSide = (Map<String, Object>) m.get("loraSide"), fullSide = (Map<String, Object>) m.get("fullSide");
        assertEquals(10.0, num(BenchCommandTest.summary(loraSide), "compiles"), "the LoRA step compiles the same ten kernels, once");
        assertEquals(10.0, num(BenchCommandTest.summary(fullSide), "compiles"));
        assertTrue(String.valueOf(loraSide.get("command")).contains("--lora 4 --lora-targets q,v,o,w2"), String.valueOf(loraSide.get("command")));
        assertTrue(!String.valueOf(fullSide.get("command")).contains("--lora"), String.valueOf(fullSide.get("command")));
        // two rounds (LoRA first, then full first): the ratio is the median of the rounds' ratios, each a pair's
        List<Number> lr = (List<Number>) s.get("msPerStepRounds"), fr = (List<Number>) s.get("fullMsPerStepRounds"), rr = (List<Number>) s.get("msRatioRounds");
        assertEquals(2, rr.size());
        for (int i = 0; i < 2; i++) assertEquals(lr.get(i).doubleValue() / fr.get(i).doubleValue(), rr.get(i).doubleValue(), 2e-3 * rr.get(i).doubleValue());   // the JSON keeps 3 decimals
        assertEquals((rr.get(0).doubleValue() + rr.get(1).doubleValue()) / 2, num(s, "msRatio"), 2e-3 * num(s, "msRatio"));
        assertEquals((lr.get(0).doubleValue() + lr.get(1).doubleValue()) / 2, num(s, "msPerStep"), 2e-3 * num(s, "msPerStep"));
        assertTrue(r.out().contains("(LoRA first, ") && r.out().contains("(full first, "), r.out());
        assertEquals(num(s, "peakRssMB") / num(s, "fullPeakRssMB"), num(s, "peakRssRatio"), 1e-3 * num(s, "peakRssRatio"));
        assertTrue(num(s, "peakRssMB") > 50 && num(s, "fullPeakRssMB") > 50, "each side's VmHWM is a JVM's: " + s);
        // PyTorch, written from the math in tools/: its adapters have the same size, its LoRA start is its full model
        assertEquals(adapters, num(s, "torchTrainedParameters"));
        assertEquals(num(m, "parameters"), num(s, "torchFullTrainedParameters"));
        assertEquals(num(s, "torchFullFirstLoss"), num(s, "torchFirstLoss"), 1e-4);
        assertEquals(List.of("q", "v", "o", "w2"), ((Map<String, Object>) m.get("torchLora")).get("targets"));
        assertEquals(num(s, "torchMsPerStep") / num(s, "msPerStep"), num(s, "speedupVsTorchLora"), 1e-3 * num(s, "speedupVsTorchLora"));
        for (String row : List.of("ane4j full", "ane4j LoRA r4", "ane4j LoRA / full", "PyTorch full", "PyTorch LoRA r4", "PyTorch LoRA / full"))
            assertTrue(r.out().contains("  " + row + " "), row + " in\n" + r.out());
        assertTrue(r.out().contains("note: LoRA / full: "), r.out());
    }

    @Test
    void compareFullNeedsLoraAndBadTargetsAreOneLine() {
        var r = BenchCommandTest.run("bench", "step", "--quick", "--no-save", "--compare-full");
        assertEquals(1, r.code());
        assertEquals("ane4j bench: [bench] --compare-full compares a LoRA step with the full step: give --lora RANK too (e.g. --lora 8)", r.err().strip());
        r = BenchCommandTest.run("bench", "step", "--quick", "--no-save", "--lora", "4", "--lora-targets", "q,x", "--compare-full");
        assertEquals(1, r.code());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertTrue(r.err().contains("[lora] target 'x' is not one of q,k,v,o,w1,w2,w3"), r.err());
        r = BenchCommandTest.run("bench", "step", "--quick", "--no-save", "--lora-alpha", "8");
        assertEquals("ane4j bench: [bench] --lora-alpha needs --lora RANK", r.err().strip());
        r = BenchCommandTest.run("bench", "step", "--quick", "--no-save", "--rounds", "3");
        assertEquals("ane4j bench: [bench] --rounds alternates the two sides of --compare-full: give --lora RANK --compare-full too", r.err().strip());
        r = BenchCommandTest.run("bench", "step", "--quick", "--no-save", "--lora", "4", "--compare-full", "--rounds", "0");
        assertEquals("ane4j bench: [bench] --rounds 0 must be 1 to 20 (each round runs both sides once)", r.err().strip());
    }
}
