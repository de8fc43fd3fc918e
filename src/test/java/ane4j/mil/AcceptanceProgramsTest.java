package ane4j.mil;

import static ane4j.programs.AcceptancePrograms.*;
import static ane4j.mil.AcceptanceCases.goldenCases;
import static ane4j.mil.AcceptanceCases.tinyCases;
import static org.junit.jupiter.api.Assertions.*;

import ane4j.programs.AcceptancePrograms;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** A1–A10: written in both dialects, parsed back, compared with the graph and with the committed golden text. */
class AcceptanceProgramsTest {
    static final Path GOLDEN = Path.of("src/test/resources/golden/mil");
    static final boolean REGEN = Boolean.getBoolean("ane4j.regenGolden");

    static Stream<Arguments> golden() {
        return goldenCases().stream().flatMap(c -> Stream.of(Dialect.values())
                .filter(d -> c.program().requiredOpset().compareTo(d.opset()) <= 0)
                .map(d -> Arguments.of(c, d)));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("golden")
    void writtenParsedAndGolden(AcceptanceCases.Case c, Dialect d) throws IOException {
        String text = MilWriter.write(c.program(), d);
        Program parsed = MilParser.parse(text);
        assertEquals(c.program(), parsed, "parse(write(p)) must equal p");
        assertEquals(text, MilWriter.write(parsed, d), "write(parse(text)) must be stable");
        Path file = GOLDEN.resolve(c.name() + (d == Dialect.IOS18 ? "" : "." + d.opset().milName()) + ".mil");
        if (REGEN) {
            Files.createDirectories(GOLDEN);
            Files.writeString(file, text, StandardCharsets.UTF_8);
            return;
        }
        assertTrue(Files.exists(file), "golden " + file + " is missing: regenerate with -Dane4j.regenGolden=true");
        assertEquals(Files.readString(file, StandardCharsets.UTF_8), text,
                "MIL text of " + c.name() + " differs from " + file + "; if the change is intended, regenerate with -Dane4j.regenGolden=true and review the diff");
    }

    @Test
    void int8ProgramsAreRefusedByTheIos16Dialect() {
        var e = assertThrows(MilException.class, () -> MilWriter.write(a3Int8Chain(8, 2, 2, 2), Dialect.IOS16));
        assertTrue(e.getMessage().contains("quantize (ios17)"), e.getMessage());
    }

    static Stream<AcceptanceCases.Case> tiny() { return tinyCases().stream(); }

    @ParameterizedTest(name = "{0}")
    @MethodSource("tiny")
    void tinyProgramsRoundTripWithTheirWeights(AcceptanceCases.Case c, @TempDir Path dir) throws IOException {
        c.program().weights().writeTo(dir);
        for (Dialect d : Dialect.values()) {
            if (c.program().requiredOpset().compareTo(d.opset()) > 0) continue;
            Program p = MilParser.parse(MilWriter.write(c.program(), d), dir);
            assertEquals(c.program(), p);
            assertEquals(c.program().weights(), p.weights(), "weights read back from " + dir);
            assertEquals(c.program().weights().files().keySet(), MilParser.blobPaths(p));
        }
    }

    @Test
    void a1HasOneBlobAtOffset64() {
        Program p = a1Conv(16, 64);
        var files = p.weights().files();
        assertEquals(List.of("@model_path/weights/weight.bin"), List.copyOf(files.keySet()));
        byte[] bytes = files.get("@model_path/weights/weight.bin").bytes();
        assertEquals(64 + 64 + 16 * 16 * 2, bytes.length);
        assertEquals(64, files.get("@model_path/weights/weight.bin").blobs().get(0).metadataOffset());
        assertEquals(fp32(1, 16, 1, 64), p.main().outputs().get(0).type());
    }

    private static TensorType fp32(int... s) { return Mil.fp32(s); }

    @Test
    void a2PeakChainAtRealSizeHasOneFileAtOffset64PerWeight() {
        int c = 512, n = 128;
        for (Program p : List.of(a2PeakConvChain(c, 64, n, Io.FP32_CAST, WeightFiles.PER_WEIGHT), a2PeakConvChain(c, 64, n))) {
            var files = p.weights().files();
            assertEquals(n, files.size());
            for (int i = 0; i < n; i++) {
                var blobs = files.get("@model_path/weights/W" + i + ".bin").blobs();
                assertEquals(1, blobs.size(), "W" + i);
                assertEquals(64L, blobs.get(0).metadataOffset(), "W" + i);
            }
            assertEquals(n, p.main().operations().stream().filter(o -> o.op() == Op.CONV).count());
            for (Literal l : MilParser.blobLiterals(p)) assertEquals(64L, l.blobRef().offset());
        }
        // the acceptance form casts at both ends; the bench's default form has fp16 I/O and no cast (M1/M2: no cast)
        Program fp32 = a2PeakConvChain(c, 64, n, Io.FP32_CAST, WeightFiles.PER_WEIGHT), fp16 = a2PeakConvChain(c, 64, n);
        assertEquals(Mil.fp32(1, c, 1, 64), fp32.main().inputs().get(0).type());
        assertEquals(Mil.fp32(1, c, 1, 64), fp32.main().outputs().get(0).type());
        assertEquals(2, fp32.main().operations().stream().filter(o -> o.op() == Op.CAST).count());
        assertEquals(Mil.fp16(1, c, 1, 64), fp16.main().inputs().get(0).type());
        assertEquals(Mil.fp16(1, c, 1, 64), fp16.main().outputs().get(0).type());
        assertEquals(0, fp16.main().operations().stream().filter(o -> o.op() == Op.CAST).count());
    }

    @Test
    void a2PackedFormKeepsMaderixOffsets() {
        int c = 512, n = 128;
        Program p = AcceptancePrograms.a2PeakConvChain(c, 64, n, AcceptancePrograms.Io.FP32_CAST, AcceptancePrograms.WeightFiles.PACKED);
        var blobs = p.weights().files().get("@model_path/weights/weight.bin").blobs();
        assertEquals(n, blobs.size());
        for (int i = 0; i < n; i++) assertEquals(64L + i * (64L + (long) c * c * 2), blobs.get(i).metadataOffset(), "W" + i);
        int i = 0;
        for (Literal l : MilParser.blobLiterals(p)) assertEquals(64L + i++ * (64L + (long) c * c * 2), l.blobRef().offset());
    }

    @Test
    void a3Int8OneFilePerLayerAndDequantizeAttributes() {
        int c = 512;
        Program p = a3Int8Chain(c, 64, 64, 4);
        for (int i = 0; i < 4; i++) {
            var blobs = p.weights().files().get("@model_path/weights/W" + i + ".bin").blobs();
            assertEquals(List.of(64L), blobs.stream().map(MilBlob.Entry::metadataOffset).toList());
            assertEquals(DType.INT8, blobs.get(0).dtype());
        }
        String text = MilWriter.write(p, Dialect.IOS18);
        assertTrue(text.contains("tensor<fp16, [512, 512, 1, 1]> W1 = constexpr_affine_dequantize()[axis = int32(0), name = string(\"W1\"), "
                + "quantized_data = tensor<int8, [512, 512, 1, 1]>(BLOBFILE(path = string(\"@model_path/weights/W1.bin\"), offset = uint64(64))), "
                + "scale = fp16(0.125), zero_point = int8(0)];"), text);
        assertEquals(Mil.fp16(1, 512, 64, 64), p.main().outputs().get(0).type());
    }

    @Test
    void int8BlobCodes() {
        Program four = a3Int8Chain(64, 4, 4, 2);
        Program one = AcceptancePrograms.a3Int8Chain(64, 4, 4, 2, AcceptancePrograms.WeightFiles.PER_WEIGHT, AcceptancePrograms.Int8BlobCode.CODE_1);
        assertEquals(MilWriter.write(four, Dialect.IOS18), MilWriter.write(one, Dialect.IOS18), "the MIL text is the same");
        byte[] f4 = four.weights().encoded().get("@model_path/weights/W0.bin"), f1 = one.weights().encoded().get("@model_path/weights/W0.bin");
        assertEquals(4, java.nio.ByteBuffer.wrap(f4).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt(68), "coremltools' Int8 code");
        assertEquals(1, java.nio.ByteBuffer.wrap(f1).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt(68), "maderix ane_int8_bench's code");
        assertArrayEquals(java.util.Arrays.copyOfRange(f4, 128, 128 + 64 * 64), java.util.Arrays.copyOfRange(f1, 128, 128 + 64 * 64), "same int8 data");
    }

    @Test
    void a6QwenShapesAndWeightFiles() {
        Program p = a6SdpaForward(QWEN3_06B);
        assertEquals(Mil.fp16(1, 1024, 1, 4352), p.main().inputs().get(0).type());
        assertEquals(Mil.fp16(1, 7168, 1, 256), p.main().outputs().get(0).type());
        assertEquals(List.of("@model_path/weights/rope_cos.bin", "@model_path/weights/rope_sin.bin", "@model_path/weights/mask.bin"),
                List.copyOf(p.weights().files().keySet()));
        // GQA: K and V tiled from 8 to 16 heads by concat along axis 1
        long gqa = p.main().operations().stream().filter(o -> o.op() == Op.CONCAT && o.values("values").size() == 2
                && o.values("values").get(0).shape()[1] == 8 && o.output().shape()[1] == 16).count();
        assertEquals(2, gqa);
        assertTrue(p.main().operations().stream().anyMatch(o -> o.op() == Op.RESHAPE && o.output().type().equals(Mil.fp16(1, 16, 16384, 2))));
    }

    @Test
    void realSizedOutputsMatchTheKernelCatalogue() {
        assertEquals(Mil.fp16(1, 768 + 3 * 2048, 1, 256), a7FfnFused(STORIES110M).main().outputs().get(0).type());
        assertEquals(Mil.fp16(1, 1024 + 3 * 3072, 1, 256), a7FfnFused(QWEN3_06B).main().outputs().get(0).type());
        assertEquals(Mil.fp16(1, 2048 + 2 * 16 * 256, 1, 256), a8SdpaBackward1(QWEN3_06B).main().outputs().get(0).type());
        assertEquals(Mil.fp16(1, 2 * 2048, 1, 256), a8SdpaBackward2(QWEN3_06B).main().outputs().get(0).type());
        assertEquals(Mil.fp16(1, 4608, 1, 256), a9StaticAttentionTaps(768, 12, 256).main().outputs().get(0).type());
        assertEquals(Mil.fp16(1, 768, 1, 256), a10RmsNormBackward(768, 256).main().outputs().get(0).type());
        Program cls = a10ClassifierBackward(768, 32000, 256);
        assertEquals(Mil.fp16(1, 768, 1, 256), cls.main().outputs().get(0).type());
        assertEquals(3, cls.main().operations().stream().filter(o -> o.op() == Op.MATMUL).findFirst().orElseThrow().output().rank());
        assertEquals(3, a10FusedQkv(64, 64).main().outputs().size());
        assertEquals(2, a10QkT(12, 256, 64).main().inputs().size());
    }

    @Test
    void ropeAndMaskTables() {
        float[] cos = ropeCos(4, 8), sin = ropeSin(4, 8), mask = causalMask(3);
        assertEquals(1f, cos[0]);
        assertEquals((float) Math.cos(3 / Math.pow(10000, 2.0 * 1 / 8)), cos[3 * 8 + 2]);
        assertEquals(cos[3 * 8 + 2], cos[3 * 8 + 3]);
        assertEquals((float) Math.sin(2), sin[2 * 8]);
        assertArrayEquals(new float[] {0, -65504, -65504, 0, 0, -65504, 0, 0, 0}, mask);
    }
}
