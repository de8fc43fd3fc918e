package ane4j.mil;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 12 point 8: the weight files maderix/ANE's own builders write, rebuilt here byte for byte from the facts read in
 * its source (commit d91c984), are read by {@code ane4j mil check} with one warning line per sloppy field, never refused.
 * Those builders ran on M3/M4. ane4j itself writes spec-correct headers ({@link MilBlobTest}).
 */
public class MaderixBlobsTest {
    @TempDir Path dir;

    record Result(int code, String out, String err) {}

    static Result check(Path mil) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int code = ane4j.cli.Main.run(new String[] {"mil", "check", mil.toString()}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    static byte[] randomData(long seed, int n) {
        byte[] b = new byte[n];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    /** {@code training/stories_io.h} build_blob / build_blob_fp16 (also training_dynamic/io.h): one blob, every field right. */
    static byte[] storiesBlob(byte[] fp16) {
        int ws = fp16.length, tot = 128 + ws;
        ByteBuffer b = ByteBuffer.allocate(tot).order(ByteOrder.LITTLE_ENDIAN);
        b.put(0, (byte) 1).put(4, (byte) 2).put(64, (byte) 0xEF).put(65, (byte) 0xBE).put(66, (byte) 0xAD).put(67, (byte) 0xDE).put(68, (byte) 1);
        b.putInt(72, ws).putInt(80, 128);
        b.put(128, fp16);
        return b.array();
    }

    /** {@code training/ane_mil_gen.h} mil_build_qkv_weight_blob: chunks at 64 + w·(64 + wsize), size and data offset right, count left 1. */
    static byte[] qkvBlob(byte[][] fp16) {
        int wsize = fp16[0].length, cs = 64 + wsize, total = 64 + fp16.length * cs;
        ByteBuffer b = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
        b.put(0, (byte) 1).put(4, (byte) 2);
        for (int w = 0; w < fp16.length; w++) {
            int chunk = 64 + w * cs;
            b.put(chunk, (byte) 0xEF).put(chunk + 1, (byte) 0xBE).put(chunk + 2, (byte) 0xAD).put(chunk + 3, (byte) 0xDE).put(chunk + 4, (byte) 1);
            b.putInt(chunk + 8, wsize).putInt(chunk + 16, chunk + 64);
            b.put(chunk + 64, fp16[w]);
        }
        return b.array();
    }

    /**
     * {@code inmem_peak.m} buildWeightBlob and {@code ane_int8_bench.m} buildWeightBlobInt8/FP16: count 1, per chunk only the
     * sentinel, dtype byte 1 (fp16, also on int8 data) and byte 10 (0x08: size 524288; 0x10: 1048576), data offset 0.
     */
    public static byte[] benchBlob(byte[][] data, int byte10) {
        int wsize = data[0].length, chunkSize = 64 + wsize, total = 64 + chunkSize * data.length;
        byte[] buf = new byte[total];
        buf[0] = 1;
        buf[4] = 2;
        for (int i = 0; i < data.length; i++) {
            int chunk = 64 + i * chunkSize;
            buf[chunk] = (byte) 0xEF; buf[chunk + 1] = (byte) 0xBE; buf[chunk + 2] = (byte) 0xAD; buf[chunk + 3] = (byte) 0xDE;
            buf[chunk + 4] = 1;
            buf[chunk + 10] = (byte) byte10;
            System.arraycopy(data[i], 0, buf, chunk + 64, wsize);
        }
        return buf;
    }

    /** A program whose outputs are BLOBFILE constants of {@code type} at these offsets of weights/weight.bin. */
    Path program(String type, long... offsets) throws Exception {
        StringBuilder m = new StringBuilder("program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1]> x) {\n");
        List<String> outs = new ArrayList<>();
        for (int i = 0; i < offsets.length; i++) {
            m.append("        ").append(type).append(" W").append(i).append(" = const()[name = string(\"W").append(i).append("\"), val = ").append(type)
                    .append("(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(").append(offsets[i]).append(")))];\n");
            outs.add("W" + i);
        }
        m.append("    } -> (").append(String.join(", ", outs)).append(");\n}\n");
        Path f = dir.resolve("p.mil");
        Files.writeString(f, m);
        return f;
    }

    void weights(byte[] file) throws Exception {
        Files.createDirectories(dir.resolve("weights"));
        Files.write(dir.resolve("weights/weight.bin"), file);
    }

    void assertData(Path mil, byte[]... expected) throws Exception {
        Program p = MilParser.parseDetailed(Files.readString(mil), dir).program();
        List<MilBlob.Entry> blobs = p.weights().files().get("@model_path/weights/weight.bin").blobs();
        assertEquals(expected.length, blobs.size());
        for (int i = 0; i < expected.length; i++) assertArrayEquals(expected[i], blobs.get(i).data(), "blob " + i);
    }

    static String w(Path mil, String rest) { return mil + ": warning: [blob] " + mil.getParent().resolve("weights/weight.bin") + ": " + rest; }

    @Test
    void storiesIoBlobReadsWithoutWarning() throws Exception {
        byte[] d = randomData(1, 2 * 8 * 4);
        weights(storiesBlob(d));
        Path mil = program("tensor<fp16, [8, 4, 1, 1]>", 64);
        Result r = check(mil);
        assertEquals(0, r.code(), r.err());
        assertEquals("", r.err());
        assertData(mil, d);
    }

    @Test
    void aneMilGenQkvBlobWarnsAboutTheCountOnly() throws Exception {
        int dim = 12; // 288 bytes per blob: not a multiple of 64, so the chunks are not 64-byte aligned either
        byte[][] d = {randomData(2, 2 * dim * dim), randomData(3, 2 * dim * dim), randomData(4, 2 * dim * dim)};
        weights(qkvBlob(d));
        long cs = 64 + 2L * dim * dim;
        Path mil = program("tensor<fp16, [12, 12, 1, 1]>", 64, 64 + cs, 64 + 2 * cs);
        Result r = check(mil);
        assertEquals(0, r.code(), r.err());
        assertEquals(w(mil, "header count 1 but the program reads 3 blobs from it (maderix's ane_mil_gen.h and benchmarks write 1); reading each blob at its BLOBFILE offset\n"), r.err());
        assertTrue(r.out().contains(": 3 blobs, 864 bytes, checked"), r.out());
        assertData(mil, d);
    }

    @Test
    void inmemPeakBlobWarnsAboutCountAndDataOffset() throws Exception {
        int ch = 512; // the benchmark's channel count, for which its hard-coded size 0x80000 is right
        byte[][] d = {randomData(5, ch * ch * 2), randomData(6, ch * ch * 2)};
        weights(benchBlob(d, 0x08));
        long cs = 64 + 2L * ch * ch;
        Path mil = program("tensor<fp16, [512, 512, 1, 1]>", 64, 64 + cs);
        Result r = check(mil);
        assertEquals(0, r.code(), r.err());
        assertEquals(w(mil, "blob at offset 64: data offset 0 (maderix's inmem_peak.m and ane_int8_bench.m leave it 0); reading the data right after the metadata, at 128\n")
                + w(mil, "blob at offset " + (64 + cs) + ": data offset 0 (maderix's inmem_peak.m and ane_int8_bench.m leave it 0); reading the data right after the metadata, at " + (128 + cs) + "\n")
                + w(mil, "header count 1 but the program reads 2 blobs from it (maderix's ane_mil_gen.h and benchmarks write 1); reading each blob at its BLOBFILE offset\n"), r.err());
        assertData(mil, d);
    }

    @Test
    void int8BenchBlobWarnsAboutDtypeSizeAndDataOffset() throws Exception {
        int ch = 512;
        byte[][] d = {randomData(7, ch * ch), randomData(8, ch * ch)};
        weights(benchBlob(d, 0x08)); // int8 data, dtype byte 1 (fp16), size field 524288 for 262144 bytes
        long cs = 64 + (long) ch * ch;
        Path mil = program("tensor<int8, [512, 512, 1, 1]>", 64, 64 + cs);
        Result r = check(mil);
        assertEquals(0, r.code(), r.err());
        List<String> lines = r.err().lines().toList();
        assertEquals(7, lines.size(), r.err());
        assertEquals(w(mil, "blob at offset 64: mil_dtype 1 (fp16) but the literal declares int8 (maderix's ane_int8_bench.m writes the fp16 code on int8 data); reading int8"), lines.get(0));
        assertEquals(w(mil, "blob at offset 64: data offset 0 (maderix's inmem_peak.m and ane_int8_bench.m leave it 0); reading the data right after the metadata, at 128"), lines.get(1));
        assertEquals(w(mil, "blob at offset 64: sizeInBytes 524288 but the literal declares 262144 bytes (maderix's benchmarks hard-code this field); reading 262144"), lines.get(2));
        assertTrue(lines.get(6).contains("header count 1 but the program reads 2 blobs"), lines.get(6));
        assertData(mil, d);

        // the benchmark's fp16 variant: byte 10 = 0x10, size 1048576 for 524288 bytes
        byte[][] h = {randomData(9, ch * ch * 2), randomData(10, ch * ch * 2)};
        weights(benchBlob(h, 0x10));
        long hs = 64 + 2L * ch * ch;
        Path fp16 = program("tensor<fp16, [512, 512, 1, 1]>", 64, 64 + hs);
        Result r16 = check(fp16);
        assertEquals(0, r16.code(), r16.err());
        assertTrue(r16.err().contains("blob at offset 64: sizeInBytes 1048576 but the literal declares 524288 bytes"), r16.err());
        assertData(fp16, h);
    }

    @Test
    void corruptionIsStillRefused() throws Exception {
        byte[][] d = {randomData(11, 128)};
        byte[] f = benchBlob(d, 0x08);
        weights(java.util.Arrays.copyOf(f, f.length - 1));
        Result r = check(program("tensor<fp16, [8, 8, 1, 1]>", 64));
        assertEquals(1, r.code());
        assertTrue(r.err().contains("blob at offset 64: the literal's 128 bytes at offset 128 run past the end of the file (255 bytes; truncated?)"), r.err());
        weights(f);
        Result s = check(program("tensor<fp16, [8, 8, 1, 1]>", 128));
        assertEquals(1, s.code());
        assertTrue(s.err().contains("blob at offset 128: no 0xDEADBEEF sentinel"), s.err());
    }

    // issue 18 row 8: a symlink inside weights/ pointing outside the model folder is refused (it was followed)
    @Test
    void symlinkOutOfTheModelFolderIsRefused() throws Exception {
        byte[] d = randomData(12, 64);
        Path outside = Files.createDirectories(dir.resolve("elsewhere")).resolve("secret.bin");
        Files.write(outside, storiesBlob(d));
        Path model = Files.createDirectories(dir.resolve("model/weights")).getParent();
        Files.createSymbolicLink(model.resolve("weights/weight.bin"), outside);
        Path mil = model.resolve("p.mil");
        Files.writeString(mil, Files.readString(program("tensor<fp16, [8, 4, 1, 1]>", 64)));
        Result r = check(mil);
        assertEquals(1, r.code(), r.out());
        assertTrue(r.err().matches(".*p\\.mil:\\d+:\\d+: \\[blob\\] weight file .*model/weights/weight\\.bin resolves to .*elsewhere/secret\\.bin, outside the model directory "
                + ".*model \\(a symlink\\?\\); copy the file into the model directory\\n"), r.err());
        // a symlinked model folder itself, and a symlink that stays inside it, are fine
        Files.delete(model.resolve("weights/weight.bin"));
        Files.write(model.resolve("weights/real.bin"), storiesBlob(d));
        Files.createSymbolicLink(model.resolve("weights/weight.bin"), model.resolve("weights/real.bin"));
        Path link = Files.createSymbolicLink(dir.resolve("model-link"), model);
        assertEquals(0, check(link.resolve("p.mil")).code());
        assertEquals(0, check(mil).code());
    }

    // issue 18 row 14: a weight.bin over 2 GiB (sparse) is mapped and only the declared blobs are copied out (was OutOfMemoryError)
    @Test
    void weightFileOver2GiBIsMappedNotRead() throws Exception {
        byte[] a = randomData(13, 64), b = randomData(14, 64);
        long far = 5L << 29; // 2.5 GiB
        Files.createDirectories(dir.resolve("weights"));
        try (var raf = new java.io.RandomAccessFile(dir.resolve("weights/weight.bin").toFile(), "rw")) {
            byte[] first = MilBlob.write(List.of(DType.FP16), List.of(a));
            ByteBuffer.wrap(first).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 2);
            raf.write(first);
            ByteBuffer meta = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN);
            meta.putInt(0, MilBlob.SENTINEL).putInt(4, DType.FP16.blobCode()).putLong(8, 64).putLong(16, far + 64).put(64, b);
            raf.seek(far);
            raf.write(meta.array());
            raf.setLength(3L << 30);
        }
        Path mil = program("tensor<fp16, [8, 4, 1, 1]>", 64, far);
        Result r = check(mil);
        assertEquals(0, r.code(), r.err());
        assertEquals("", r.err());
        assertData(mil, a, b);
    }
}
