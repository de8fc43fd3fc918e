package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.HfExport;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.Safetensors;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 14 point 2 through the CLI: --tokenizer wherever it is, a tokenizer.json, text and JSON-lines data, Hugging Face folders. */
class InputsCliTest {
    @TempDir Path tmp;
    static final Path QWEN_TOKENIZER = Path.of("src/test/resources/tokenizer/qwen3-4k/tokenizer.json").toAbsolutePath();
    // a small Llama over the 4282 ids of the Qwen3 tokenizer cut, padded to 4352 as Qwen pads its vocabulary
    static final ModelConfig MINI = ModelConfig.llama("mini", 32, 64, 1, 2, 4352, 16);

    private Path jsonl() throws Exception {
        Path f = tmp.resolve("data/train.jsonl");
        Files.createDirectories(f.getParent());
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 12; i++) sb.append("{\"prompt\": \"What is ").append(i).append(" plus ").append(i).append("?\", \"completion\": \" It is ").append(2 * i).append(".\"}\n");
        Files.writeString(f, sb);
        return f;
    }

    private static boolean oneLine(String s) { return s.strip().lines().count() == 1; }

    @Test
    void trainsOnJsonLinesWithATokenizerJsonNamedAnywhere() throws Exception {
        Path init = tmp.resolve("mini.bin");
        ane4j.model.Llama2Bin.write(init, Parameters.init(MINI, 3));
        // the supervised worker finds the tokenizer as the in-process trainer does
        Path worker = tmp.resolve("worker");
        var w = RunFolderTest.train("--init", init.toString(), "--data", jsonl().toString(), "--tokenizer", QWEN_TOKENIZER.toString(), "--steps", "2",
                "--run-dir", worker.toString(), "--backend", "ref", "--heap", "256m");
        assertEquals(0, w.code(), w.all());
        assertTrue(w.out().contains("sample: Once upon a time") && Files.isRegularFile(worker.resolve("export/hf/tokenizer.json")), w.out());
        Path run = tmp.resolve("run");
        var r = RunFolderTest.train("--init", init.toString(), "--data", jsonl().toString(), "--tokenizer", QWEN_TOKENIZER.toString(), "--steps", "2",
                "--run-dir", run.toString(), "--backend", "ref", "--in-process");
        assertEquals(0, r.code(), r.all());
        assertTrue(Files.readString(run.resolve("run.txt")).contains("tokenizer = " + QWEN_TOKENIZER), Files.readString(run.resolve("run.txt")));
        assertTrue(r.out().contains("sample: Once upon a time"), r.out());
        // the exported folder carries the tokenizer.json, and generate finds it there
        Path hf = run.resolve("export/hf");
        assertTrue(Files.isRegularFile(hf.resolve("tokenizer.json")), r.out());
        var g = ExportCommandTest.run("generate", "--model", hf.toString(), "--prompt", "What is 3", "--temperature", "0", "--tokens", "3");
        assertEquals(0, g.code(), g.err());
        assertTrue(g.out().startsWith("What is 3"), g.out());
    }

    @Test
    void generateReadsAHuggingFaceFolderWithItsTokenizerJson() throws Exception {
        Path hf = tmp.resolve("hf");
        HfExport.write(hf, Parameters.init(MINI, 5), Safetensors.DType.BF16);
        Files.copy(QWEN_TOKENIZER, hf.resolve("tokenizer.json"));
        var g = ExportCommandTest.run("generate", "--model", hf.toString(), "--prompt", "Hi 🤗", "--temperature", "0", "--tokens", "4");
        assertEquals(0, g.code(), g.err());
        assertTrue(g.out().startsWith("Hi 🤗"), g.out());
        assertTrue(g.err().contains("[generate] 4 tokens in"), g.err());
    }

    @Test
    void badTokenizerAndTextInputsAreOneLineEach() throws Exception {
        Path run = tmp.resolve("run");
        var r = RunFolderTest.train("--tokenizer", QWEN_TOKENIZER.toString(), "--steps", "2", "--run-dir", run.toString(), "--backend", "ref", "--in-process");
        assertEquals(1, r.code(), r.all());
        assertTrue(r.err().contains("[tokenizer] --tokenizer " + QWEN_TOKENIZER + " without --data"), r.err());
        assertTrue(oneLine(r.err()), r.err());

        Path init = tmp.resolve("mini.bin");
        ane4j.model.Llama2Bin.write(init, Parameters.init(MINI, 3));
        r = RunFolderTest.train("--init", init.toString(), "--data", jsonl().toString(), "--steps", "2", "--run-dir", run.toString(), "--backend", "ref", "--in-process");
        assertEquals(1, r.code(), r.all());
        assertTrue(r.err().contains("[data] train.jsonl is text, tokenized as it is read: give --tokenizer FILE"), r.err());
        assertTrue(oneLine(r.err()), r.err());

        r = RunFolderTest.train("--init", init.toString(), "--data", jsonl().toString(), "--tokenizer", tmp.resolve("nope.json").toString(), "--steps", "2",
                "--run-dir", run.toString(), "--backend", "ref", "--in-process");
        assertEquals(1, r.code(), r.all());
        assertTrue(r.err().contains("[tokenizer] " + tmp.resolve("nope.json") + ": no such file"), r.err());
        assertTrue(oneLine(r.err()), r.err());

        var g = ExportCommandTest.run("generate", "--model", init.toString(), "--tokenizer", tmp.toString(), "--prompt", "x");
        assertEquals(1, g.code(), g.err());
        assertTrue(g.err().contains("[tokenizer] " + tmp + " is a folder without tokenizer.json or tokenizer.bin"), g.err());
        assertFalse(run.resolve("metrics.jsonl").toFile().length() > 0);
    }
}
