package ane4j.mil;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ref.RefBackend;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link Program#packedWeights}: one MILBlob v2 file for a program that had one file per weight (macOS 27, C2/C3). */
class PackedWeightsTest {
    static Program threeFiles() {
        return Mil.program().function("main", f -> {
            Value x = f.input("x", TensorType.of(DType.FP16, 1, 8, 1, 32));
            float[] w1 = new float[8 * 8], w2 = new float[8 * 8], b = new float[8];
            for (int i = 0; i < w1.length; i++) { w1[i] = (i % 7 - 3) / 8f; w2[i] = (i % 5 - 2) / 4f; }
            for (int i = 0; i < 8; i++) b[i] = i / 16f;
            Value c1 = f.conv(x, f.weight("w1", TensorType.of(DType.FP16, 8, 8, 1, 1), w1));
            Value c2 = f.conv(c1, f.weight("w2", TensorType.of(DType.FP16, 8, 8, 1, 1), w2));
            Value y = f.add(c2, f.weight("bias", TensorType.of(DType.FP16, 1, 8, 1, 1), b));
            f.output(f.named("y", y));
        }).build();
    }

    @Test
    void oneFileWith64ByteAlignedRecordsAndTheSameResults() {
        Program p = threeFiles(), packed = p.packedWeights("weight.bin");
        assertEquals(3, p.weights().files().size());
        assertEquals(1, packed.weights().files().size());
        Weights.File file = packed.weights().files().get("@model_path/weights/weight.bin");
        assertEquals(3, file.blobs().size());
        for (MilBlob.Entry e : file.blobs()) assertEquals(0, e.metadataOffset() % 64, "record at " + e.metadataOffset());
        assertEquals(64, file.blobs().get(0).metadataOffset(), "first record right after the 64-byte header");
        String mil = MilWriter.write(packed, Dialect.IOS18);
        assertTrue(mil.contains("weights/weight.bin") && !mil.contains("weights/w1.bin"), mil);
        // the second and third blobs read back by value: the interpreter resolves each BLOBFILE offset in the one file
        TensorBuffer x = TensorBuffer.random(TensorType.of(DType.FP16, 1, 8, 1, 32), 7, 1f);
        RefBackend ref = new RefBackend();
        try (Kernel a = ref.compile(p); Kernel b = ref.compile(packed)) {
            assertArrayEquals(a.evaluate(Map.of("x", x)).get("y").toFloatArray(), b.evaluate(Map.of("x", x)).get("y").toFloatArray());
        }
        // the encoded file parses back into the same blobs (what the compiler service reads)
        byte[] bytes = file.bytes();
        assertEquals(3, MilBlob.read(bytes, "weight.bin").size());
    }

    @Test
    void aProgramWithAtMostOneFileIsReturnedAsIs() {
        Program one = Mil.program().packWeightsInto("weight.bin").function("main", f -> {
            Value x = f.input("x", TensorType.of(DType.FP16, 1, 8, 1, 32));
            f.output(f.named("y", f.conv(x, f.weight("w", TensorType.of(DType.FP16, 8, 8, 1, 1), new float[64]))));
        }).build();
        assertSame(one, one.packedWeights("weight.bin"));
    }
}
