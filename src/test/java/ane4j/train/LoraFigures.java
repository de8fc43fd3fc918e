package ane4j.train;

import ane4j.run.TrainOptions;
import ane4j.backend.ref.RefBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The README's fine-tuning figures (not a test): ms/step and peak RSS of one training JVM, LoRA or full, on the reference
 * backend with fp16 storage. Run one JVM per mode, side by side, under the big-memory lock:
 * <pre>java -Xmx6g -cp target/classes:target/test-classes ane4j.train.LoraFigures full|lora8 MODEL STEPS</pre>
 * Prints one line: mode, median and range of ms/step over the steps after the first, VmHWM of this process.
 * {@code paired MODEL STEPS} times both in one JVM, a full step and a LoRA rank-8 step in turn, so that the load of a
 * shared machine falls on both alike (its VmHWM is of both runs together).
 */
public final class LoraFigures {
    public static void main(String[] args) throws Exception {
        String mode = args[0], model = args.length > 1 ? args[1] : "stories110m";
        int steps = args.length > 2 ? Integer.parseInt(args[2]) : 6;
        if (mode.equals("paired")) {
            paired(model, steps);
            return;
        }
        Map<String, String> m = options(model, Files.createTempDirectory("lora-figures"), mode);
        List<Double> ms = new ArrayList<>();
        long live;
        try (Trainer t = new Trainer(TrainOptions.of(m), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            for (var s : t.run(null, steps)) ms.add(s.msPerStep());
            System.gc();
            live = (Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory()) >> 20;
        }
        System.out.println(mode + " " + model + ": " + summary(ms) + ", " + hwm() + ", live heap after a GC at the end " + live + " MB");
    }

    static Map<String, String> options(String model, Path dir, String mode) throws java.io.IOException {
        ane4j.model.ModelConfig c = ane4j.model.ModelConfig.parse(model);
        int[] tokens = new int[64 * c.seqLen()];
        java.util.Random r = new java.util.Random(1);
        for (int i = 0; i < tokens.length; i++) tokens[i] = r.nextInt(c.vocabSize());
        Path data = dir.resolve("tokens.bin");
        ane4j.model.TokenShard.write(data, tokens);
        var m = new java.util.LinkedHashMap<>(Map.of("model", model, "data", data.toString(), "steps", "1000", "checkpointEvery", "0",
                "runDir", dir.resolve("run").toString(), "backend", "ref", "lr", "1e-4", "evalEvery", "0"));
        if (mode.startsWith("lora")) { m.put("lora", mode.substring(4)); m.put("loraTargets", "q,k,v,o,w1,w2,w3"); }
        return m;
    }

    static void paired(String model, int steps) throws Exception {
        List<Double> full = new ArrayList<>(), lora = new ArrayList<>();
        try (Trainer f = new Trainer(TrainOptions.of(options(model, Files.createTempDirectory("lora-figures"), "full")), new RefBackend(RefBackend.Options.ANE_LIKE), null);
             Trainer l = new Trainer(TrainOptions.of(options(model, Files.createTempDirectory("lora-figures"), "lora8")), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            for (int i = 0; i < steps; i++) {
                full.add(f.run(null, 1).getLast().msPerStep());
                lora.add(l.run(null, 1).getLast().msPerStep());
            }
        }
        List<Double> ratio = new ArrayList<>();
        for (int i = 1; i < steps; i++) ratio.add(lora.get(i) / full.get(i));
        java.util.Collections.sort(ratio);
        System.out.printf(java.util.Locale.ROOT, "paired %s: full %s; lora8 %s; lora/full per pair median %.2f (range %.2f–%.2f)%n", model, summary(full), summary(lora),
                ratio.get(ratio.size() / 2), ratio.getFirst(), ratio.getLast());
    }

    /** Median and range of ms/step over the steps after the first (which warms up). */
    static String summary(List<Double> ms) {
        List<Double> after = new ArrayList<>(ms.subList(1, ms.size()));
        java.util.Collections.sort(after);
        return String.format(java.util.Locale.ROOT, "ms/step median %.0f (range %.0f–%.0f over steps 1..%d)", after.get(after.size() / 2), after.getFirst(), after.getLast(), ms.size() - 1);
    }

    static String hwm() throws java.io.IOException {
        return Files.readAllLines(Path.of("/proc/self/status")).stream().filter(x -> x.startsWith("VmHWM")).findFirst().orElse("VmHWM ?").replaceAll("\\s+", " ");
    }
}
