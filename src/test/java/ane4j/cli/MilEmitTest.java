package ane4j.cli;

import static org.junit.jupiter.api.Assertions.*;

import ane4j.mil.MilParser;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ane4j mil emit}: the training kernels as the compiler would get them, weight files counted. */
class MilEmitTest {
    @TempDir Path tmp;

    static long weightFiles(Path kernelDir) throws Exception {
        Path w = kernelDir.resolve("weights");
        if (!Files.isDirectory(w)) return 0;
        try (Stream<Path> s = Files.list(w)) { return s.count(); }
    }

    @Test
    void everyPresetsDynamicKernelsHaveNoWeightFileAndStaticOnes27HaveOne() throws Exception {
        for (String preset : List.of("tiny", "stories15m", "stories42m", "stories110m", "qwen3-0.6b")) {
            Path dyn = tmp.resolve(preset + "-dyn");
            MilCommandTest.Result r = MilCommandTest.run("mil", "emit", "--model", preset, "--os", "27", "--out", dyn.toString());
            assertEquals(0, r.code(), r.err());
            assertTrue(r.out().contains(": 10 kernels, 0 weight files in all, at most 0 per kernel"), r.out());
            for (String k : List.of("sdpaFwd", "sdpaBwd1", "ffnFused")) {
                Path mil = dyn.resolve(k).resolve("model.mil");
                assertTrue(Files.isRegularFile(mil), mil.toString());
                assertEquals(0, weightFiles(dyn.resolve(k)), preset + " " + k);
                MilParser.parse(Files.readString(mil), dyn.resolve(k));   // what was written parses back
            }
        }
        Path st = tmp.resolve("static27");
        MilCommandTest.Result r = MilCommandTest.run("mil", "emit", "--model", "tiny", "--weights", "static", "--os", "27", "--out", st.toString());
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("at most 1 per kernel"), r.out());
        assertEquals(1, weightFiles(st.resolve("ffnFused")));
        assertTrue(Files.isRegularFile(st.resolve("ffnFused/weights/weight.bin")));
        // the packed file parses back: every BLOBFILE offset names a record in it
        MilParser.parse(Files.readString(st.resolve("ffnFused/model.mil")), st.resolve("ffnFused"));
        Path st26 = tmp.resolve("static26");
        r = MilCommandTest.run("mil", "emit", "--model", "tiny", "--weights", "static", "--out", st26.toString());
        assertEquals(3, weightFiles(st26.resolve("ffnFused")), "macOS 26: one file per weight (w1T, w3T, w2)");
    }

    @Test
    void badOptionsAreOneLine() {
        MilCommandTest.Result r = MilCommandTest.run("mil", "emit", "--model", "tiny", "--weights", "baked", "--out", tmp.toString());
        assertNotEquals(0, r.code());
        assertTrue(r.err().contains("--weights baked is not dynamic or static"), r.err());
        r = MilCommandTest.run("mil", "emit", "--model", "nosuch", "--out", tmp.toString());
        assertNotEquals(0, r.code());
        assertEquals(1, r.err().strip().lines().count(), r.err());
    }
}
