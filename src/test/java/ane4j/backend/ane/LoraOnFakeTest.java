package ane4j.backend.ane;

import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.train.Trainer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * LoRA with dropout on the (fake) ANE: the LoRA variants of sdpaFwd and ffnFused compile once with the other eight
 * (through the backend's chip-rule check for the fake's chip; every chip: TrainingKernelsChipRulesTest), each layer's bound input takes u and Bᵀ beside the base weights, no evaluate
 * copies an input, and the losses equal the reference backend's bit for bit.
 */
class LoraOnFakeTest extends FakeRuntimeFixture {

    @AfterEach
    void noViolations() {
        ane.close();
        FakeRuntime.assertNoViolations(fake);
    }

    @Test
    void loraWithDropoutTrainsOnBoundInputsAsOnTheReference() throws Exception {
        Path conf = TrainingStagingOnFakeTest.writeConfig(tmp);
        Map<String, String> opts = Map.of("model", conf.toString(), "steps", "4", "accum", "2", "warmup", "1", "checkpointEvery", "0",
                "lora", "4", "loraTargets", "q,k,v,o,w1,w2,w3", "loraDropout", "0.1", "lr", "1e-2");
        List<StepMetrics> onAne, onRef;
        ane4j.model.ModelConfig config;
        List<AneKernel> compiled = new java.util.ArrayList<>();
        try (Trainer t = new Trainer(TrainingStagingOnFakeTest.options(opts, tmp.resolve("ane-run")), TrainingStagingOnFakeTest.recording(AneBackendContractTest.backend(), compiled), null)) {
            onAne = t.run(null, 0);
            config = t.config();
        }
        try (Trainer t = new Trainer(TrainingStagingOnFakeTest.options(opts, tmp.resolve("ref-run")), new RefBackend(), null)) {
            onRef = t.run(null, 0);
        }
        assertEquals(10, compiled.size(), "the ten kernels, compiled once");
        for (AneKernel k : compiled) assertEquals(0, k.copiedInputBytes(), k + ": no evaluate copied an input");
        for (int i = 0; i < onAne.size(); i++)
            assertEquals(Float.floatToIntBits(onRef.get(i).loss()), Float.floatToIntBits(onAne.get(i).loss()), "step " + i + ": " + onAne.get(i).loss() + " vs " + onRef.get(i).loss());
        assertTrue(onAne.get(3).loss() != onAne.get(0).loss(), "the adapters train");
        // the frozen base reaches each layer's bound surfaces once: later steps write only the adapters' Bᵀ regions
        // (every layer's weight segments but layer 0's of qBwd and kvBwd: a LoRA step computes no input gradient below layer 0)
        long base = TrainingStagingOnFakeTest.expectedPerLayer(config)[1] * config.nLayers() - 2L * config.dim() * (config.qDim() + 2L * config.kvDim());
        long adapters = onAne.get(1).stagedWeightBytes();
        assertTrue(adapters > 0 && adapters < base / 4, adapters + " bytes of Bᵀ per step against " + base + " of base weights");
        assertEquals(base + adapters, onAne.get(0).stagedWeightBytes(), "step 0: the base and the adapters");
        for (int i = 1; i < onAne.size(); i++) assertEquals(adapters, onAne.get(i).stagedWeightBytes(), "step " + i + ": the adapters only");
    }
}
