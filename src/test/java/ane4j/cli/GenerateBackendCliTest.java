package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ane4j generate --backend ref}: the prefill as MIL kernels on the reference backend (the ANE's fp16 numerics),
 * decoding on the CPU or the backend, prints the CPU path's text for run.c's golden model, a run's checkpoint, its
 * llama2.c and Hugging Face exports and a LoRA run (adapters unmerged in the kernels, fused on the CPU); bad input is one
 * line naming the limit. (--backend ane needs Apple silicon: not yet run on Apple hardware.)
 */
class GenerateBackendCliTest {
    @TempDir static Path tmp;
    static Path runDir, loraDir;

    @BeforeAll
    static void trainRuns() {
        runDir = tmp.resolve("run");
        loraDir = tmp.resolve("lora");
        for (Path dir : List.of(runDir, loraDir)) {
            Map<String, String> m = new java.util.HashMap<>(Map.of("model", "tiny", "steps", "30", "runDir", dir.toString(), "lr", "1e-2", "warmup", "1",
                    "evalEvery", "0", "checkpointEvery", "30", "keep", "1"));
            if (dir == loraDir) { m.put("lora", "4"); m.put("loraTargets", "q,k,v,o,w1,w2,w3"); m.put("lr", "3e-2"); m.put("steps", "8"); m.put("checkpointEvery", "8"); }
            try (Trainer t = new Trainer(TrainOptions.of(m), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
                t.run(null, 0);
            }
        }
    }

    static ExportCommandTest.Run gen(String... args) {
        List<String> a = new ArrayList<>(List.of("generate"));
        a.addAll(List.of(args));
        return ExportCommandTest.run(a.toArray(String[]::new));
    }

    static String[] with(String[] a, String... more) {
        String[] out = java.util.Arrays.copyOf(a, a.length + more.length);
        System.arraycopy(more, 0, out, a.length, more.length);
        return out;
    }

    /** The CPU's text, then the same on ref with each decode: one text. */
    static void sameTextOnEveryPath(String what, String... args) { sameTextOnEveryPath(what, -1, args); }

    /**
     * As above; with {@code words >= 0}, only the first {@code words} words must agree: where the two paths compute the
     * same model in another order (LoRA unmerged in the kernels, merged on the CPU), a near-tie in a barely trained model's
     * repetitive text can flip with the BLAS core's rounding (under OpenBLAS 0.3.21's Haswell core at the 14th generated
     * word, not under SkylakeX or Zen). The logits themselves are compared with a tolerance in LoraGenerationTest.
     */
    static void sameTextOnEveryPath(String what, int words, String... args) {
        var cpu = gen(args);
        assertEquals(0, cpu.code(), cpu.err());
        for (String decode : new String[] {"cpu", "backend"}) {
            var ref = gen(with(args, "--backend", "ref", "--decode", decode));
            assertEquals(0, ref.code(), what + ": " + ref.err());
            if (words < 0) assertEquals(cpu.out(), ref.out(), what + ", decode " + decode);
            else assertEquals(List.of(cpu.out().split("\\s+")).subList(0, words), List.of(ref.out().split("\\s+")).subList(0, words),
                    what + ", decode " + decode + ": " + cpu.out() + " vs " + ref.out());
            assertTrue(ref.err().contains(" on ref (decode " + decode + "), "), ref.err());
            assertEquals(1, ref.err().strip().lines().count(), ref.err());
        }
    }

    @Test
    void runCsGreedyTextOnTheBackend() {
        for (String decode : new String[] {"cpu", "backend"}) {
            var r = gen("--model", GenerateCommandTest.MODEL, "--tokenizer", GenerateCommandTest.TOKENIZER, "--prompt", "cab", "--temperature", "0", "--tokens", "100",
                    "--backend", "ref", "--decode", decode);
            assertEquals(0, r.code(), r.err());
            assertEquals("cab\\x9f€qo<unk>qo<unk>qo<unk>q\n", r.out(), "run.c's greedy text to the end of the context, decode " + decode);
            assertTrue(r.err().matches("(?s)\\[generate] 12 tokens in .* prefill 5 tokens \\(bucket 32\\) at .* tok/s, decode 11 tokens at .* on ref \\(decode " + decode + "\\), "
                    + (decode.equals("cpu") ? 2 : 4) + " kernels compiled and staged in [0-9.]+ s\\n"), r.err());
        }
    }

    @Test
    void aCheckpointAndItsExports() {
        String[] greedy = {"--prompt", "Once upon a time", "--temperature", "0", "--tokens", "40"};
        sameTextOnEveryPath("checkpoint", with(new String[] {"--run", runDir.toString()}, greedy));
        Path bin = tmp.resolve("exported.bin"), hf = tmp.resolve("hf");
        assertEquals(0, ExportCommandTest.run("export", "--run", runDir.toString(), "--format", "llama2c", "--out", bin.toString()).code());
        assertEquals(0, ExportCommandTest.run("export", "--run", runDir.toString(), "--format", "safetensors", "--out", hf.toString()).code());
        sameTextOnEveryPath("llama2.c export", with(new String[] {"--model", bin.toString()}, greedy));
        sameTextOnEveryPath("safetensors export", with(new String[] {"--model", hf.toString()}, greedy));
    }

    @Test
    void aLoraRunsAdapterUnmergedInTheKernels() {
        sameTextOnEveryPath("lora run", 12, "--run", loraDir.toString(), "--prompt", "Once upon a time", "--temperature", "0", "--tokens", "40");
        var r = gen("--run", loraDir.toString(), "--prompt", "Lily", "--temperature", "0", "--tokens", "5", "--backend", "ref");
        assertTrue(r.err().contains("+ LoRA adapter"), r.err());
    }

    @Test
    void seededSamplingIsReproducible() {
        String[] a = {"--run", runDir.toString(), "--prompt", "Once upon a time", "--temperature", "1", "--seed", "5", "--tokens", "30", "--backend", "ref"};
        var first = gen(a);
        assertEquals(0, first.code(), first.err());
        assertEquals(first.out(), gen(a).out());
    }

    @Test
    void badInputIsOneLineNamingTheLimit() {
        String model = GenerateCommandTest.MODEL, tok = GenerateCommandTest.TOKENIZER;
        var b = gen("--model", model, "--tokenizer", tok, "--prompt", "cab", "--backend", "gpu");
        assertEquals(1, b.code());
        assertEquals("ane4j generate: [generate] --backend gpu is not cpu, ref or ane", b.err().strip());
        var d = gen("--model", model, "--tokenizer", tok, "--prompt", "cab", "--decode", "cpu");
        assertEquals("ane4j generate: [generate] --decode and --prefill-buckets apply to --backend ref or ane, not cpu", d.err().strip());
        // the run's model (tiny, seqLen 64): a prompt of 40-odd tokens is over a 32-wide bucket
        var l = gen("--run", runDir.toString(), "--prompt", "Once upon a time there was a little girl named Lily. She liked to play with her ball in the park every day.",
                "--backend", "ref", "--prefill-buckets", "32");
        assertEquals(1, l.code(), l.out());
        assertEquals(1, l.err().strip().lines().count(), l.err());
        assertTrue(l.err().matches("ane4j generate: \\[generate] the prompt is \\d+ tokens, longer than the largest prefill bucket 32 \\(buckets \\[32], seqLen 64\\); shorten the prompt or add a bucket up to 64\\n"), l.err());
        var w = gen("--run", runDir.toString(), "--prompt", "Lily", "--backend", "ref", "--prefill-buckets", "48");
        assertTrue(w.err().startsWith("ane4j generate: [generate] prefill bucket 48 must be a positive multiple of 32"), w.err());
        if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("mac")) {
            var a = gen("--model", model, "--tokenizer", tok, "--prompt", "cab", "--backend", "ane");
            assertEquals(1, a.code());
            assertEquals(1, a.err().strip().lines().count(), a.err());
            // (a test before this one in the same JVM may have installed the fake runtime's library override: then the
            // ANE "loads" and fails later, still in one line)
            String override = System.getProperty(ane4j.backend.Backends.LIBRARY_OVERRIDE_PROPERTY);
            if (override == null || override.isBlank()) assertTrue(a.err().contains("ANE backend is not available"), a.err());
        }
    }
}
