package ane4j.cli;

import static org.junit.jupiter.api.Assertions.*;

import ane4j.mil.DType;
import ane4j.mil.Dialect;
import ane4j.mil.Mil;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ane4j mil check FILE --chip m1…m5}: every violation with line:col, limit and source; exit 1 on an error. */
class MilCheckChipTest {
    /** x (1,8,256,128) → reshape (1,8,1,32768): over the 16384 axis cap of M1–M3, within M4/M5's 65536. */
    static Program flatten() {
        return Mil.program().function("main", f -> {
            Value x = f.input("x", TensorType.of(DType.FP16, 1, 8, 256, 128));
            f.output(f.named("y", f.reshape(f.mul(f.reshape(x, 1, 8, 1, 32768), 2f), 1, 8, 256, 128)));
        }).build();
    }

    @Test
    void listsTheAxisCapWithItsPositionLimitAndSourceOnM3ButNotOnM4(@TempDir Path dir) throws IOException {
        String text = MilWriter.write(flatten(), Dialect.IOS18);
        Path file = dir.resolve("flat.mil");
        Files.writeString(file, text);
        // where the first over-cap value is defined, found independently of the checker
        List<String> lines = text.lines().toList();
        int line = 0, col = 0;
        for (int i = 0; i < lines.size() && line == 0; i++)
            if (lines.get(i).contains("32768]> reshape_")) { line = i + 1; col = lines.get(i).indexOf("reshape_") + 1; }
        assertTrue(line > 0, text);

        var r = MilCommandTest.run("mil", "check", file.toString(), "--chip", "m3");
        assertEquals(1, r.code(), r.out() + r.err());
        String expected = file + ":" + line + ":" + col + ": error [axis-cap] reshape_";
        assertTrue(r.out().contains(expected), "expected '" + expected + "' in\n" + r.out());
        assertTrue(r.out().contains("axis 3 is 32768 (limit 16384 on M3; source: ANEForge aneforge/_targets.py"), r.out());
        assertTrue(r.out().contains("M3: 2 errors"), r.out());   // the reshape and the mul on it

        var m4 = MilCommandTest.run("mil", "check", file.toString(), "--chip", "m4");
        assertEquals(0, m4.code(), m4.out());
        assertFalse(m4.out().contains("error ["), m4.out());
        assertTrue(m4.out().contains("M4: 0 errors"), m4.out());
    }

    @Test
    void castIsAnErrorOnM1AndM2Only(@TempDir Path dir) throws IOException {
        Program p = Mil.program().function("main", f -> {
            Value x = f.input("x", TensorType.of(DType.FP32, 1, 64, 1, 256));
            f.output(f.named("y", f.cast(f.mul(f.cast(x, DType.FP16), 2f), DType.FP32)));
        }).build();
        Path file = dir.resolve("cast.mil");
        Files.writeString(file, MilWriter.write(p, Dialect.IOS18));
        for (String chip : List.of("m1", "m2")) {
            var r = MilCommandTest.run("mil", "check", file.toString(), "--chip", chip);
            assertEquals(1, r.code(), r.out());
            assertTrue(r.out().contains("error [cast]") && r.out().contains("maderix/ANE PR #6"), r.out());
        }
        var m3 = MilCommandTest.run("mil", "check", file.toString(), "--chip", "m3");
        assertEquals(0, m3.code(), m3.out());
        assertFalse(m3.out().contains("[cast]"), m3.out());
    }

    @Test
    void anUnknownChipIsOneLine() {
        var r = MilCommandTest.run("mil", "check", "examples/a4-dynamic-matmul.mil", "--chip", "m9");
        assertNotEquals(0, r.code());
        assertTrue(r.err().contains("unknown chip 'm9'; use m1, m2, m3, m4 or m5"), r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
    }
}
