package ane4j.cli;

import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.TensorType;
import ane4j.train.GraphRunFixture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ane4j train --graph FILE.mil --data DIR …}: the preset runs' command and run folder (metrics.jsonl, run.json,
 * checkpoints, loss.png; a rerun with --resume continues), plus the trained parameters as .npy; bad input in one line.
 */
class GraphTrainCommandTest {
    @TempDir Path dir;

    int cli(ByteArrayOutputStream out, ByteArrayOutputStream err, String... args) {
        return Main.run(args, new PrintStream(out), new PrintStream(err));
    }

    @Test
    void trainsAGraphFromTheCommandLineAndResumes() throws Exception {
        Path graph = GraphRunFixture.write(dir);
        Path run = dir.resolve("run");
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        String[] args = {"train", "--graph", graph.toString(), "--data", dir.resolve("data").toString(), "--steps", "60", "--lr", "0.05", "--eval-every", "20",
                "--backend", "ref", "--in-process", "--run-dir", run.toString()};
        assertEquals(0, cli(out, err, args), err.toString() + out);
        String o = out.toString();
        assertTrue(o.contains("ane4j train: mlp on ref (in process), 60 steps"), o);
        assertTrue(o.contains("graph mlp.mil: 114 parameters; loss "), o);
        assertTrue(o.contains("trained w1, b1, w2, b2 → " + run.resolve("params")), o);
        List<String> lines = Files.readAllLines(run.resolve("metrics.jsonl"));
        assertEquals(60, lines.size());
        for (String f : List.of("params/w1.npy", "params/b2.npy", "loss.png", "run.json", "run.txt")) assertTrue(Files.exists(run.resolve(f)), f);
        TensorBuffer w1 = Npy.read(run.resolve("params/w1.npy"), TensorType.of(DType.FP32, 16, 4), "w1");
        assertTrue(w1.get(0) != 0f);
        double first = Double.parseDouble(lines.get(0).replaceAll(".*\"loss\":([-0-9.eE]+).*", "$1"));
        double val = Double.parseDouble(lines.get(59).replaceAll(".*\"valLoss\":([-0-9.eE]+).*", "$1"));
        assertTrue(val < first * 0.7, "validation loss " + val + " after 60 steps, first loss " + first);
        // the same folder with more steps and --resume continues from the last checkpoint
        args[6] = "80";
        String[] resume = java.util.Arrays.copyOf(args, args.length + 1);
        resume[args.length] = "--resume";
        out.reset();
        assertEquals(0, cli(out, err, resume), err.toString());
        assertEquals(80, Files.readAllLines(run.resolve("metrics.jsonl")).size());
        assertTrue(Files.readString(run.resolve("run.txt")).contains("resumed at step 60"), Files.readString(run.resolve("run.txt")));
    }

    @Test
    void badInputIsOneLine() throws Exception {
        Path graph = GraphRunFixture.write(dir);
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int rc = cli(out, err, "train", "--graph", graph.toString(), "--data", dir.resolve("data").toString(), "--params", "w1,w", "--in-process",
                "--run-dir", dir.resolve("run").toString());
        assertEquals(1, rc);
        assertEquals(1, err.toString().strip().lines().count(), err.toString());
        assertTrue(err.toString().contains("[train] params: 'w' is not an input of graph " + graph), err.toString());
        err.reset();
        rc = cli(out, err, "train", "--graph", graph.toString(), "--data", dir.resolve("data").toString(), "--model", "stories15m", "--run-dir", dir.resolve("run").toString());
        assertEquals(1, rc);
        assertEquals(1, err.toString().strip().lines().count(), err.toString());
        assertTrue(err.toString().contains("model = stories15m is a setting of the preset transformer"), err.toString());
    }
}
