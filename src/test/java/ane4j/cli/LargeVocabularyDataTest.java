package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.Llama2Bin;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.TokenShard;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 14 point 2: a vocabulary over 65536 (qwen3's is 151936) trains from a uint32 token file ({@code --data-dtype uint32}). */
class LargeVocabularyDataTest {
    @TempDir Path tmp;

    // the smallest model with a vocabulary uint16 cannot index: ids up to 69999
    private static final ModelConfig WIDE = ModelConfig.llama("wide", 32, 64, 1, 2, 70_000, 8);

    private Path wideBin() {
        Path bin = tmp.resolve("wide.bin");
        Llama2Bin.write(bin, Parameters.init(WIDE, 3));
        return bin;
    }

    private Path uint32Tokens() {
        int[] t = new int[200];
        for (int i = 0; i < t.length; i++) t[i] = 65_000 + (i * 37) % 5_000;   // many ids above 65535
        Path shard = tmp.resolve("tok.bin");
        TokenShard.write(shard, t, TokenShard.Dtype.UINT32);
        return shard;
    }

    private static boolean oneLine(String s) { return s.strip().lines().count() == 1; }

    @Test
    void uint32TokenFileTrainsAndTheRecordKeepsItsDtype() throws java.io.IOException {
        Path run = tmp.resolve("run");
        var r = RunFolderTest.train("--init", wideBin().toString(), "--data", uint32Tokens().toString(), "--data-dtype", "uint32", "--steps", "2",
                "--run-dir", run.toString(), "--backend", "ref", "--in-process");
        assertEquals(0, r.code(), r.all());
        assertTrue(Files.readString(run.resolve("run.txt")).contains("dataDtype = uint32"));
    }

    @Test
    void withoutTheFlagTheVocabularyIsRefusedInOneLineNamingIt() {
        var r = RunFolderTest.train("--init", wideBin().toString(), "--data", uint32Tokens().toString(), "--steps", "2",
                "--run-dir", tmp.resolve("run").toString(), "--backend", "ref", "--in-process");
        assertEquals(1, r.code(), r.all());
        assertTrue(r.err().contains("[tokens] tok.bin: vocabSize 70000 does not fit uint16 token files (max 65536); write the tokens as uint32 and pass --data-dtype uint32"), r.err());
        assertTrue(oneLine(r.err()), r.err());
        assertTrue(Files.notExists(tmp.resolve("run")), "a run that never started leaves no folder");
    }

    @Test
    void anUnknownDtypeIsRefusedInOneLine() {
        var r = RunFolderTest.train("--init", wideBin().toString(), "--data", uint32Tokens().toString(), "--data-dtype", "int8", "--steps", "2",
                "--run-dir", tmp.resolve("run").toString(), "--backend", "ref", "--in-process");
        assertEquals(1, r.code(), r.all());
        assertTrue(r.err().contains("[train] dataDtype = 'int8' is not one of uint16, uint32"), r.err());
    }
}
