package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.model.Json;
import ane4j.model.Llama2Bin;
import ane4j.model.ModelConfig;
import ane4j.model.ParameterLayout;
import ane4j.model.Parameters;
import ane4j.model.TokenShard;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EvalCommandTest {
    @TempDir Path dir;

    record Run(int code, String out, String err) {}

    static Run eval(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        String[] all = new String[args.length + 1];
        all[0] = "eval";
        System.arraycopy(args, 0, all, 1, args.length);
        int code = Main.run(all, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    static float loss(Run r) {
        Matcher m = Pattern.compile("^loss (\\S+)  perplexity (\\S+)  on (\\d+) windows", Pattern.MULTILINE).matcher(r.out());
        assertTrue(m.find(), r.out() + r.err());
        assertEquals(Math.exp(Double.parseDouble(m.group(1))), Double.parseDouble(m.group(2)), 1e-3 * Double.parseDouble(m.group(2)), "perplexity = e^loss");
        return Float.parseFloat(m.group(1));
    }

    /**
     * The golden model of tools/gen_model_golden.py and its PyTorch (float64) logits: the loss eval reports on the golden
     * tokens (one window of 9 predictions) equals the cross-entropy of PyTorch's logits, fp32 storage to 1e-4, fp16 to 1e-2.
     */
    @Test
    @SuppressWarnings("unchecked")
    void lossMatchesPyTorchLogitsOfTheGoldenModel() throws Exception {
        Path golden = Path.of(EvalCommandTest.class.getResource("/golden/model/llama_tiny.bin").toURI());
        var g = (Map<String, Object>) ((Map<String, Object>) Json.parse(Files.readString(golden.resolveSibling("logits.json")))).get("llama_tiny");
        List<Long> tokens = (List<Long>) g.get("tokens");
        List<List<Number>> logits = (List<List<Number>>) g.get("logits");
        double expected = 0;
        for (int t = 0; t + 1 < tokens.size(); t++) {
            double max = Double.NEGATIVE_INFINITY, sum = 0;
            for (Number l : logits.get(t)) max = Math.max(max, l.doubleValue());
            for (Number l : logits.get(t)) sum += Math.exp(l.doubleValue() - max);
            expected -= logits.get(t).get(tokens.get(t + 1).intValue()).doubleValue() - max - Math.log(sum);
        }
        expected /= tokens.size() - 1;
        // the same weights with a context of 9 = the golden's 10 tokens as one window (RoPE depends on the position only)
        Parameters p = Llama2Bin.read(golden);
        ModelConfig c9 = p.config().withSeqLen(tokens.size() - 1);
        Path model = dir.resolve("tiny9.bin"), data = dir.resolve("golden-tokens.bin");
        Llama2Bin.write(model, new Parameters(new ParameterLayout(c9), p.data()));
        TokenShard.write(data, tokens.stream().mapToInt(Long::intValue).toArray());
        assertEquals(expected, loss(eval("--model", model.toString(), "--data", data.toString(), "--storage", "fp32", "--backend", "ref")), 1e-4);
        assertEquals(expected, loss(eval("--model", model.toString(), "--data", data.toString(), "--backend", "ref")), 1e-2);
    }

    /**
     * RoPE scaling through the training kernels: the tiny Llama of tools/gen_rope_scaling_golden.py with Llama 3's rule
     * (config.json rope_scaling) evaluated by eval, whose loss comes from the training step's forward, equals the
     * cross-entropy of PyTorch's logits with the scaled frequencies, and not the unscaled ones' (0.002 apart).
     */
    @Test
    @SuppressWarnings("unchecked")
    void ropeScalingReachesTheTrainingKernels() throws Exception {
        Path golden = Path.of(EvalCommandTest.class.getResource("/golden/rope/llama3_tiny/model.safetensors").toURI());
        var root = (Map<String, Object>) Json.parse(Files.readString(golden.getParent().resolveSibling("logits.json")));
        List<Long> tokens = (List<Long>) root.get("tokens");
        Map<String, Double> expected = new java.util.HashMap<>();
        for (String key : List.of("llama3", "none")) {
            List<List<Number>> logits = (List<List<Number>>) ((Map<String, Object>) root.get(key)).get("logits");
            double e = 0;
            for (int t = 0; t + 1 < tokens.size(); t++) {
                double max = Double.NEGATIVE_INFINITY, sum = 0;
                for (Number l : logits.get(t)) max = Math.max(max, l.doubleValue());
                for (Number l : logits.get(t)) sum += Math.exp(l.doubleValue() - max);
                e -= logits.get(t).get(tokens.get(t + 1).intValue()).doubleValue() - max - Math.log(sum);
            }
            expected.put(key, e / (tokens.size() - 1));
        }
        Parameters p = ane4j.model.Safetensors.read(golden);
        assertTrue(p.config().ropeScaling() instanceof ane4j.model.RopeScaling.Llama3, p.config().toFileText());
        ModelConfig window = p.config().withSeqLen(tokens.size() - 1);   // the golden's tokens as one window
        Path model = Files.createDirectories(dir.resolve("llama3")).resolve("m.safetensors"), data = dir.resolve("rope-tokens.bin");
        ane4j.model.Safetensors.write(model, new Parameters(new ParameterLayout(window), p.data()), ane4j.model.Safetensors.DType.F32);
        TokenShard.write(data, tokens.stream().mapToInt(Long::intValue).toArray());
        float got = loss(eval("--model", model.toString(), "--data", data.toString(), "--storage", "fp32", "--backend", "ref"));
        assertEquals(expected.get("llama3"), got, 1e-4);
        assertTrue(Math.abs(expected.get("none") - got) > 1e-3, "the unscaled model's loss is " + expected.get("none"));
    }

    /** eval --run without --data evaluates the run's own held-out windows: the last validation loss training logged. */
    @Test
    void runDefaultIsTheRunsHeldOutSplit() {
        Path run = dir.resolve("run");
        float last;
        TrainOptions o = TrainOptions.of(Map.of("steps", "3", "runDir", run.toString(), "evalEvery", "3", "evalTokens", "128", "warmup", "1"));
        try (Trainer t = new Trainer(o, new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            last = t.run(null, 0).getLast().valLoss();
        }
        Run r = eval("--run", run.toString());
        assertEquals(0, r.code(), r.err());
        assertEquals(last, loss(r), 1e-4f, r.out());
        assertTrue(r.out().contains("on 2 windows of 64 tokens of the embedded corpus's validation stories (seed 42)"), r.out());
        Run more = eval("--run", run.toString(), "--tokens", "256");
        assertTrue(more.out().contains("on 4 windows"), more.out());
    }

    /** Bad inputs: one line each, naming the problem and the fix. */
    @Test
    void badInputsAreOneLineEach() throws Exception {
        Path small = dir.resolve("small.bin"), model = dir.resolve("m.bin");
        TokenShard.write(small, new int[] {1, 2, 3});
        Llama2Bin.write(model, Parameters.init(ModelConfig.llama("mini", 48, 96, 2, 4, 100, 16), 3));
        Map<String[], String> cases = Map.of(
                new String[] {}, "ane4j eval: no model given",
                new String[] {"--run", dir.resolve("nope").toString()}, "ane4j eval: [run] " + dir.resolve("nope") + ": no such run folder",
                new String[] {"--model", model.toString()}, "ane4j eval: [eval] " + model + " is not part of a run, so there is no held-out split to default to; give --data FILE",
                new String[] {"--model", model.toString(), "--data", dir.resolve("none.bin").toString()}, "ane4j eval: [eval] --data " + dir.resolve("none.bin") + ": no such file",
                new String[] {"--model", model.toString(), "--data", small.toString()}, "ane4j eval: [tokens] small.bin: 3 tokens, need at least seqLen+1 = 17",
                new String[] {"--model", model.toString(), "--data", small.toString(), "--tokens", "0"}, "ane4j eval: --tokens 0 is not a positive number");
        for (var e : cases.entrySet()) {
            Run r = eval(e.getKey());
            assertEquals(1, r.code(), String.join(" ", e.getKey()) + ": " + r.err());
            assertTrue(r.err().startsWith(e.getValue()), String.join(" ", e.getKey()) + " → " + r.err());
            assertEquals(1, r.err().strip().lines().count(), r.err());
        }
    }
}
