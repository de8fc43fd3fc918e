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
        assertTrue(e.getMessage().startsWith("[tokens] odd.bin: 7 bytes is odd"), e.getMessage());

        Path shortFile = tmp.resolve("short.bin");
        TokenShard.write(shortFile, new int[]{1, 2, 3});
        e = assertThrows(ModelFormatException.class, () -> TokenShard.open(shortFile, 100, 8));
        assertTrue(e.getMessage().contains("3 tokens, need at least seqLen+1 = 9"), e.getMessage());

        Path big = tmp.resolve("big.bin");
        TokenShard.write(big, new int[]{1, 2, 500, 3});
        e = assertThrows(ModelFormatException.class, () -> TokenShard.open(big, 100, 2));
        assertTrue(e.getMessage().contains("token id 500 at index 2 is ≥ vocabSize 100"), e.getMessage());
    }
}
