package ane4j.cli;

import static org.junit.jupiter.api.Assertions.*;

import ane4j.mil.MilParser;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ane4j mil check|fmt} on the programs under examples/. */
class MilCommandTest {
    record Result(int code, String out, String err) {}

    static Result run(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void checkPrintsASummary() {
        Result r = run("mil", "check", "examples/a4-dynamic-matmul.mil");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().startsWith("examples/a4-dynamic-matmul.mil: ok\n"), r.out());
        assertTrue(r.out().contains("program(1.3), short scalars (M3 and later), needs opset ios15"), r.out());
        assertTrue(r.out().contains("    input    x: tensor<fp16, [1, 768, 1, 1024]>\n"), r.out());
        assertTrue(r.out().contains("    output   y: tensor<fp16, [1, 768, 1, 256]>\n"), r.out());
        assertTrue(r.out().contains("    ops      16: const 8, matmul 1, reshape 3, slice_by_size 2, transpose 2"), r.out());
        assertTrue(r.out().contains("  weights    none"), r.out());
        assertEquals("", r.err());
    }

    @Test
    void checkReadsAndVerifiesWeights() {
        Result r = run("mil", "check", "examples/a1-conv.mil");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("program(1.0), verbose scalars (M1/M2)"), r.out());
        assertTrue(r.out().contains("@model_path/weights/weight.bin"), r.out());
        assertTrue(r.out().contains(": 1 blob, 512 bytes, checked"), r.out());
        Result skipped = run("mil", "check", "examples/a1-conv.mil", "--no-weights");
        assertTrue(skipped.out().contains("not read (--no-weights)"), skipped.out());
    }

    @Test
    void missingWeightsAreAnError(@TempDir Path dir) {
        Result r = run("mil", "check", "examples/a1-conv.mil", "--weights", dir.toString());
        assertEquals(1, r.code());
        assertTrue(r.err().matches("examples/a1-conv\\.mil:\\d+:\\d+: \\[blob\\] weight file .*weight\\.bin not found .*\\n"), r.err());
    }

    @Test
    void brokenProgramGivesOneLineErrorAndExitCode1() {
        Result r = run("mil", "check", "examples/broken.mil");
        assertEquals(1, r.code());
        assertEquals("examples/broken.mil:7:9: [matmul] s: declared tensor<fp16, [1, 12, 256, 64]> but inferred tensor<fp16, [1, 12, 256, 256]>\n", r.err());
        assertEquals("", r.out());
    }

    @Test
    void fmtPrintsCanonicalTextThatChecksAgain(@TempDir Path dir) throws IOException {
        Result r = run("mil", "fmt", "examples/qkt-maderix-style.mil");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("tensor<fp16, [1, 12, 256, 256]> sc1 = matmul(transpose_x = bF, transpose_y = bool(true), x = q, y = k)[name = string(\"mm1\")];"), r.out());
        assertEquals(MilParser.parse(Files.readString(Path.of("examples/qkt-maderix-style.mil"))), MilParser.parse(r.out()));
        Result v16 = run("mil", "fmt", "examples/qkt-maderix-style.mil", "--dialect", "ios16");
        assertTrue(v16.out().startsWith("program(1.0)\n"), v16.out());
        assertTrue(v16.out().contains("func main<ios16>"), v16.out());
        Path f = dir.resolve("canon.mil");
        Files.writeString(f, v16.out());
        assertEquals(0, run("mil", "check", f.toString()).code());
    }

    @Test
    void usageErrors() {
        assertEquals(1, run("mil").code());
        Result r = run("mil", "check", "does-not-exist.mil");
        assertEquals(1, r.code());
        assertTrue(r.err().startsWith("ane4j mil: cannot read does-not-exist.mil: no such file"), r.err());
        assertEquals(1, run("mil", "fmt", "examples/a1-conv.mil", "--dialect", "ios99").code());
        assertEquals(1, run("mil", "check", "examples/a1-conv.mil", "--bogus").code());
        assertTrue(run("help").out().contains("mil check FILE.mil"));
    }

    // issue 18 row 17: version and dialect mismatches are errors in check as in fmt; non-UTF-8 text names the byte
    @Test
    void versionAndDialectMismatchesAreErrorsInCheckAndFmt(@TempDir Path dir) throws IOException {
        Path v99 = dir.resolve("v99.mil");
        Files.writeString(v99, Files.readString(Path.of("examples/a4-dynamic-matmul.mil")).replace("program(1.3)", "program(9.9)"));
        Path mixed = dir.resolve("mixed.mil");
        Files.writeString(mixed, Files.readString(Path.of("examples/a4-dynamic-matmul.mil")).replace("program(1.3)", "program(1.0)"));
        for (String sub : new String[] {"check", "fmt"}) {
            Result r = run("mil", sub, v99.toString());
            assertEquals(1, r.code(), r.out());
            assertTrue(r.err().matches(".*v99\\.mil:\\d+:\\d+: \\[mil\\] program version 9\\.9 is unknown; write program\\(1\\.3\\) .*\\n"), r.err());
            Result m = run("mil", sub, mixed.toString());
            assertEquals(1, m.code(), m.out());
            assertTrue(m.err().matches(".*mixed\\.mil:\\d+:\\d+: \\[mil\\] function main is declared <ios18> but program\\(1\\.0\\) is the ios16 dialect; write program\\(1\\.3\\) or declare <ios16>\\n"), m.err());
        }
    }

    @Test
    void nonUtf8TextNamesTheByteOffset(@TempDir Path dir) throws IOException {
        Path f = dir.resolve("latin1.mil");
        byte[] head = "program(1.3)\n// caf".getBytes(StandardCharsets.UTF_8);
        byte[] bytes = java.util.Arrays.copyOf(head, head.length + 2);
        bytes[head.length] = (byte) 0xE9;
        bytes[head.length + 1] = '\n';
        Files.write(f, bytes);
        Result r = run("mil", "check", f.toString());
        assertEquals(1, r.code());
        assertEquals("ane4j mil: [mil] " + f + ": byte " + head.length + " (0xE9) is not UTF-8; MIL text is UTF-8, re-save the file as UTF-8\n", r.err());
    }

    // issue 18 row 14: a .mil over 2 GiB (sparse) or over what the heap can parse is refused before it is read (was OutOfMemoryError)
    @Test
    void hugeMilFilesAreRefusedBeforeReading(@TempDir Path dir) throws IOException {
        Path f = dir.resolve("huge.mil");
        try (var raf = new java.io.RandomAccessFile(f.toFile(), "rw")) {
            raf.setLength(5L << 29);
        }
        Result r = run("mil", "check", f.toString());
        assertEquals(1, r.code());
        assertEquals("ane4j mil: [mil] " + f + " is 2684354560 bytes; MIL text over 2 GiB cannot be parsed: move large constants into BLOBFILE weight files\n", r.err());
        try (var raf = new java.io.RandomAccessFile(f.toFile(), "rw")) {
            raf.setLength(Runtime.getRuntime().maxMemory() / 40 + 1);
        }
        r = run("mil", "fmt", f.toString());
        assertEquals(1, r.code());
        assertTrue(r.err().matches("ane4j mil: \\[mil\\] .*huge\\.mil is \\d+ bytes, parsing it needs about \\d+ MB of heap but the JVM has \\d+ MB: raise -Xmx \\(ANE4J_JAVA_OPTS\\).*\\n"), r.err());
    }
}
