package ane4j.mil;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.junit.jupiter.api.Test;

class MilBlobTest {
    static byte[] twoBlobs() {
        return MilBlob.write(List.of(DType.FP16, DType.INT8), List.of(new byte[] {0, 0x3C, 0, (byte) 0xC0}, new byte[] {1, -2, 3}));
    }

    @Test
    void bytesFollowTheSpec() {
        byte[] f = twoBlobs();
        ByteBuffer b = ByteBuffer.wrap(f).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(2, b.getInt(0));                 // count
        assertEquals(2, b.getInt(4));                 // version
        for (int i = 8; i < 64; i++) assertEquals(0, f[i], "reserved header byte " + i);
        // blob 0 at 64: sentinel EF BE AD DE, dtype fp16 = 1, size 4, data at 128
        assertArrayEquals(new byte[] {(byte) 0xEF, (byte) 0xBE, (byte) 0xAD, (byte) 0xDE}, java.util.Arrays.copyOfRange(f, 64, 68));
        assertEquals(1, b.getInt(68));
        assertEquals(4, b.getLong(72));
        assertEquals(128, b.getLong(80));
        for (int i = 88; i < 128; i++) assertEquals(0, f[i], "reserved metadata byte " + i);
        assertEquals(0x3C00, b.getShort(128));
        // blob 1 aligned to 64 after 128 + 4: metadata at 192, int8 = 4, data at 256
        assertEquals(0xDEADBEEF, b.getInt(192));
        assertEquals(4, b.getInt(196));
        assertEquals(3, b.getLong(200));
        assertEquals(256, b.getLong(208));
        assertEquals(320, f.length);
        assertArrayEquals(new long[] {64, 192}, MilBlob.offsets(4, 3));
        assertEquals(3, DType.UINT8.blobCode());
        assertEquals(2, DType.FP32.blobCode());
    }

    @Test
    void roundTrip() {
        var entries = MilBlob.read(twoBlobs(), "w.bin");
        assertEquals(2, entries.size());
        assertEquals(DType.FP16, entries.get(0).dtype());
        assertEquals(64, entries.get(0).metadataOffset());
        assertArrayEquals(new byte[] {1, -2, 3}, entries.get(1).data());
        assertEquals(192, entries.get(1).metadataOffset());
        assertArrayEquals(new byte[] {1, -2, 3}, MilBlob.readAt(twoBlobs(), 192, "w.bin").data());
        float[] fp32 = {1.5f, -2f};
        byte[] enc = FunctionBuilder.encode(Mil.fp32(2), fp32);
        var e = MilBlob.read(MilBlob.write(List.of(DType.FP32), List.of(enc)), "f").get(0);
        assertArrayEquals(fp32, Weights.floats(e));
    }

    static String reject(byte[] f) { return assertThrows(MilException.class, () -> MilBlob.read(f, "w.bin")).getMessage(); }

    @Test
    void rejectsForeignTruncatedAndHostileFiles() {
        assertTrue(reject(new byte[10]).contains("shorter than the 64-byte MILBlob header"));
        assertTrue(reject("PK\u0003\u0004 this is a zip file, not weights at all....................................".getBytes()).contains("MILBlob version"));
        byte[] f = twoBlobs();
        assertTrue(reject(java.util.Arrays.copyOf(f, 200)).contains("w.bin"));
        byte[] hostile = twoBlobs();
        ByteBuffer.wrap(hostile).order(ByteOrder.LITTLE_ENDIAN).putLong(72, Long.MAX_VALUE);
        assertTrue(reject(hostile).contains("claims 9223372036854775807 bytes"), reject(hostile));
        byte[] hugeCount = twoBlobs();
        ByteBuffer.wrap(hugeCount).order(ByteOrder.LITTLE_ENDIAN).putInt(0, -1);
        assertTrue(reject(hugeCount).contains("header says 4294967295 blobs"));
        byte[] noSentinel = twoBlobs();
        noSentinel[64] = 0;
        assertTrue(reject(noSentinel).contains("no 0xDEADBEEF sentinel at offset 64"));
        byte[] badType = twoBlobs();
        badType[68] = 99;
        assertTrue(reject(badType).contains("unsupported mil_dtype 99"));
        assertTrue(assertThrows(MilException.class, () -> MilBlob.readAt(twoBlobs(), 100000, "w.bin")).getMessage().contains("outside the file"));
    }
}
