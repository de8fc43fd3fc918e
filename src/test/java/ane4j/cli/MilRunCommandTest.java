package ane4j.cli;

import ane4j.backend.TensorBuffer;
import ane4j.mil.AcceptancePrograms;
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
}
