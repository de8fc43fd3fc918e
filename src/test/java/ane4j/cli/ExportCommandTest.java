package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import ane4j.golden.TensorCheck;
import ane4j.model.CpuModel;
import ane4j.model.EmbeddedCorpus;
import ane4j.model.Json;
import ane4j.model.Llama2Bin;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.Safetensors;
import ane4j.model.Tokenizer;
import ane4j.train.Checkpoint;
import ane4j.train.TrainState;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ane4j export} against PyTorch: tools/gen_export_golden.py exported the committed tiny models with this CLI and
 * ran the files through its own Hugging Face-layout and run.c-layout forwards (float64). Here the same exports must give
 * the same bytes (sha256) and ane4j's CPU forward of the re-imported files the golden logits.
 */
class ExportCommandTest {
    static final double ATOL = 1e-4, RTOL = 1e-4; // float32 forward vs the float64 reference on the same weights
    static final String HINT = " (regenerate with ./install.sh --quick && /usr/bin/python3 tools/gen_export_golden.py)";

    @TempDir Path tmp;

    record Run(int code, String out, String err) {}

    static Run run(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    static Path resource(String name) {
        try {
            return Path.of(ExportCommandTest.class.getResource("/golden/" + name).toURI());
        } catch (URISyntaxException | NullPointerException e) {
            throw new AssertionError("missing golden file " + name + HINT, e);
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> golden() throws Exception {
        var g = (Map<String, Object>) Json.parse(Files.readString(resource("export/golden.json")));
        assertEquals(1L, g.get("version"));
        return g;
    }

    static String sha256(Path f) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(f)));
    }

    @SuppressWarnings("unchecked")
    @Test void exportsMatchPyTorchReferenceLogits() throws Exception {
        Map<String, Object> g = golden();
        var tokens = (List<Long>) g.get("tokens");
        Path llamaHf = tmp.resolve("llama_hf");
        Object[][] cases = {
                {"llama_hf", new String[] {"--model", resource("model/llama_tiny.bin").toString(), "--format", "safetensors"}, llamaHf},
                {"qwen3_bf16", new String[] {"--model", resource("model/qwen3").toString(), "--format", "safetensors", "--dtype", "bf16"}, tmp.resolve("qwen3_bf16")},
                {"llama_bin", new String[] {"--model", llamaHf.toString(), "--format", "llama2c"}, tmp.resolve("llama_bin.bin")}};
        for (Object[] c : cases) {
            String name = (String) c[0];
            Path dest = (Path) c[2];
            String[] args = java.util.stream.Stream.concat(java.util.stream.Stream.of("export"),
                    java.util.stream.Stream.concat(java.util.Arrays.stream((String[]) c[1]), java.util.stream.Stream.of("--out", dest.toString()))).toArray(String[]::new);
            Run r = run(args);
            assertEquals(0, r.code(), name + ": " + r.err());
            var gc = (Map<String, Object>) g.get(name);
            boolean folder = Files.isDirectory(dest);
            for (var e : ((Map<String, Object>) gc.get("sha256")).entrySet()) {
                Path f = folder ? dest.resolve(e.getKey()) : dest;
                assertEquals(e.getValue(), sha256(f), name + ": exported " + e.getKey() + " is not the file the golden was made from" + HINT);
            }
            Parameters p = folder ? Safetensors.read(dest.resolve("model.safetensors")) : Llama2Bin.read(dest);
            CpuModel m = new CpuModel(p);
            var logits = (List<List<Number>>) gc.get("logits");
            double max = 0;
            for (int pos = 0; pos < tokens.size(); pos++) {
                float[] out = m.forward(tokens.get(pos).intValue(), pos);
                double[] want = logits.get(pos).stream().mapToDouble(Number::doubleValue).toArray();
                try {
                    max = Math.max(max, TensorCheck.checkTensor(name + " logits at pos " + pos + " against PyTorch", want, out, ATOL, RTOL).maxAbsDiff());
                } catch (AssertionError e) {
                    fail(e.getMessage() + HINT);
                }
            }
            assertTrue(max < 1e-4, name + " max diff " + max);
        }
        // llama2.c → Hugging Face → llama2.c gives back run.c's file byte for byte
        assertEquals(sha256(resource("model/llama_tiny.bin")), sha256(tmp.resolve("llama_bin.bin")));
    }

    /** A run folder as train leaves it: run.txt and a checkpoint. */
    static Path fakeRun(Path dir, ModelConfig c, long seed) throws Exception {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("run.txt"), "# ane4j training run test\nmodel = " + c.name() + "\ninit = \ndata = embedded corpus\n");
        Parameters p = Parameters.init(c, seed);
        float[] zeros = new float[p.data().length];
        Checkpoint.save(dir.resolve("checkpoints"), new Checkpoint.Contents(new TrainState(c, "test", 5, 5, 1, 1f, 0, 3f), p.data(), zeros, zeros), 2);
        return dir;
    }

    @Test void exportOfARunIsTheCheckpointBitForBitWithItsTokenizer() throws Exception {
        ModelConfig tiny = ModelConfig.parse("tiny");
        Path runDir = fakeRun(tmp.resolve("run"), tiny, 11);
        float[] want = Checkpoint.load(Checkpoint.pathFor(runDir.resolve("checkpoints"), 5)).params();
        Run r = run("export", "--run", runDir.toString(), "--format", "llama2c");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().startsWith("exported tiny (139,584 parameters) → " + runDir.resolve("export/model.bin")), r.out());
        Parameters bin = Llama2Bin.read(runDir.resolve("export/model.bin"));
        assertArrayEquals(want, bin.data());
        assertEquals(tiny.withName("model"), bin.config());
        Tokenizer tok = Tokenizer.read(runDir.resolve("export/tokenizer.bin"));
        Tokenizer corpus = EmbeddedCorpus.tokenizer();
        assertEquals(corpus.vocabSize(), tok.vocabSize());
        for (int i = 0; i < tok.vocabSize(); i++) assertArrayEquals(corpus.pieceBytes(i), tok.pieceBytes(i));

        r = run("export", "--run", runDir.toString(), "--format", "safetensors");
        assertEquals(0, r.code(), r.err());
        Path hf = runDir.resolve("export/hf");
        assertTrue(Files.isRegularFile(hf.resolve("config.json")) && Files.isRegularFile(hf.resolve("tokenizer.bin")), r.out());
        // the safetensors export, exported again as llama2.c, is the same file: the RoPE permutation is inverted exactly
        r = run("export", "--model", hf.toString(), "--format", "llama2c", "--out", tmp.resolve("again.bin").toString());
        assertEquals(0, r.code(), r.err());
        assertArrayEquals(Files.readAllBytes(runDir.resolve("export/model.bin")), Files.readAllBytes(tmp.resolve("again.bin")));
        // a checkpoint in a run folder finds the run's tokenizer too
        r = run("export", "--checkpoint", Checkpoint.pathFor(runDir.resolve("checkpoints"), 5).toString(), "--format", "safetensors", "--dtype", "f16",
                "--out", tmp.resolve("f16").toString());
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("F16") && r.out().contains("tokenizer.bin"), r.out());
        assertEquals(Safetensors.DType.F16, Safetensors.readHeader(tmp.resolve("f16/model.safetensors")).entries().get("model.norm.weight").dtype());
    }

    @Test void trainEndsWithBothExportsInTheRunFolder() throws Exception {
        Path runDir = tmp.resolve("trained");
        Run r = run("train", "--steps", "2", "--in-process", "--run-dir", runDir.toString());
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("→ " + runDir.resolve("export/hf") + ": model.safetensors") && r.out().contains("→ " + runDir.resolve("export/model.bin")), r.out());
        float[] want = Checkpoint.findNewest(runDir.resolve("checkpoints")).contents().params();
        assertArrayEquals(want, Llama2Bin.read(runDir.resolve("export/model.bin")).data());
        Run g = run("generate", "--model", runDir.resolve("export/hf").toString(), "--prompt", "Once upon a time", "--temperature", "0", "--tokens", "5");
        Run h = run("generate", "--run", runDir.toString(), "--prompt", "Once upon a time", "--temperature", "0", "--tokens", "5");
        assertEquals(0, g.code(), g.err());
        assertTrue(g.out().startsWith("Once upon a time"), g.out());
        assertEquals(h.out(), g.out(), "the export generates what the checkpoint does");
    }

    @Test void badInputsAreOneLineEach() throws Exception {
        Path runDir = fakeRun(tmp.resolve("run"), ModelConfig.parse("tiny"), 1);
        Path qwen = resource("model/qwen3");
        String[][] bad = {
                {"export", "--format", "safetensors"},
                {"export", "--run", runDir.toString()},
                {"export", "--run", runDir.toString(), "--format", "onnx"},
                {"export", "--run", runDir.toString(), "--format", "llama2c", "--dtype", "f16"},
                {"export", "--run", runDir.toString(), "--format", "safetensors", "--dtype", "int4"},
                {"export", "--run", tmp.resolve("nope").toString(), "--format", "safetensors"},
                {"export", "--run", tmp.toString(), "--format", "safetensors"},
                {"export", "--model", tmp.resolve("missing.bin").toString(), "--format", "llama2c"},
                {"export", "--model", qwen.toString(), "--format", "llama2c", "--out", tmp.resolve("q.bin").toString()},
                {"export", "--run", runDir.toString(), "--model", qwen.toString(), "--format", "llama2c"},
                {"export", "--run", runDir.toString(), "--format", "safetensors", "--bogus", "1"},
                {"export", "--model", qwen.toString(), "--format", "safetensors", "--out", qwen.toString()},
                {"export", "--format", "safetensors", "--model"}};
        String[] expect = {"no model given", "no --format", "--format onnx is not known", "llama2.c v0 files are float32", "--dtype int4 is not known",
                "no such run folder", "no readable checkpoint", "no such file", "uses QK-norm", "give only one of", "unknown option --bogus",
                "is where " + qwen + " is read from", "--model has no value; give --model FILE|DIR"};
        for (int i = 0; i < bad.length; i++) {
            Run r = run(bad[i]);
            assertEquals(1, r.code(), String.join(" ", bad[i]));
            assertEquals(1, r.err().lines().count(), r.err());
            assertTrue(r.err().startsWith("ane4j export: ") && r.err().contains(expect[i]), String.join(" ", bad[i]) + " → " + r.err());
        }
        assertTrue(run("export", "--help").out().contains("--format llama2c"));
    }
}
