package ane4j.cli;

import ane4j.backend.TensorBuffer;
import ane4j.programs.AcceptancePrograms;
import ane4j.mil.DType;
import ane4j.mil.Dialect;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

class MilRunCommandTest {
    @TempDir Path dir;

    @Test
    void runsA1FromTextWithWeightsAndNpyFiles() throws Exception {
        int c = 8, s = 4;
        float[] w = new float[c * c];
        for (int i = 0; i < c; i++) w[i * c + i] = 2f;
        Program p = AcceptancePrograms.a1Conv(c, s, w);
        Files.writeString(dir.resolve("a1.mil"), MilWriter.write(p, Dialect.IOS18));
        p.weights().writeTo(dir);
        float[] x = new float[c * s];
        for (int i = 0; i < x.length; i++) x[i] = i * 0.5f - 3;
        Npy.write(dir.resolve("x.npy"), TensorBuffer.of(TensorType.of(DType.FP32, 1, c, 1, s), x));
        String in = p.main().inputs().get(0).name(), outName = p.main().outputs().get(0).name();
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        System.setProperty("ane4j.backend", "ref");
        int rc;
        try {
            rc = Main.run(new String[] {"mil", "run", dir.resolve("a1.mil").toString(), "--input", in + "=" + dir.resolve("x.npy"),
                    "--output", dir.resolve("out").toString()}, new PrintStream(out), new PrintStream(err));
        } finally {
            System.clearProperty("ane4j.backend");
        }
        assertEquals(0, rc, err.toString());
        TensorBuffer y = Npy.read(dir.resolve("out").resolve(outName + ".npy"), TensorType.of(DType.FP32, 1, c, 1, s), outName);
        float[] got = y.toFloatArray();
        for (int i = 0; i < x.length; i++) assertEquals(2 * x[i], got[i]);
    }

    @Test
    void npyErrorsNameTheProblem() throws Exception {
        TensorType t = TensorType.of(DType.FP16, 2, 3);
        Path f = dir.resolve("a.npy");
        Npy.write(f, TensorBuffer.allocate(DType.FP32, 2, 3));
        var e = assertThrows(CliException.class, () -> Npy.read(f, t, "x"));
        assertTrue(e.getMessage().contains("dtype '<f4'") && e.getMessage().contains("float16"), e.getMessage());
        Npy.write(f, TensorBuffer.allocate(DType.FP16, 3, 2));
        e = assertThrows(CliException.class, () -> Npy.read(f, t, "x"));
        assertTrue(e.getMessage().contains("shape [3, 2]"), e.getMessage());
        byte[] b = Files.readAllBytes(f);
        String s = new String(b, StandardCharsets.ISO_8859_1).replace("'fortran_order': False", "'fortran_order': True ");
        Files.write(f, s.getBytes(StandardCharsets.ISO_8859_1));
        e = assertThrows(CliException.class, () -> Npy.read(f, TensorType.of(DType.FP16, 3, 2), "x"));
        assertTrue(e.getMessage().contains("Fortran order"), e.getMessage());
    }

    @Test
    void npyRoundTripsFp16Bits() {
        Path f = dir.resolve("h.npy");
        TensorBuffer a = TensorBuffer.of(TensorType.of(DType.FP16, 3), 1.5f, -65504f, 6e-8f);
        Npy.write(f, a);
        assertArrayEquals(a.toFloatArray(), Npy.read(f, a.type(), "h").toFloatArray());
    }

    static byte[] npy(int major, String dict) {
        byte[] h = dict.getBytes(StandardCharsets.ISO_8859_1);
        int pre = major == 1 ? 10 : 12;
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(pre + h.length).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', (byte) major, 0});
        if (major == 1) b.putShort((short) h.length); else b.putInt(h.length);
        return b.put(h).array();
    }

    static String runA1(Path dir, Path x) throws Exception {
        Program p = AcceptancePrograms.a1Conv(8, 4, new float[64]);
        Files.writeString(dir.resolve("a1.mil"), MilWriter.write(p, Dialect.IOS18));
        p.weights().writeTo(dir);
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        System.setProperty("ane4j.backend", "ref");
        try {
            int rc = Main.run(new String[] {"mil", "run", dir.resolve("a1.mil").toString(), "--input", p.main().inputs().get(0).name() + "=" + x,
                    "--output", dir.resolve("out").toString()}, new PrintStream(out), new PrintStream(err));
            assertEquals(1, rc, out.toString());
        } finally {
            System.clearProperty("ane4j.backend");
        }
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void malformedMilIsOneLineNamingFileLineAndColumn() throws Exception {
        Path f = dir.resolve("bad.mil");
        Files.writeString(f, "program(1.3)\n{\n  func main<ios18>(tensor<fp32, [1, 4]> x) {\n    tensor<fp32, [1, 4]> y = relux(x = x)[name = string(\"y\")];\n  } -> (y);\n}\n");
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int rc = Main.run(new String[] {"mil", "run", f.toString(), "--output", dir.resolve("o").toString()}, new PrintStream(out), new PrintStream(err));
        String e = err.toString(StandardCharsets.UTF_8);
        assertEquals(1, rc, e);
        assertEquals(1, e.lines().count(), e);
        assertTrue(e.contains(f + ":4:") && e.contains("relux"), e);
    }

    // issue 18 row 16: corrupt headers give one line naming the file, the field and the fix
    @Test
    void corruptNpyHeadersAreOneLineErrorsThroughTheCli() throws Exception {
        Path x = dir.resolve("x.npy");
        String[][] cases = {
                // the three of the issue: a short dict (was StringIndexOutOfBounds), a Python 2 long (was NumberFormat "4L"), version 4
                {"1", "{'descr': '<f4', 'fortran_order': False, 'shape': (", "header byte 61: expected a non-negative dimension, found the end of the header"},
                {"1", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 8, 1, 4L), }", "header byte 71: expected ',' or ')' in the shape, found 'L), }'"},
                {"4", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 8, 1, 4), }", "format version 4.0 is unknown (numpy writes 1.0, 2.0 and 3.0)"},
                {"2", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 8, 1, 99999999999), }", "expected a dimension below 2^31"},
                {"1", "{'descr': '>f4', 'fortran_order': False, 'shape': (1, 8, 1, 4), }", "has dtype '>f4' but input"},
                {"1", "{'descr': '<f4', 'shape': (1, 8, 1, 4), }", "header has no 'fortran_order' True/False"},
                {"1", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 8, 1, 4), }", "0 data bytes after the header, shape [1, 8, 1, 4] of '<f4' needs 128 (truncated file)"},
        };
        for (String[] c : cases) {
            Files.write(x, npy(Integer.parseInt(c[0]), c[1]));
            String err = runA1(dir, x);
            assertTrue(err.startsWith("ane4j mil: [npy] " + x + ": ") || err.startsWith("ane4j mil: [npy] " + x + " has"), err);
            assertTrue(err.contains(c[2]), c[2] + " not in " + err);
            assertEquals(1, err.lines().count(), err);
        }
        byte[] huge = npy(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 8, 1, 4), }");
        java.nio.ByteBuffer.wrap(huge).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(8, Integer.MAX_VALUE);
        Files.write(x, huge);
        assertTrue(runA1(dir, x).contains("header length 2147483647 is over 65536 bytes"));
    }

    @Test
    void npyReadsVersion2And3Headers() throws Exception {
        Path f = dir.resolve("v3.npy");
        for (int major : new int[] {2, 3}) {
            byte[] h = npy(major, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (3,)}      \n");
            byte[] data = new byte[12];
            java.nio.ByteBuffer.wrap(data).order(java.nio.ByteOrder.LITTLE_ENDIAN).putFloat(0, 1.5f).putFloat(4, -2f).putFloat(8, 3f);
            byte[] all = java.util.Arrays.copyOf(h, h.length + 12);
            System.arraycopy(data, 0, all, h.length, 12);
            Files.write(f, all);
            assertArrayEquals(new float[] {1.5f, -2f, 3f}, Npy.read(f, TensorType.of(DType.FP32, 3), "x").toFloatArray());
        }
    }

    // issue 18 row 14: a .npy over 2 GiB (a sparse file) reads through a mapping, no 2 GiB array
    @Test
    void npyOver2GiBIsMappedNotReadIntoAnArray() throws Exception {
        Path f = dir.resolve("big.npy");
        TensorType t = TensorType.of(DType.FP32, 1, 1, 1 << 15, 1 << 14 + 1); // 2^30 floats = 4 GiB
        byte[] h = npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 32768, 32768), }");
        try (var raf = new java.io.RandomAccessFile(f.toFile(), "rw")) {
            raf.write(h);
            raf.setLength(h.length + t.byteSize() - 1);
        }
        var e = assertThrows(CliException.class, () -> Npy.read(f, t, "x"));
        assertTrue(e.getMessage().contains("4294967295 data bytes after the header, shape [1, 1, 32768, 32768] of '<f4' needs 4294967296 (truncated file)"), e.getMessage());
    }

    // issue 18 row 14: an op result over what the reference backend may use is refused when the kernel is planned, before any work
    // (it was a 16 s, 6.3 GB computation that failed writing the result: now the result streams out, and a limit refuses it up front)
    @Test
    void opResultsOverTheMemoryLimitAreRefusedBeforeAnyWork() throws Exception {
        Files.writeString(dir.resolve("outer.mil"), """
                program(1.3)
                {
                    func main<ios18>(tensor<fp16, [1, 1, 1024, 1]> x, tensor<fp16, [1, 1, 1, 1024]> y) {
                        tensor<fp16, [1, 1, 1024, 1024]> z = matmul(x = x, y = y, transpose_x = false, transpose_y = false)[name = string("z")];
                    } -> (z);
                }
                """);
        Npy.write(dir.resolve("x.npy"), TensorBuffer.allocate(DType.FP16, 1, 1, 1024, 1));
        Npy.write(dir.resolve("y.npy"), TensorBuffer.allocate(DType.FP16, 1, 1, 1, 1024));
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        System.setProperty("ane4j.backend", "ref");
        System.setProperty("ane4j.ref.maxMemory", Long.toString(1 << 20));
        int rc;
        try {
            rc = Main.run(new String[] {"mil", "run", dir.resolve("outer.mil").toString(), "--input", "x=" + dir.resolve("x.npy"), "--input", "y=" + dir.resolve("y.npy"),
                    "--output", dir.resolve("out").toString()}, new PrintStream(out), new PrintStream(err));
        } finally {
            System.clearProperty("ane4j.backend");
            System.clearProperty("ane4j.ref.maxMemory");
        }
        assertEquals(1, rc, out.toString());
        assertEquals("ane4j mil: [ref] function main needs 4 MB of working memory (fp32; its largest tensor 4 MB) but the reference backend may use 1 MB "
                + "(the machine's memory, or -Dane4j.ref.maxMemory=BYTES); use smaller shapes\n", err.toString());
        assertFalse(Files.exists(dir.resolve("out")), "nothing ran, nothing written");
    }
}
