package ane4j.train;

import ane4j.backend.ref.RefBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The README's fine-tuning figures (not a test): ms/step and peak RSS of one training JVM, LoRA or full, on the reference
 * backend with fp16 storage. Run one JVM per mode, side by side, under the big-memory lock:
 * <pre>flock /work/bigmem.lock java -Xmx6g -cp target/classes:target/test-classes ane4j.train.LoraFigures full|lora8 MODEL STEPS</pre>
 * Prints one line: mode, median and range of ms/step over the steps after the first, VmHWM of this process.
 */
public final class LoraFigures {
    public static void main(String[] args) throws Exception {
        String mode = args[0], model = args.length > 1 ? args[1] : "stories110m";
        int steps = args.length > 2 ? Integer.parseInt(args[2]) : 6;
        Path dir = Files.createTempDirectory("lora-figures");
        ane4j.model.ModelConfig c = ane4j.model.ModelConfig.parse(model);
        // random tokens over the whole vocabulary, so the classifier is the model's (the embedded corpus would shrink it)
        int[] tokens = new int[64 * c.seqLen()];
        java.util.Random r = new java.util.Random(1);
        for (int i = 0; i < tokens.length; i++) tokens[i] = r.nextInt(c.vocabSize());
        Path data = dir.resolve("tokens.bin");
        ane4j.model.TokenShard.write(data, tokens);
        var m = new java.util.LinkedHashMap<>(Map.of("model", model, "data", data.toString(), "steps", "1000", "checkpointEvery", "0",
                "runDir", dir.resolve("run").toString(), "backend", "ref", "lr", "1e-4"));
        if (mode.startsWith("lora")) { m.put("lora", mode.substring(4)); m.put("loraTargets", "q,k,v,o,w1,w2,w3"); }
        List<Double> ms = new ArrayList<>();
        try (Trainer t = new Trainer(TrainOptions.of(m), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            for (var s : t.run(null, steps)) ms.add(s.msPerStep());
        }
        List<Double> after = new ArrayList<>(ms.subList(1, ms.size()));
        java.util.Collections.sort(after);
        String hwm = Files.readAllLines(Path.of("/proc/self/status")).stream().filter(l -> l.startsWith("VmHWM")).findFirst().orElse("VmHWM ?");
        System.out.printf(java.util.Locale.ROOT, "%s %s: ms/step median %.0f (range %.0f–%.0f over steps 1..%d), %s%n", mode, model,
                after.get(after.size() / 2), after.getFirst(), after.getLast(), steps - 1, hwm.replaceAll("\\s+", " "));
    }
}
