package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokenShardTest {
    @TempDir Path tmp;

    @Test
    void writesAndMapsUint16LittleEndian() throws IOException {
        int[] tokens = {1, 65535, 300, 0, 32000, 7};
        Path f = tmp.resolve("data.bin");
        TokenShard.write(f, tokens);
        byte[] raw = Files.readAllBytes(f);
        assertEquals(12, raw.length);
        assertEquals((byte) 0x2C, raw[4]); // 300 = 0x012C, low byte first
        assertEquals((byte) 0x01, raw[5]);
        try (TokenShard s = TokenShard.open(f, 65536, 4)) {
            assertEquals(6, s.size());
            int[] w = new int[5];
            s.read(1, w, 0, 5);
            assertArrayEquals(new int[]{65535, 300, 0, 32000, 7}, w);
            assertThrows(IndexOutOfBoundsException.class, () -> s.read(2, w, 0, 5));
        }
        try (TokenShard m = TokenShard.of(tokens, 65536, 4)) {
            assertEquals(65535, m.get(1));
        }
    }

    @Test
    void rejectsOddShortAndOutOfVocabularyFiles() throws IOException {
        Path odd = Files.write(tmp.resolve("odd.bin"), new byte[7]);
        var e = assertThrows(ModelFormatException.class, () -> TokenShard.open(odd, 100, 2));
        assertTrue(e.getMessage().startsWith("[tokens] odd.bin: 7 bytes is not a whole number of uint16 ids (2 bytes each)"), e.getMessage());

        Path shortFile = tmp.resolve("short.bin");
        TokenShard.write(shortFile, new int[]{1, 2, 3});
        e = assertThrows(ModelFormatException.class, () -> TokenShard.open(shortFile, 100, 8));
        assertTrue(e.getMessage().contains("3 tokens, need at least seqLen+1 = 9"), e.getMessage());

        Path big = tmp.resolve("big.bin");
        TokenShard.write(big, new int[]{1, 2, 500, 3});
        e = assertThrows(ModelFormatException.class, () -> TokenShard.open(big, 100, 2));
        assertTrue(e.getMessage().contains("token id 500 at index 2 is ≥ vocabSize 100"), e.getMessage());
    }

    @Test
    void uint32FilesHoldQwen3SizedVocabularies() throws IOException {
        int[] tokens = {151935, 0, 65536, 70000, 1, 151934};
        Path f = tmp.resolve("qwen.bin");
        TokenShard.write(f, tokens, TokenShard.Dtype.UINT32);
        byte[] raw = Files.readAllBytes(f);
        assertEquals(24, raw.length);
        assertEquals((byte) 0x01, raw[10]); // 65536 = 0x00010000, little-endian: 00 00 01 00
        try (TokenShard s = TokenShard.open(f, 151936, 4, TokenShard.Dtype.UINT32)) {
            assertEquals(6, s.size());
            assertEquals(TokenShard.Dtype.UINT32, s.dtype());
            assertEquals(151935, s.maxToken());
            int[] w = new int[6];
            s.read(0, w, 0, 6);
            assertArrayEquals(tokens, w);
        }
        assertThrows(IllegalArgumentException.class, () -> TokenShard.write(tmp.resolve("x.bin"), new int[]{65536}));
    }

    @Test
    void aVocabularyThatDoesNotFitTheDtypeNamesTheFlag() throws IOException {
        Path f = tmp.resolve("tok.bin");
        TokenShard.write(f, new int[]{1, 2, 3, 4});
        var e = assertThrows(IllegalArgumentException.class, () -> TokenShard.open(f, 151936, 2));
        assertEquals("[tokens] tok.bin: vocabSize 151936 does not fit uint16 token files (max 65536); write the tokens as uint32 and pass --data-dtype uint32",
                e.getMessage());
        assertEquals(TokenShard.Dtype.UINT32, TokenShard.Dtype.of("UInt32"));
        e = assertThrows(IllegalArgumentException.class, () -> TokenShard.Dtype.of("int8"));
        assertEquals("[tokens] data dtype 'int8' is not uint16 or uint32", e.getMessage());
    }

    @Test
    void aFileReadWithTheWrongWidthSaysWhichFlagFits() throws IOException {
        Path three = Files.write(tmp.resolve("three.bin"), new byte[6]);   // three uint16 ids, not whole uint32 ids
        var e = assertThrows(ModelFormatException.class, () -> TokenShard.open(three, 100, 1, TokenShard.Dtype.UINT32));
        assertEquals("[tokens] three.bin: 6 bytes is not a whole number of uint32 ids (4 bytes each); if the file is uint16 tokens, pass --data-dtype uint16",
                e.getMessage());

        Path u16 = tmp.resolve("u16.bin");
        TokenShard.write(u16, new int[]{5, 3000, 7, 9000});   // as uint32: 3000 << 16 | 5 = 196608005
        e = assertThrows(ModelFormatException.class, () -> TokenShard.open(u16, 151936, 1, TokenShard.Dtype.UINT32));
        assertTrue(e.getMessage().contains("token id 196608005 at index 0 is ≥ vocabSize 151936") && e.getMessage().contains("--data-dtype uint16"),
                e.getMessage());
    }

    @Test
    void llmcHeadersSayTheirOwnWidth() throws IOException {
        int n = 5;
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(1024 + 4 * n).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, TokenShard.LLMC_LLAMA3_MAGIC).putInt(4, 7).putInt(8, n);
        for (int i = 0; i < n; i++) b.putInt(1024 + 4 * i, 128000 + i);
        Path llama3 = Files.write(tmp.resolve("llama3.bin"), b.array());
        try (TokenShard s = TokenShard.open(llama3, 128256, 4, TokenShard.Dtype.UINT32)) {
            assertEquals(n, s.size());
            assertEquals(128004, s.get(4));
        }
        var e = assertThrows(ModelFormatException.class, () -> TokenShard.open(llama3, 60000, 4));
        assertEquals("[tokens] llama3.bin: an llm.c shard of uint32 tokens (magic 20240801, version 7), read as uint16; pass --data-dtype uint32", e.getMessage());
    }
}
