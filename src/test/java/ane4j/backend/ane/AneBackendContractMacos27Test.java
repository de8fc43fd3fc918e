package ane4j.backend.ane;

import ane4j.backend.MacOs;
import ane4j.backend.AneException;
import ane4j.backend.BackendException;
import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import ane4j.programs.AcceptancePrograms;
import ane4j.mil.DType;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import ane4j.model.ModelConfig;
import ane4j.train.TrainingKernels;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Every contract test of {@link AneBackendContractTest} again under the fake's macOS 27 profile (fakeobjc.c H1-H4), plus
 * what 27 changes: the bundle hash check (Code=10 for two or more weight files), ane4j's one packed weight.bin, and the
 * 64-byte I/O row stride.
 */
class AneBackendContractMacos27Test extends AneBackendContractTest {
    @Override int macos() { return 27; }

    /** Rows of 64 bytes (x [1,8,1,64], y [1,32,1,32] fp16): the only surfaces macOS 27 leaves packed, hence zero-copy. */
    @Override Program zeroCopyProgram() { return AcceptancePrograms.a4DynamicMatmul(8, 32, 32); }

    /** a2's chain of four 1x1 convs: one weight file per conv (maderix's PER_WEIGHT layout). */
    static Program fourFiles() { return AcceptancePrograms.a2PeakConvChain(64, 64, 4); }

    @Test
    void aProgramWithTwoOrMoreWeightFilesFailsWithCode10InOneLineAndIsNotTheLeak() {
        Program p = fourFiles();
        assertEquals(4, p.weights().files().size());
        // leakSuspectAfter 0: before this fix any failure would be called the compiler leak
        AneBackend b = new AneBackend(new AneBackend.Options(null, null, null, 0)).packWeights(false);
        AneException e = assertThrows(AneException.class, () -> b.compile(p));
        assertFalse(ane4j.backend.CompileBudgetExceededException.class.isInstance(e), e.getMessage());
        assertTrue(e.isBundleCheck());
        assertEquals(10, e.code());
        assertEquals("com.apple.appleneuralengine", e.domain());
        assertTrue(e.underlying().startsWith("verifyBundleAtPath: hash mismatch for weights/"), e.underlying());
        assertFalse(e.getMessage().contains("\n"), "one line");
        assertTrue(e.getMessage().startsWith("[ane] main (4 weight files): the compiler's bundle hash check refused it (Code=10 verifyBundleAtPath; "
                + "macOS 27 compiles at most 1 weight file per program; not the compiler leak"), e.getMessage());
        assertTrue(e.getMessage().contains("[compileWithQoS:options:error:] verifyBundleAtPath: invalid model (com.apple.appleneuralengine Code=10; underlying: "), e.getMessage());
    }

    @Test
    void ane4jPacksSeveralWeightFilesIntoOneAndEveryBlobReadsBackByValue() throws Exception {
        // the fake's evaluate parses the bundle the compiler got (RefOnFake): blobs 2-4 are read from the packed file
        assertSameAsRef("a2 packed", fourFiles());
        String hex = ane.evaluated().getLast();
        // the directory is gone after unload; the packing itself: one file under weights/
        Program packed = backend().forThisMac(fourFiles(), "main", MacOs.parse("27.0"), java.util.Optional.empty());
        assertEquals(List.of("@model_path/weights/weight.bin"), List.copyOf(packed.weights().files().keySet()));
        assertNotNull(hex);
    }

    @Test
    void onM1UnderMacos27NoWeightLayoutIsKnownToWorkAndAne4jSaysSoBeforeCompiling() {
        fake.setAneSubType("h13g");
        BackendException e = assertThrows(BackendException.class, () -> backend().compile(fourFiles()));
        assertTrue(e.getMessage().startsWith("[ane] main: macOS 27.0 compiles a program only with at most 1 weight file"), e.getMessage());
        assertTrue(e.getMessage().contains("packed-blob"), e.getMessage());
        assertEquals(0, fake.realCompiles(), "refused before the compiler");
    }

    /** Every training kernel of every preset, both attention modes and both weights modes compiles under 27. */
    @Test
    void everyTrainingKernelOfEveryPresetAttentionAndWeightsModeCompiles() {
        AneBackend b = new AneBackend(new AneBackend.Options(100_000L, null, null, 100_000));
        int compiled = 0;
        for (String preset : List.of("tiny", "stories15m", "stories42m", "stories110m", "qwen3-0.6b")) {
            ModelConfig c = ModelConfig.parse(preset);
            for (boolean threeStage : new boolean[] {false, true})
                for (boolean statics : new boolean[] {false, true}) {
                    TrainingKernels tk = new TrainingKernels(c, DType.FP16, statics ? seg -> new float[blockSize(c, seg)] : null, threeStage);
                    for (TrainingKernels.Spec k : tk.all()) {
                        try (Kernel ignored = b.compile(k.program())) {
                            compiled++;
                        } catch (RuntimeException e) {
                            fail(preset + " " + k.name() + " threeStage=" + threeStage + " static=" + statics + ": " + e.getMessage());
                        }
                    }
                }
        }
        assertEquals(5 * (10 + 11) * 2, compiled);
    }

    static int blockSize(ModelConfig c, String seg) {
        return switch (seg) {
            case "qNorm", "kNorm" -> c.headDim();
            case "wqT", "wq" -> c.dim() * c.qDim();
            case "wkT", "wvT", "wk", "wv" -> c.dim() * c.kvDim();
            case "woT", "wo" -> c.qDim() * c.dim();
            default -> c.dim() * c.hiddenDim();
        };
    }

    /** H3: macOS 27 refuses a bundle holding a symbolic link (a stale link in the model directory, say). */
    @Test
    void aBundleWithASymbolicLinkIsRefusedWithApplesMessage() throws Exception {
        fake.setIdentifier("A_B_C");
        Files.createDirectories(tmp.resolve("A_B_C"));
        Files.createSymbolicLink(tmp.resolve("A_B_C/stale"), tmp);
        AneException e = assertThrows(AneException.class, () -> backend().compile(AcceptancePrograms.a1Conv(64, 64)));
        assertTrue(e.getMessage().contains("refusing model bundle containing a symbolic link"), e.getMessage());
        fake.setIdentifier(null);
    }

    static Program identityRows(int width) {
        return Mil.program().function("main", f -> {
            Value x = f.input("x", TensorType.of(DType.FP16, 1, 64, 1, width));
            f.output(f.named("y", f.add(x, f.fp16(1f))));
        }).build();
    }

    /**
     * A strided input declared before a packed one whose name sorts first: the surfaces bind alphabetically (ORION #3,
     * #13), so the 64-byte stride belongs to the second surface. The packed parameters of a generated training step
     * ({@code params}, W = 2181) beside a looked-up embedding ({@code gather_4}) are this case.
     */
    @Test
    void rowStridesFollowTheSurfacesBindingOrderNotTheDeclarationOrder() {
        Program p = Mil.program().function("main", f -> {
            Value params = f.input("params", TensorType.of(DType.FP16, 1, 64, 1, 2181));      // 4362-byte rows: strided
            Value g = f.input("gather_4", TensorType.of(DType.FP16, 1, 64, 1, 64));           // 128-byte rows: packed
            f.output(f.named("y", f.add(f.sliceBySize(params, new int[] {0, 0, 0, 64}, new int[] {1, 64, 1, 64}), g)));
            f.output(f.named("a_rows", f.reduceSum(g, true, 3)));                 // 2-byte rows, sorts first
        }).build();
        assertSameAsRef("params declared before gather_4", p);
    }

    @Test
    void ioRowsThatAreNotAMultipleOf64BytesAreCopiedAtA64ByteStrideAndCannotBeBound() {
        assertSameAsRef("32-byte rows, strided", identityRows(16));
        assertSameAsRef("64-byte rows, packed", identityRows(32));
        try (Kernel k = backend().compile(identityRows(16))) {
            var e = assertThrows(BackendException.class, k::bind);
            assertTrue(e.getMessage().startsWith("[kernel] main (ane): input 'x' fp16[1,64,1,16] has rows of 32 bytes, which macOS 27 reads at a 64-byte stride"), e.getMessage());
            assertEquals(64L * 64, ((AneKernel) k).program().input("x").bytes(), "64 rows of 64 bytes");
        }
    }

    /** What the stride protects from: the fake's H4 reads a packed surface of 32-byte rows at a 64-byte stride. */
    @Test
    void thirtyTwoByteRowsWrittenPackedAreMisreadSilently() {
        Program p = identityRows(16);
        try (Kernel a = backend().rowStrides(false).compile(p); Kernel r = new RefBackend().compile(p)) {
            Map<String, TensorBuffer> in = randomInputs(r, 5);
            float[] want = r.evaluate(in).get("y").toFloatArray(), got = a.evaluate(in).get("y").toFloatArray();
            assertArrayEquals(java.util.Arrays.copyOf(want, 16), java.util.Arrays.copyOf(got, 16), "row 0 is read where it was written");
            assertFalse(java.util.Arrays.equals(want, got), "later rows are read from the wrong bytes");
        }
    }
}
