package ane4j.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class Llama2BinTest {
    @TempDir Path tmp;

    static ModelConfig small(boolean tied, int kvHeads) {
        return new ModelConfig("small", 16, 40, 2, 4, kvHeads, 4, 30, 8, 10000f, RopeStyle.INTERLEAVED, false, tied, 1e-5f, 1f);
    }

    @Test
    void roundTripShared() {
        roundTrip(small(true, 4));
    }

    @Test
    void roundTripUnsharedGqa() {
        roundTrip(small(false, 2));
    }

    private void roundTrip(ModelConfig c) {
        Parameters p = Parameters.init(c, 3);
        Path f = tmp.resolve("m.bin");
        Llama2Bin.write(f, p);
        try {
            assertEquals(Llama2Bin.expectedBytes(16, 40, 2, 4, c.nKvHeads(), 30, 8, c.tiedEmbedding()), Files.size(f));
            ByteBuffer h = ByteBuffer.wrap(Files.readAllBytes(f)).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(c.tiedEmbedding() ? 30 : -30, h.getInt(20), "vocab sign encodes sharing");
            // the token embedding follows the header, row-major
            assertEquals(p.data()[p.layout().tokenEmbedding().offset() + 5], h.getFloat(28 + 4 * 5));
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        Parameters back = Llama2Bin.read(f);
        assertEquals(c.withName("m"), back.config());
        assertArrayEquals(p.data(), back.data());
    }

    @Test
    void freqCisIsWrittenAsLlama2cComputesIt() throws IOException {
        ModelConfig c = small(true, 4);
        Path f = tmp.resolve("m.bin");
        Llama2Bin.write(f, Parameters.init(c, 1));
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(f)).order(ByteOrder.LITTLE_ENDIAN);
        long freqStart = Files.size(f) - 4L * c.seqLen() * c.headDim();
        int half = c.headDim() / 2, pos = 5, i = 1;
        double angle = pos / Math.pow(10000, 2.0 * i / c.headDim());
        assertEquals(Math.cos(angle), b.getFloat((int) freqStart + 4 * (pos * half + i)), 1e-6);
        assertEquals(Math.sin(angle), b.getFloat((int) freqStart + 4 * (c.seqLen() * half + pos * half + i)), 1e-6);
    }

    @Test
    void aFolderWhereTheFileShouldBeIsNamedAsSuch() throws IOException {
        Path dir = Files.createDirectory(tmp.resolve("stories15M"));
        var e = assertThrows(ModelFormatException.class, () -> Llama2Bin.read(dir));
        assertTrue(e.getMessage().contains("is a folder, not a file"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }

    @Test
    void truncatedAndForeignFilesGiveOneLineErrors() throws IOException {
        Path f = tmp.resolve("m.bin");
        Llama2Bin.write(f, Parameters.init(small(true, 4), 1));
        byte[] all = Files.readAllBytes(f);
        Path cut = Files.write(tmp.resolve("cut.bin"), Arrays.copyOf(all, all.length - 10));
        var e = assertThrows(ModelFormatException.class, () -> Llama2Bin.read(cut));
        assertTrue(e.getMessage().startsWith("[llama2.bin] cut.bin: expected " + all.length + " bytes for dim=16 hidden_dim=40"), e.getMessage());
        assertTrue(e.getMessage().contains("found " + (all.length - 10)), e.getMessage());

        // a hostile header announcing a huge model: rejected by size, nothing allocated
        ByteBuffer h = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        h.putInt(1 << 20).putInt(1 << 22).putInt(1000).putInt(1 << 10).putInt(1 << 10).putInt(1 << 30).putInt(1 << 20);
        Path huge = Files.write(tmp.resolve("huge.bin"), h.array());
        e = assertThrows(ModelFormatException.class, () -> Llama2Bin.read(huge));
        assertTrue(e.getMessage().startsWith("[llama2.bin] huge.bin: expected "), e.getMessage());

        Path text = Files.writeString(tmp.resolve("readme.bin"), "this is not a model, just some text that is long enough");
        e = assertThrows(ModelFormatException.class, () -> Llama2Bin.read(text));
        assertTrue(e.getMessage().startsWith("[llama2.bin] readme.bin: header dim="), e.getMessage());

        Path tiny = Files.write(tmp.resolve("tiny.bin"), new byte[5]);
        e = assertThrows(ModelFormatException.class, () -> Llama2Bin.read(tiny));
        assertTrue(e.getMessage().contains("shorter than the 28-byte header"), e.getMessage());
    }

    @Test
    void qwenStyleModelsCannotBeWrittenAsLlama2c() {
        var e = assertThrows(IllegalArgumentException.class, () -> Llama2Bin.write(tmp.resolve("q.bin"), Parameters.init(ParameterLayoutTest.QWEN_SMALL, 1)));
        assertTrue(e.getMessage().contains("QK-norm") && e.getMessage().contains("safetensors"), e.getMessage());
    }

    // issue 18 row 15 for llama2.c files: a header whose size matches the file but whose seq_len the config refuses is one tagged line
    @Test
    void seqLenTheConfigRefusesIsAModelFormatError(@TempDir Path d) throws Exception {
        int dim = 2, hidden = 1, layers = 1, heads = 1, kv = 1, vocab = 1, seq = 100_000;
        long bytes = Llama2Bin.expectedBytes(dim, hidden, layers, heads, kv, vocab, seq, true);
        var b = ByteBuffer.allocate((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(dim).putInt(hidden).putInt(layers).putInt(heads).putInt(kv).putInt(vocab).putInt(seq);
        Path f = Files.write(d.resolve("long.bin"), b.array());
        var e = assertThrows(ModelFormatException.class, () -> Llama2Bin.read(f));
        assertTrue(e.getMessage().startsWith("[llama2.bin] long.bin: header dim=2 hidden_dim=1 n_layers=1 n_heads=1 n_kv_heads=1 vocab_size=1 seq_len=100000: "
                + "[config] long: seqLen 100000 with 1 heads makes attention scores"), e.getMessage());
    }
}
