package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.golden.TensorCheck;
import ane4j.model.CpuModel;
import ane4j.model.Safetensors;
import ane4j.train.PeftAdapter;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** export --merge and generate --adapter on a LoRA run: the fused model three ways gives one model. */
class LoraCommandsTest {
    @TempDir static Path tmp;
    static Path runDir;

    @BeforeAll
    static void trainALoraRun() {
        runDir = tmp.resolve("run");
        var o = TrainOptions.of(Map.of("model", "tiny", "steps", "8", "runDir", runDir.toString(), "lora", "4", "loraTargets", "q,k,v,w2",
                "lr", "3e-2", "warmup", "1", "evalEvery", "0", "checkpointEvery", "4", "keep", "2"));
        try (Trainer t = new Trainer(o, new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            t.run(null, 0);
        }
    }

    @Test
    void mergeWritesTheFusedModelAndGenerateAppliesTheAdapter() {
        Path fused = tmp.resolve("fused"), base = tmp.resolve("base");
        var m = ExportCommandTest.run("export", "--run", runDir.toString(), "--format", "safetensors", "--merge", "--out", fused.toString());
        assertEquals(0, m.code(), m.err());
        var b = ExportCommandTest.run("export", "--run", runDir.toString(), "--format", "safetensors", "--out", base.toString());
        assertEquals(0, b.code(), b.err());
        assertTrue(b.out().contains("note: exporting the base model without the LoRA adapter of this run"), b.out());
        // the fused export is the base with W + s·B·A: the same function as the base export with the PEFT adapter on it
        var withAdapter = PeftAdapter.read(runDir.resolve("adapter"), Safetensors.read(base.resolve("model.safetensors")).config());
        CpuModel merged = new CpuModel(Safetensors.read(fused.resolve("model.safetensors")));
        CpuModel onBase = new CpuModel(withAdapter.fused(Safetensors.read(base.resolve("model.safetensors"))));
        CpuModel plain = new CpuModel(Safetensors.read(base.resolve("model.safetensors")));
        for (int pos = 0; pos < 4; pos++) {
            int tok = 7 * pos + 3;
            float[] want = onBase.forward(tok, pos);
            TensorCheck.checkTensor("fused logits at " + pos, want, merged.forward(tok, pos), 1e-5, 1e-5);
            assertNotEquals(want[0], plain.forward(tok, pos)[0], "the adapter changes the model");
        }
        String[] greedy = {"--prompt", "Once upon", "--temperature", "0", "--tokens", "12"};
        var fromRun = ExportCommandTest.run(cat(new String[] {"generate", "--run", runDir.toString()}, greedy));
        var fromFused = ExportCommandTest.run(cat(new String[] {"generate", "--model", fused.toString()}, greedy));
        var fromAdapter = ExportCommandTest.run(cat(new String[] {"generate", "--model", base.toString(), "--adapter", runDir.resolve("adapter").toString()}, greedy));
        assertEquals(0, fromAdapter.code(), fromAdapter.err());
        assertEquals(fromFused.out(), fromRun.out());
        assertEquals(fromFused.out(), fromAdapter.out());
        assertTrue(fromAdapter.err().contains("+ LoRA adapter"), fromAdapter.err());
    }

    @Test
    void mergeWithoutAnAdapterIsOneLine() {
        Path base = tmp.resolve("base2");
        ExportCommandTest.run("export", "--run", runDir.toString(), "--format", "safetensors", "--out", base.toString());
        var r = ExportCommandTest.run("export", "--model", base.toString(), "--format", "safetensors", "--merge", "--out", tmp.resolve("x").toString());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertTrue(r.err().contains("--merge needs a LoRA adapter: give --adapter DIR"), r.err());
    }

    /**
     * eval applies a LoRA run's adapter as training's validation does (before, eval --run measured the frozen base): the
     * run, its newest checkpoint and the exported base with the run's PEFT folder give one loss; an older checkpoint is
     * evaluated with its own adapters, not the newest ones in RUN/adapter.
     */
    @Test
    void evalAppliesTheAdapterOfTheCheckpointItReads() throws Exception {
        Path base = tmp.resolve("base-eval"), data = tmp.resolve("heldout.bin");
        assertEquals(0, ExportCommandTest.run("export", "--run", runDir.toString(), "--format", "safetensors", "--out", base.toString()).code());
        int[] tokens = ane4j.model.EmbeddedCorpus.validation(3, 2 * 64 + 1);
        var bytes = java.nio.ByteBuffer.allocate(2 * tokens.length).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int t : tokens) bytes.putShort((short) t);
        java.nio.file.Files.write(data, bytes.array());
        Path ck4 = runDir.resolve("checkpoints/ckpt-00000004.ane4j"), ck8 = runDir.resolve("checkpoints/ckpt-00000008.ane4j");
        var run = EvalCommandTest.eval("--run", runDir.toString(), "--data", data.toString());
        var newest = EvalCommandTest.eval("--checkpoint", ck8.toString(), "--data", data.toString());
        var onBase = EvalCommandTest.eval("--model", base.toString(), "--adapter", runDir.resolve("adapter").toString(), "--data", data.toString());
        var plain = EvalCommandTest.eval("--model", base.toString(), "--data", data.toString());
        var older = EvalCommandTest.eval("--checkpoint", ck4.toString(), "--data", data.toString());
        assertTrue(run.out().contains("+ LoRA adapter") && run.out().contains("(rank 4, q,k,v,w2)"), run.out() + run.err());
        assertEquals(EvalCommandTest.loss(run), EvalCommandTest.loss(newest));
        assertEquals(EvalCommandTest.loss(run), EvalCommandTest.loss(onBase));
        assertNotEquals(EvalCommandTest.loss(run), EvalCommandTest.loss(plain), "the adapter changes the loss");
        assertNotEquals(EvalCommandTest.loss(run), EvalCommandTest.loss(older), "step 4's adapters, not step 8's");
        // the older checkpoint's adapters are its own section, bit for bit
        var src = ModelSource.open(null, ck4.toString(), null, null, "eval");
        assertTrue(java.util.Arrays.equals(ane4j.train.Checkpoint.loadWeights(ck4).lora(), AdapterSource.find(src, null).data()));
    }

    /** A LoRA checkpoint away from its run cannot say its adapters' rank: eval refuses in one line; export writes the base with a note. */
    @Test
    void aLoraCheckpointWithoutItsRunIsOneLine() throws Exception {
        Path alone = tmp.resolve("alone.ane4j");
        java.nio.file.Files.copy(runDir.resolve("checkpoints/ckpt-00000008.ane4j"), alone);
        var r = EvalCommandTest.eval("--checkpoint", alone.toString(), "--data", runDir.resolve("run.txt").toString());
        assertEquals(1, r.code(), r.out());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertTrue(r.err().contains("holds LoRA adapters") && r.err().contains("give --adapter DIR"), r.err());
        var e = ExportCommandTest.run("export", "--checkpoint", alone.toString(), "--format", "safetensors", "--out", tmp.resolve("alone-base").toString());
        assertEquals(0, e.code(), e.err());
        assertTrue(e.out().contains("note: exporting the base model without the LoRA adapters this checkpoint holds"), e.out());
    }

    private static String[] cat(String[] a, String[] b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
