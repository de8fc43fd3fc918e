package ane4j.cli;

import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.Mil;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

import static ane4j.mil.Mil.fp32;
import static ane4j.mil.Mil.int32;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code ane4j train --graph}: a MIL file, .npy data, a run folder that resumes; bad parameters in one line. */
class GraphTrainCommandTest {
    @TempDir Path dir;

    int cli(ByteArrayOutputStream out, ByteArrayOutputStream err, String... args) {
        System.setProperty("ane4j.backend", "ref");
        try {
            return Main.run(args, new PrintStream(out), new PrintStream(err));
        } finally {
            System.clearProperty("ane4j.backend");
        }
    }

    @Test
    void trainsAGraphFromTheCommandLineAndResumes() throws Exception {
        Program mlp = Mil.program().function("main", f -> {
            var x = f.input("x", fp32(8, 4));
            var labels = f.input("labels", int32(8));
            var w1 = f.input("w1", fp32(8, 4));
            var w2 = f.input("w2", fp32(2, 8));
            var b2 = f.input("b2", fp32(2));
            f.output(f.named("loss", f.crossEntropyLabels(f.linear(f.tanh(f.linear(x, w1, null)), w2, b2), labels)));
        }).build();
        Files.writeString(dir.resolve("mlp.mil"), MilWriter.write(mlp, ane4j.mil.Dialect.IOS18));
        // 64 samples: class = whether x0 + x1 > 0
        Random r = new Random(3);
        TensorBuffer x = TensorBuffer.allocate(TensorType.of(DType.FP32, 64, 4)), y = TensorBuffer.allocate(TensorType.of(DType.INT32, 64));
        for (int i = 0; i < 64; i++) {
            float s = 0;
            for (int j = 0; j < 4; j++) { float v = (float) r.nextGaussian(); x.set(i * 4 + j, v); if (j < 2) s += v; }
            y.set(i, s > 0 ? 1 : 0);
        }
        Npy.write(dir.resolve("x.npy"), x);
        Npy.write(dir.resolve("y.npy"), y);
        String[] args = {"train", "--graph", dir.resolve("mlp.mil").toString(), "--loss", "loss", "--params", "w1,w2,b2", "--data", "x=" + dir.resolve("x.npy"),
                "--data", "labels=" + dir.resolve("y.npy"), "--val", "x=" + dir.resolve("x.npy"), "--val", "labels=" + dir.resolve("y.npy"),
                "--steps", "60", "--lr", "0.05", "--run-dir", dir.resolve("run").toString()};
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        assertEquals(0, cli(out, err, args), err.toString());
        assertTrue(out.toString().contains("step 60/60"), out.toString());
        List<String> lines = Files.readAllLines(dir.resolve("run/metrics.jsonl"));
        assertEquals(60, lines.size());
        assertTrue(Files.exists(dir.resolve("run/params/w1.npy")) && Files.exists(dir.resolve("run/loss.png")));
        double first = Double.parseDouble(lines.get(0).replaceAll(".*\"loss\":([-0-9.eE]+).*", "$1"));
        double val = Double.parseDouble(lines.get(59).replaceAll(".*\"valLoss\":([-0-9.eE]+).*", "$1"));
        assertTrue(val < first * 0.6, "validation loss " + val + " after 60 steps, first loss " + first);
        // the same folder with more steps resumes from the last checkpoint
        args[args.length - 5] = "80";
        out.reset();
        assertEquals(0, cli(out, err, args), err.toString());
        assertTrue(out.toString().contains("resumed " + dir.resolve("run") + " at step 60") && out.toString().contains("step 80/80"), out.toString());
    }

    @Test
    void aParameterThatIsNotAnInputIsOneLine() throws Exception {
        Program p = Mil.program().function("main", f -> {
            var x = f.input("x", fp32(2, 2));
            f.output(f.named("loss", f.reduceSum(f.mul(x, x), false, 0, 1)));
        }).build();
        Files.writeString(dir.resolve("p.mil"), MilWriter.write(p, ane4j.mil.Dialect.IOS18));
        Npy.write(dir.resolve("x.npy"), TensorBuffer.allocate(TensorType.of(DType.FP32, 4, 2)));
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int rc = cli(out, err, "train", "--graph", dir.resolve("p.mil").toString(), "--loss", "loss", "--params", "w", "--data", "x=" + dir.resolve("x.npy"),
                "--run-dir", dir.resolve("run").toString());
        assertEquals(1, rc);
        assertEquals(1, err.toString().strip().lines().count(), err.toString());
        assertTrue(err.toString().contains("[grad] wrt 'w' is not an input of function main at 4:"), err.toString());
    }
}
