package ane4j.backend.ane;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.ref.RefBackend;
import ane4j.infer.BackendGenerator;
import ane4j.mil.DType;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.ParameterView;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Generation on the ANE path with the fake runtime, its evaluate the reference interpreter on the compiled bundle's
 * model.mil: the kernels go through the ANE backend's chip-rule check, MIL writer, compile budget and IOSurfaces; each
 * layer's input is bound (weights written once, the KV cache one column per token); no bundle holds a weight file; the
 * tokens and logits are the reference backend's bit for bit. Not yet run on Apple hardware.
 */
class GenerationOnFakeTest extends FakeRuntimeFixture {

    @AfterEach
    void noViolations() {
        ane.close();
        FakeRuntime.assertNoViolations(fake);
    }

    @Test
    void prefillAndDecodeOnBoundSurfacesAsOnTheReference() throws IOException {
        // qwen3's shape features (GQA 4/2, QK-norm, half RoPE) at widths the fake's surfaces run in a second
        ModelConfig c = new ModelConfig("q3small", 64, 128, 2, 4, 2, 32, 256, 64, 1_000_000f, ane4j.model.RopeStyle.HALF, true, true, 1e-6f, 1f);
        Parameters p = Parameters.init(c, 5);
        for (ParameterView v : p.layout().views()) if (v.isMatrix()) for (int i = v.offset(); i < v.end(); i++) p.data()[i] *= 4f;
        int[] prompt = {3, 17, 99, 4, 250, 31, 8};
        List<AneKernel> compiled = new ArrayList<>();
        AneBackend backend = AneBackendContractTest.backend();
        int[] onAne;
        float[][] aneLogits;
        try (BackendGenerator g = new BackendGenerator(p, null, TrainingStagingOnFakeTest.recording(backend, compiled)::compile, "ane", null, null, DType.FP16)) {
            onAne = g.generateTokens(prompt, 20, 0f, 1f, 1, -1, -1, t -> {});
            assertEquals(BackendGenerator.Decode.BACKEND, g.decode(), "bound inputs (the in-process ANE): decode on the backend by default");
            aneLogits = g.forcedLogits(onAne, prompt.length);
            assertEquals(4, compiled.size(), "prefill attention and FFN at 32, decode attention and FFN: compiled once");
            assertEquals(4, backend.compileCount(), "counted against the compile budget");
        }
        for (AneKernel k : compiled) assertEquals(0, k.copiedInputBytes(), k + ": bound inputs, no evaluate copied one");
        try (Stream<Path> files = Files.walk(tmp)) {
            List<Path> weights = files.filter(f -> Files.isRegularFile(f) && f.getParent().getFileName().toString().equals("weights")).toList();
            assertEquals(List.of(), weights, "no weight file in any bundle (macOS 27 refuses two or more)");
        }
        RefBackend ref = new RefBackend(RefBackend.Options.ANE_LIKE);
        try (BackendGenerator g = new BackendGenerator(p, null, ref::compile, "ref", BackendGenerator.Decode.BACKEND, null, DType.FP16)) {
            assertArrayEquals(g.generateTokens(prompt, 20, 0f, 1f, 1, -1, -1, t -> {}), onAne);
            float[][] refLogits = g.forcedLogits(onAne, prompt.length);
            for (int i = 0; i < refLogits.length; i++) assertArrayEquals(refLogits[i], aneLogits[i], "position " + (prompt.length - 1 + i));
        }
        assertTrue(onAne.length > prompt.length + 10);
    }
}
