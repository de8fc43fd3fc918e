package ane4j.backend.ane;

import ane4j.run.StepMetrics;
import ane4j.backend.ref.RefBackend;
import ane4j.model.ModelConfig;
import ane4j.train.PackedLayout;
import ane4j.run.TrainOptions;
import ane4j.train.Trainer;
import ane4j.train.TrainingKernels;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Issue 12 point 5 (docs/ane-audit.md F3): training on the (fake) ANE stages what maderix stages. Each layer and weight-bearing
 * kernel has an input surface of its own; the weights go into it once per optimizer update, a step writes only the
 * activation columns, and no evaluate copies an input (maderix {@code training/training_dynamic/train.m}:
 * {@code pls[L].*_in} staged at start and in the Adam block, {@code write_*_acts} per step). The losses equal the
 * reference backend's, which keeps its on-demand staging.
 */
class TrainingStagingOnFakeTest extends FakeRuntimeFixture {

    @AfterEach
    void noViolations() {
        ane.close();
        FakeRuntime.assertNoViolations(fake);
    }

    /** The weight segments of the weight-bearing kernels' inputs (every other input column is an activation). */
    static final Set<String> WEIGHT_SEGMENTS = Set.of("wqT", "wkT", "wvT", "woT", "w1T", "w3T", "w1", "w2", "w3", "wo", "wq", "wk", "wv", "qkNorm");

    /** Bytes per step and layer from the kernels' input layouts: {activation columns and weight-free inputs, weights}. */
    static long[] expectedPerLayer(ModelConfig c) {
        long act = 0, w = 0;
        for (TrainingKernels.Spec k : new TrainingKernels(c).all()) {
            PackedLayout in = k.input();
            boolean packedColumns = in.width() > c.seqLen();
            var constants = k.constants().stream().map(TrainingKernels.Constant::segment).toList();
            for (var seg : in.segments().entrySet()) {
                if (constants.contains(seg.getKey())) continue;   // RoPE tables, mask, pads: written once per input set, never per step
                // column layouts: channels × segment columns; channel layouts (the weight-free kernels): segment channels × S;
                // head-padded segments (head dims not ×32, R4): only the heads, the zero pads are written with the constants
                int size = seg.getValue().logicalSize();
                long elements = packedColumns ? (long) in.channels() * size : (long) size * in.width();
                if (packedColumns && WEIGHT_SEGMENTS.contains(seg.getKey())) w += elements * 2;
                else act += elements * 2;
            }
        }
        return new long[] {act, w};
    }

    static Path writeConfig(Path dir) throws Exception { return writeConfig(dir, 64); }

    /** stories15m's shape, small: 2 heads of dim/2 (64: heads of 32; 96: heads of 48, padded to 64 through the staged inputs). */
    static Path writeConfig(Path dir, int dim) throws Exception {
        Files.createDirectories(dir);
        Path f = dir.resolve("stories-small-" + dim + ".conf");
        Files.writeString(f, "preset = stories15m\ndim = " + dim + "\nhiddenDim = 192\nnLayers = 2\nnHeads = 2\nseqLen = 32\n");
        return f;
    }

    /** dim 96: heads of 48, padded to 64 by zero columns in the staged Wqᵀ, Wkᵀ and zero channels in sdpaBwd1's input (R4). */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(ints = {64, 96})
    void perStepWritesAreTheActivationColumnsPlusTheWeightsOncePerUpdate(int dim) throws Exception {
        Path conf = writeConfig(tmp, dim);
        Map<String, String> opts = Map.of("model", conf.toString(), "steps", "4", "accum", "2", "warmup", "1", "checkpointEvery", "0");
        List<StepMetrics> onAne, onRef;
        ModelConfig config;
        List<AneKernel> compiled = new java.util.ArrayList<>();
        try (Trainer t = new Trainer(options(opts, tmp.resolve("ane-run")), recording(AneBackendContractTest.backend(), compiled), null)) {
            config = t.config();
            onAne = t.run(null, 0);
        }
        try (Trainer t = new Trainer(options(opts, tmp.resolve("ref-run")), new RefBackend(), null)) {
            onRef = t.run(null, 0);
        }
        assertEquals(10, compiled.size());
        for (AneKernel k : compiled) assertEquals(0, k.copiedInputBytes(), k + ": no evaluate copied an input (bound inputs and surface buffers only)");
        long[] perLayer = expectedPerLayer(config);
        long act = perLayer[0] * config.nLayers(), weights = perLayer[1] * config.nLayers();
        assertTrue(act > 0 && weights > act, act + " / " + weights);
        for (int i = 0; i < onAne.size(); i++) {
            StepMetrics a = onAne.get(i), r = onRef.get(i);
            assertEquals(Float.floatToIntBits(r.loss()), Float.floatToIntBits(a.loss()), "step " + i + ": loss on the fake ANE " + a.loss() + " vs the reference " + r.loss());
            assertEquals(act, a.stagedActivationBytes(), "step " + i + ": activation bytes");
            // steps 0 and 2 follow a stageWeights (the start, the update after step 1); the others reuse the bound weights
            assertEquals(i % 2 == 0 ? weights : 0, a.stagedWeightBytes(), "step " + i + ": weight bytes");
            // the reference backend stages every layer's weights at every step, on demand into one input per kernel, and the
            // same activations less the probs and dP channels, which sdpaBwd1 writes straight into sdpaBwd2's input there
            long handOff = 2L * config.nHeads() * config.seqLen() * config.seqLen() * 2 * config.nLayers();
            assertEquals(act - handOff, r.stagedActivationBytes(), "step " + i + ": reference activation bytes");
            assertEquals(weights, r.stagedWeightBytes(), "step " + i + ": reference weight bytes");
        }
        assertTrue(Files.readString(tmp.resolve("ane-run/metrics.jsonl")).contains("\"stagedActivationBytes\":" + act + ",\"stagedWeightBytes\":" + weights + "}"));
    }

    /**
     * The automatic backend on a Mac compiles every kernel before step 1; when one fails, one line names the failure and
     * {@code ane4j doctor}, and the run trains on the reference backend (run.json says so). An explicit ane fails instead.
     */
    @Test
    void anAutomaticRunWhoseKernelsFailToCompileTrainsOnTheReferenceBackendAndSaysSo() throws Exception {
        Path conf = writeConfig(tmp);
        fake.setFailCompile("_ANECompiler : ANECCompile() FAILED");
        List<String> messages = new java.util.ArrayList<>();
        Map<String, String> opts = Map.of("model", conf.toString(), "steps", "2", "checkpointEvery", "0");
        try (Trainer t = new Trainer(options(opts, tmp.resolve("auto-run")), AneBackendContractTest.backend(), new Trainer.Listener() {
            @Override public void onStep(StepMetrics m) {}
            @Override public void onMessage(String line) { messages.add(line); }
        })) {
            assertEquals("ref", t.backendName());
            assertEquals(2, t.run(null, 0).size());
        }
        String line = messages.stream().filter(m -> m.contains("reference backend")).findFirst().orElseThrow(() -> new AssertionError(messages.toString()));
        assertTrue(line.startsWith("[train] the ANE backend could not set up the training kernels ([compileWithQoS:options:error:] _ANECompiler : ANECCompile() FAILED"), line);
        assertTrue(line.contains("`ane4j doctor`") && !line.contains("\n"), line);
        assertTrue(Files.readString(tmp.resolve("auto-run/run.json")).contains("\"backend\": \"ref\""), Files.readString(tmp.resolve("auto-run/run.json")));

        var m = new java.util.HashMap<>(opts);
        m.put("backend", "ane");
        var e = assertThrows(ane4j.backend.AneException.class, () -> new Trainer(options(m, tmp.resolve("ane-run")), AneBackendContractTest.backend(), null));
        assertTrue(e.getMessage().contains("ANECCompile() FAILED"), e.getMessage());
    }

    /** The backend, remembering every kernel it compiles. */
    static ane4j.backend.Backend recording(AneBackend b, List<AneKernel> into) {
        return new ane4j.backend.Backend() {
            @Override public String name() { return b.name(); }

            @Override public boolean isAvailable() { return b.isAvailable(); }

            @Override public ane4j.backend.Kernel compile(ane4j.mil.Program program, String functionName) {
                AneKernel k = (AneKernel) b.compile(program, functionName);
                into.add(k);
                return k;
            }

            @Override public long compileCount() { return b.compileCount(); }

            @Override public long compileBudget() { return b.compileBudget(); }
        };
    }

    static TrainOptions options(Map<String, String> given, Path runDir) {
        var m = new java.util.HashMap<>(given);
        m.put("runDir", runDir.toString());
        return TrainOptions.of(m);
    }
}
