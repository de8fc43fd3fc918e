package ane4j.fuzz;

import static org.junit.jupiter.api.Assertions.*;

import ane4j.backend.TensorBuffer;
import ane4j.cli.CliException;
import ane4j.cli.Npy;
import ane4j.mil.DType;
import ane4j.mil.MilBlob;
import ane4j.mil.MilException;
import ane4j.mil.TensorType;
import ane4j.model.Llama2Bin;
import ane4j.model.ModelConfig;
import ane4j.model.ModelFormatException;
import ane4j.model.Parameters;
import ane4j.model.RopeStyle;
import ane4j.model.Safetensors;
import ane4j.model.Tokenizer;
import java.lang.foreign.Arena;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18: a fuzz test per binary reader (MILBlob, llama2.c .bin, tokenizer.bin, safetensors, .npy; the MIL text parser's
 * is {@code MilParserFuzzTest}). Thousands of mutated files each — bit flips, byte sets, truncations, deleted and spliced
 * ranges, huge length fields — and only the reader's own one-line errors come out, within bounded heap and time.
 */
class ReadersFuzzTest {
    static final int CASES = 3000;

    @TempDir Path dir;

    static void report(String reader, Fuzz.Outcome o, long t0) {
        System.out.printf("[fuzz] %s: %d cases, %d read, %d refused, slowest %.1f ms, heap at most %d KB a case (%.1f bytes per file byte for files ≥ 1 KB), %d ms in all (%d ms writing files)%n",
                reader, o.accepted() + o.refused(), o.accepted(), o.refused(), o.maxNanos() / 1e6, o.maxAllocBytes() >> 10, o.maxAllocPerByte(),
                (System.nanoTime() - t0) / 1_000_000, o.writeNanos() / 1_000_000);
    }

    static final ModelConfig LLAMA = ModelConfig.llama("fz", 16, 32, 2, 2, 40, 8);
    static final ModelConfig QWEN = new ModelConfig("fq", 16, 32, 2, 4, 2, 8, 40, 8, 1e6f, RopeStyle.HALF, true, false, 1e-6f, 1f);

    @Test
    void milBlob() throws Exception {
        List<byte[]> bases = List.of(
                MilBlob.write(List.of(DType.FP16, DType.INT8, DType.FP32), List.of(new byte[64], new byte[] {1, 2, 3}, new byte[16])),
                ane4j.mil.MaderixBlobsTest.benchBlob(new byte[][] {new byte[128], new byte[128]}, 0x08));
        // what the two bases' BLOBFILE literals declare: [64, 192, 320] (MilBlob.offsets(64, 3, 16)); maderix's chunks at 64 + i·(64 + 128)
        List<List<MilBlob.Declared>> declared = List.of(
                List.of(new MilBlob.Declared(64, DType.FP16, 64), new MilBlob.Declared(192, DType.INT8, 3), new MilBlob.Declared(320, DType.FP32, 16)),
                List.of(new MilBlob.Declared(64, DType.FP16, 128), new MilBlob.Declared(256, DType.FP16, 128)));
        Path f = dir.resolve("weight.bin");
        long t0 = System.nanoTime();
        int[] warnings = new int[1];
        var o = Fuzz.run(f, bases, CASES, 1801, 128, file -> {
            byte[] b = Files.readAllBytes(file);
            try {
                MilBlob.read(b, file.toString());
            } catch (MilException e) {
                if (!e.getMessage().startsWith("[blob] ") || e.getMessage().contains("\n")) throw new AssertionError("walk: " + e);
            }
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ); Arena a = Arena.ofConfined()) {
                var seg = ch.size() == 0 ? java.lang.foreign.MemorySegment.ofArray(new byte[0]) : ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), a);
                MilBlob.readDeclared(seg, file.toString(), declared.get(b.length > 400 ? 0 : 1), w -> {
                    assertTrue(w.startsWith("[blob] ") && !w.contains("\n"), w);
                    warnings[0]++;
                });
            }
        }, "\\[blob\\] ", 16, List.of(MilException.class));
        report("MILBlob", o, t0);
        assertTrue(o.accepted() > 100 && warnings[0] > 100, "reads, with warnings for sloppy fields: " + o.accepted() + ", " + warnings[0]);
    }

    @Test
    void llama2Bin() throws Exception {
        Path base = dir.resolve("base.bin");
        Llama2Bin.write(base, Parameters.init(LLAMA, 1));
        List<byte[]> bases = List.of(Files.readAllBytes(base));
        long t0 = System.nanoTime();
        var o = Fuzz.run(dir.resolve("m.bin"), bases, CASES, 1802, 28, Llama2Bin::read, "\\[llama2.bin\\] ", 8, List.of(ModelFormatException.class));
        report("llama2.bin", o, t0);
        assertTrue(o.accepted() > 100, "flips in the weights still read: " + o.accepted());
    }

    @Test
    void tokenizerBin() throws Exception {
        List<byte[]> pieces = new ArrayList<>();
        for (String s : new String[] {"<unk>", "<s>", "</s>", " ", "a", "b", "ab", " ab", "é", "the", " the", "<0x0A>"}) pieces.add(s.getBytes(StandardCharsets.UTF_8));
        float[] scores = new float[pieces.size()];
        for (int i = 0; i < scores.length; i++) scores[i] = -i;
        Path base = dir.resolve("base.tok");
        new Tokenizer(pieces, scores).write(base);
        long t0 = System.nanoTime();
        var o = Fuzz.run(dir.resolve("tokenizer.bin"), List.of(Files.readAllBytes(base)), CASES, 1803, 16, file -> {
            Tokenizer t = Tokenizer.read(file);
            t.decode(t.encode("the abé\n", true, true)); // whatever was read must also work
        }, "\\[tokenizer\\] ", 64, List.of(ModelFormatException.class));
        report("tokenizer.bin", o, t0);
    }

    @Test
    void safetensors() throws Exception {
        List<byte[]> bases = new ArrayList<>();
        for (var c : new ModelConfig[] {LLAMA.withName("fz").withSeqLen(8), QWEN})
            for (var dt : new Safetensors.DType[] {Safetensors.DType.F32, Safetensors.DType.F16}) {
                Path base = dir.resolve("base.safetensors");
                Safetensors.write(base, Parameters.init(c, 2), dt);
                bases.add(Files.readAllBytes(base));
            }
        long t0 = System.nanoTime();
        // the JSON header is the first ~2 KB: aim the mutations there
        var o = Fuzz.run(dir.resolve("m.safetensors"), bases, CASES, 1804, 2048, Safetensors::read, "\\[safetensors\\] ", 8,
                List.of(ModelFormatException.class));
        report("safetensors", o, t0);
    }

    @Test
    void npy() throws Exception {
        TensorType t = TensorType.of(DType.FP32, 1, 4, 1, 3);
        Path base = dir.resolve("base.npy");
        Npy.write(base, TensorBuffer.random(t, 3, 1f));
        List<byte[]> bases = new ArrayList<>(List.of(Files.readAllBytes(base)));
        // a version 2.0 and a 3.0 header of the same array
        byte[] v1 = bases.get(0);
        for (int major : new int[] {2, 3}) {
            byte[] b = new byte[v1.length + 2];
            System.arraycopy(v1, 0, b, 0, 8);
            b[6] = (byte) major;
            int hlen = (v1[8] & 0xFF) | (v1[9] & 0xFF) << 8;
            java.nio.ByteBuffer.wrap(b).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(8, hlen);
            System.arraycopy(v1, 10, b, 12, v1.length - 10);
            bases.add(b);
        }
        long t0 = System.nanoTime();
        var o = Fuzz.run(dir.resolve("x.npy"), bases, CASES, 1805, 128, file -> Npy.read(file, t, "x"), "\\[npy\\] ", 16,
                List.of(CliException.class));
        report(".npy", o, t0);
        assertTrue(o.accepted() > 100, "flips in the data still read: " + o.accepted());
    }
}
