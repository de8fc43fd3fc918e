package ane4j.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.mil.DType;
import ane4j.mil.TensorType;
import ane4j.run.MetricsLog;
import ane4j.run.StepMetrics;
import ane4j.run.TrainOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A graph run whose loss is the CPU loss head's (run keys {@code logits} and {@code labels}): the graph ends at its
 * logits and the mean cross-entropy and d_logits are computed on the CPU. It trains what the same classifier with its
 * cross-entropy in MIL trains, resumes bit-identically, and refuses bad logits and labels in one line before any run
 * folder exists.
 */
class GraphHeadRunTest {
    @TempDir Path dir;

    /** fp32 storage: the head and MIL's crossEntropyLabels differ only in rounding. */
    private static RefBackend fp32() { return new RefBackend(RefBackend.Options.FP32_STORAGE); }

    /** A run's loss curve, validation losses and trained weights. */
    record Result(float[] losses, float[] valLosses, float[] weights, float[] m, float[] v) {}

    private static Result run(Map<String, String> opts, RefBackend backend) {
        try (Trainer t = new Trainer(TrainOptions.of(opts), backend, null)) {
            List<StepMetrics> h = t.run(null, 0);
            float[] l = new float[h.size()], vl = new float[h.size()];
            for (int i = 0; i < l.length; i++) {
                l[i] = h.get(i).loss();
                vl[i] = h.get(i).validated() ? h.get(i).valLoss() : Float.NaN;
            }
            return new Result(l, vl, t.weights().clone(), t.firstMoments().clone(), t.secondMoments().clone());
        }
    }

    private Map<String, String> head(Path runDir, int steps, String graph, String... more) {
        Map<String, String> o = GraphRunFixture.options(dir, runDir, steps, more);
        o.put("graph", dir.resolve(graph).toString());
        o.put("logits", "logits");
        o.put("labels", "labels");
        return o;
    }

    /** |a − b| ≤ rel · max|a| over the whole array (relative to the array's largest magnitude), NaN only where a is NaN. */
    static void assertClose(float[] a, float[] b, float rel, String what) {
        assertEquals(a.length, b.length, what);
        float max = 0;
        for (float x : a) if (Float.isFinite(x)) max = Math.max(max, Math.abs(x));
        for (int i = 0; i < a.length; i++) {
            if (Float.isNaN(a[i])) {
                assertTrue(Float.isNaN(b[i]), what + "[" + i + "]: " + b[i] + " where NaN (no validation) was expected");
                continue;
            }
            assertTrue(Math.abs(a[i] - b[i]) <= rel * max, what + "[" + i + "]: " + b[i] + " vs " + a[i] + " (tolerance " + rel * max + ")");
        }
    }

    /**
     * The same MLP, the same seed and samples: the loss in MIL (crossEntropyLabels) and on the CPU (the head) give the
     * same losses, validation losses, weights and AdamW moments within 1e-5 of each array's largest magnitude in fp32
     * (40 steps with clipping, warm-up, dynamic loss scaling from 256 and validation every 10).
     */
    @Test
    void theHeadTrainsWhatTheLossInMilTrains() throws Exception {
        GraphRunFixture.writeWithLogits(dir);
        Result mil = run(GraphRunFixture.options(dir, dir.resolve("mil"), 40), fp32());
        Result cpu = run(head(dir.resolve("cpu"), 40, "logits.mil"), fp32());
        assertClose(mil.losses(), cpu.losses(), 1e-5f, "loss");
        assertClose(mil.valLosses(), cpu.valLosses(), 1e-5f, "validation loss");
        assertClose(mil.weights(), cpu.weights(), 1e-5f, "weights");
        assertClose(mil.m(), cpu.m(), 1e-5f, "AdamW first moments");
        assertClose(mil.v(), cpu.v(), 1e-5f, "AdamW second moments");
        // the run learns (ln 2 at the start), and names its loss in the run record and the checkpoint
        assertTrue(cpu.losses()[0] > 0.5f && cpu.losses()[39] < 0.45f, cpu.losses()[0] + " → " + cpu.losses()[39]);
        assertTrue(Files.readString(dir.resolve("cpu/run.txt")).contains("loss = cross-entropy(logits, labels) on the CPU"));
        Checkpoint.Contents c = Checkpoint.loadNewest(dir.resolve("cpu/checkpoints"), w -> { throw new AssertionError(w); });
        assertEquals("cross-entropy(logits, labels) on the CPU", c.state().graph().loss());
        // a graph with the labels as an input and both outputs trains the same bits with the head (the labels input is
        // read by nothing the head's programs compute)
        Result both = run(head(dir.resolve("both"), 40, "both.mil"), fp32());
        assertArrayEquals(cpu.losses(), both.losses(), "loss");
        assertArrayEquals(cpu.weights(), both.weights(), "weights");
    }

    /** fp16 storage (the ANE's): the head reads fp16 logits; it learns and stays close to the loss in MIL. */
    @Test
    void theHeadLearnsInFp16() throws Exception {
        GraphRunFixture.writeWithLogits(dir);
        RefBackend fp16 = new RefBackend(RefBackend.Options.ANE_LIKE);
        Result mil = run(GraphRunFixture.options(dir, dir.resolve("mil"), 60), fp16);
        Result cpu = run(head(dir.resolve("cpu"), 60, "logits.mil"), new RefBackend(RefBackend.Options.ANE_LIKE));
        for (int i = 0; i < 60; i++) assertEquals(mil.losses()[i], cpu.losses()[i], 2e-2f * mil.losses()[i], "loss of step " + i);
        assertTrue(cpu.losses()[59] < 0.4f, "learns: " + cpu.losses()[59]);
    }

    /** Stopped at step 26 of 40 and resumed: the same bits as the uninterrupted run (losses, validation, weights, moments). */
    @Test
    void aStoppedHeadRunResumesBitIdentical() throws Exception {
        GraphRunFixture.writeWithLogits(dir);
        Result whole = run(head(dir.resolve("a"), 40, "logits.mil", "accum", "2"), new RefBackend(RefBackend.Options.ANE_LIKE));
        Map<String, String> b = head(dir.resolve("b"), 40, "logits.mil", "accum", "2");
        try (Trainer t = new Trainer(TrainOptions.of(b), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            t.run(null, 26);
            t.checkpointNow();
        }
        b.put("resume", "true");
        try (Trainer t = new Trainer(TrainOptions.of(b), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            assertEquals(26, t.nextStep());
            t.run(null, 0);
            assertArrayEquals(whole.weights(), t.weights(), "weights");
            assertArrayEquals(whole.m(), t.firstMoments(), "AdamW first moments");
            assertArrayEquals(whole.v(), t.secondMoments(), "AdamW second moments");
        }
        List<StepMetrics> resumed = MetricsLog.read(dir.resolve("b/metrics.jsonl"), 40, x -> {});
        for (int i = 0; i < 40; i++) {
            assertEquals(Float.floatToRawIntBits(whole.losses()[i]), Float.floatToRawIntBits(resumed.get(i).loss()), "loss of step " + i);
            assertEquals(whole.valLosses()[i], resumed.get(i).validated() ? resumed.get(i).valLoss() : Float.NaN, "validation of step " + i);
        }
        // the in-graph loss is another run: its checkpoint is not resumed by the head, nor the other way round
        Map<String, String> other = GraphRunFixture.options(dir, dir.resolve("b"), 40, "accum", "2", "resume", "true");
        other.put("graph", dir.resolve("both.mil").toString());
        var e = assertThrows(CheckpointFormatException.class, () -> new Trainer(TrainOptions.of(other), fp32(), null).close());
        assertTrue(e.getMessage().contains("cross-entropy(logits, labels) on the CPU"), e.getMessage());
    }

    private void assertOneLine(String expected, Map<String, String> opts) {
        var e = assertThrows(IllegalArgumentException.class, () -> new Trainer(TrainOptions.of(opts), fp32(), null).close());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
        assertEquals(expected, e.getMessage());
        assertFalse(Files.exists(Path.of(opts.get("runDir"))), "no run folder for a run refused at its start");
    }

    private static void writeLabels(Path file, int... perSample) {
        TensorBuffer b = TensorBuffer.allocate(TensorType.of(DType.INT32, perSample.length));
        for (int i = 0; i < perSample.length; i++) b.set(i, perSample[i]);
        ane4j.train.Npy.write(file, b);
    }

    @Test
    void badLogitsAndLabelsAreOneLineBeforeAnyRunFolder() throws Exception {
        GraphRunFixture.writeWithLogits(dir);
        Path run = dir.resolve("run");
        String logitsMil = dir.resolve("logits.mil").toString(), bothMil = dir.resolve("both.mil").toString(), data = dir.resolve("data").toString();
        // logits that are not an output; logits that are not [N, C]
        Map<String, String> o = head(run, 5, "logits.mil");
        o.put("logits", "h");
        assertOneLine("[train] logits = h is not an output of graph " + logitsMil + " (outputs: logits); name the output holding the logits [N, C]", o);
        o = head(run, 5, "both.mil");
        o.put("logits", "loss");
        assertOneLine("[train] logits = loss is fp32[1] in graph " + bothMil + "; the CPU loss head takes float logits [N, C] (a row per example, C ≥ 2 classes): reshape them to [N, C] in the graph", o);
        // labels neither an input nor a data file; labels an input that is not integer
        Path labels = dir.resolve("data/labels.npy");
        Files.move(labels, dir.resolve("labels.npy"));
        assertOneLine("[train] labels = labels is not an input of graph " + logitsMil + " (inputs: [x, w1, b1, w2, b2]) and data has no " + data + "/labels.npy"
                + "; give the class ids as that file (int32, one per row of the logits) or name the graph's int32 input holding them", head(run, 5, "logits.mil"));
        Files.move(dir.resolve("labels.npy"), labels);
        o = head(run, 5, "both.mil");
        o.put("labels", "w2");
        assertOneLine("[train] labels = w2 is graph input 'w2' fp32[2,16], not integer class ids; make it int32 (or name the input holding the class ids)", o);
        // both loss and the head's keys, and one of the head's keys alone: refused as the options are read
        var both = assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(head(run, 5, "both.mil", "loss", "loss")));
        assertEquals("[train] loss = loss and logits = logits both name the loss: with logits the loss is their cross-entropy against labels, computed on the CPU; "
                + "drop loss, or drop logits and labels to train the graph's own loss", both.getMessage());
        var alone = assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(GraphRunFixture.options(dir, run, 5, "logits", "logits")));
        assertTrue(alone.getMessage().startsWith("[train] logits = logits needs labels = NAME"), alone.getMessage());
        alone = assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(GraphRunFixture.options(dir, run, 5, "labels", "labels")));
        assertTrue(alone.getMessage().startsWith("[train] labels = labels without logits"), alone.getMessage());
        alone = assertThrows(IllegalArgumentException.class, () -> TrainOptions.of(Map.of("logits", "logits", "labels", "y")));
        assertTrue(alone.getMessage().startsWith("[train] logits = logits without graph"), alone.getMessage());
        // labels out of range (a class the logits do not have)
        byte[] good = Files.readAllBytes(labels);
        int[] ids = new int[96];
        ids[37] = 2;
        writeLabels(labels, ids);
        assertOneLine("[train] " + labels + ": label 2 of sample 37 is outside 0..1 (logits = logits has 2 classes; -1 ignores a row); fix the labels or the graph's number of classes",
                head(run, 5, "logits.mil"));
        // labels of a file that are not int32 class ids
        Npy.write(labels, TensorBuffer.allocate(TensorType.of(DType.FP32, 96)));
        assertOneLine("[train] labels = labels: data " + labels + " has dtype '<f4', not int32 class ids; save it with np.save(f, labels.astype(np.int32))", head(run, 5, "logits.mil"));
        // a batch of labels that does not give one per row of the logits: two per sample for [8, 2] logits
        Npy.write(labels, TensorBuffer.allocate(TensorType.of(DType.INT32, 96, 2)));
        assertOneLine("[train] labels = labels gives 16 class ids per batch (int32[8,2]) but logits = logits is fp32[8,2]: give one label per row of the logits, 8 per batch of 8 samples",
                head(run, 5, "logits.mil"));
        Files.write(labels, good);
        // labels -1 are ignored rows, not errors
        ids = new int[96];
        java.util.Arrays.fill(ids, 0, 48, -1);
        writeLabels(labels, ids);
        new Trainer(TrainOptions.of(head(run, 1, "logits.mil")), fp32(), null).close();
    }
}
