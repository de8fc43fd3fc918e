package ane4j.cli;

import ane4j.mil.Dialect;
import ane4j.mil.Mil;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static ane4j.mil.Mil.fp16;
import static ane4j.mil.Mil.int32;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ane4j mil split}: a program with a 20000-wide axis (over M1's cap of 16384) and a cast (which M1 refuses) is
 * cut into parts; {@code mil check --chip m1} passes every 'ane' part and fails the 'cpu' parts.
 */
class MilSplitCommandTest {
    @TempDir Path dir;

    @Test
    void everyAnePartPassesMilCheckOnM1() throws Exception {
        Program p = Mil.program().function("main", f -> {
            var x = f.input("x", fp16(8, 64));
            var labels = f.input("labels", int32(8));
            var w1 = f.input("w1", fp16(128, 64));
            var w2 = f.input("w2", fp16(20000, 128));
            var h = f.relu(f.linear(x, w1, null));
            f.output(f.named("loss", f.crossEntropyLabels(f.linear(h, f.reshape(f.reshape(w2, 1, 20000, 1, 128), 20000, 128), null), labels)));
        }).build();
        Path mil = dir.resolve("wide.mil");
        Files.writeString(mil, MilWriter.write(p, Dialect.IOS18));
        assertEquals(1, MilCommandTest.run("mil", "check", mil.toString(), "--chip", "m1").code(), "the program itself breaks M1 rules");
        var r = MilCommandTest.run("mil", "split", mil.toString(), "--chip", "m1", "--out", dir.resolve("parts").toString());
        assertEquals(0, r.code(), r.err());
        List<String> parts = Files.readAllLines(dir.resolve("parts/parts.txt"));
        assertTrue(parts.stream().anyMatch(l -> l.contains(" ane ")) && parts.stream().anyMatch(l -> l.contains(" cpu ")), String.join("\n", parts));
        for (String line : parts) {
            String file = line.substring(0, line.indexOf(' '));
            var check = MilCommandTest.run("mil", "check", dir.resolve("parts").resolve(file).toString(), "--chip", "m1");
            assertEquals(line.contains(" ane ") ? 0 : 1, check.code(), line + "\n" + check.out() + check.err());
        }
        // the first part starts from the program's inputs, the last one ends with its loss
        assertTrue(parts.get(parts.size() - 1).endsWith("outputs: loss"), parts.get(parts.size() - 1));
        var bad = MilCommandTest.run("mil", "split", mil.toString(), "--chip", "m9", "--out", dir.resolve("x").toString());
        assertEquals(Cli.FAILED, bad.code());
        assertEquals(1, bad.err().strip().lines().count(), bad.err());
    }
}
