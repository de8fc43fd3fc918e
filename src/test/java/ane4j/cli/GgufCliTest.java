package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.Gguf;
import ane4j.model.GgufWriter;
import ane4j.model.Llama2Bin;
import ane4j.model.Tokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code generate} and {@code export} take a GGUF file as --model, with the tokenizer it carries. */
class GgufCliTest {
    @TempDir Path tmp;

    @Test
    void generateAndExportFromAGgufFileWithItsOwnTokenizer() throws Exception {
        Path bin = Path.of(GenerateCommandTest.MODEL), tok = Path.of(GenerateCommandTest.TOKENIZER);
        Path gguf = GgufWriter.model(Llama2Bin.read(bin), "llama", Gguf.Type.F32, Tokenizer.read(tok)).write(tmp.resolve("tiny.gguf"));
        var want = ExportCommandTest.run("generate", "--model", bin.toString(), "--tokenizer", tok.toString(), "--prompt", "cab", "--temperature", "0", "--tokens", "12");
        assertEquals(0, want.code(), want.err());
        var got = ExportCommandTest.run("generate", "--model", gguf.toString(), "--prompt", "cab", "--temperature", "0", "--tokens", "12");
        assertEquals(0, got.code(), got.err());
        assertEquals(want.out(), got.out(), "the GGUF's own tokenizer and weights give run.c's greedy text");
        // export to a Hugging Face folder: the weights and the tokenizer go along, and generate gives the same text from it
        Path out = tmp.resolve("hf");
        var e = ExportCommandTest.run("export", "--model", gguf.toString(), "--format", "safetensors", "--out", out.toString());
        assertEquals(0, e.code(), e.err());
        assertTrue(Files.isRegularFile(out.resolve("model.safetensors")) && Files.isRegularFile(out.resolve("tokenizer.bin")), e.out() + e.err());
        var again = ExportCommandTest.run("generate", "--model", out.toString(), "--prompt", "cab", "--temperature", "0", "--tokens", "12");
        assertEquals(want.out(), again.out(), again.err());
        // a file that is not GGUF inside: one line
        Path bad = Files.writeString(tmp.resolve("bad.gguf"), "not a gguf");
        var b = ExportCommandTest.run("generate", "--model", bad.toString(), "--prompt", "x");
        assertTrue(b.code() != 0 && b.err().startsWith("ane4j generate: [gguf] bad.gguf: no GGUF magic") && b.err().strip().lines().count() == 1, b.err());
    }
}
