package ane4j.train;

import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.Dialect;
import ane4j.mil.Mil;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

import static ane4j.mil.Mil.int32;

/**
 * A graph run's files for tests: a two-layer MLP (x [8, 4] → tanh(linear 16) → linear 2, cross-entropy against int32
 * labels) and 96 samples whose class is whether x0 + x1 > 0, so the loss must fall well below ln 2.
 */
public final class GraphRunFixture {
    private GraphRunFixture() {}

    public static Program mlp() { return mlp(DType.FP32); }

    /** The MLP with its float inputs (data and parameters) of {@code dtype}. */
    public static Program mlp(DType dtype) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", TensorType.of(dtype, 8, 4));
            var labels = f.input("labels", int32(8));
            var w1 = f.input("w1", TensorType.of(dtype, 16, 4));
            var b1 = f.input("b1", TensorType.of(dtype, 16));
            var w2 = f.input("w2", TensorType.of(dtype, 2, 16));
            var b2 = f.input("b2", TensorType.of(dtype, 2));
            f.output(f.named("loss", f.crossEntropyLabels(f.linear(f.tanh(f.linear(x, w1, b1)), w2, b2), labels)));
        }).build();
    }

    /**
     * The same MLP ending at its logits [8, 2] for the CPU loss head (run keys logits = logits, labels = labels): no
     * labels input ({@code withLabels} false: the labels are a data file of no input) or the labels input and both the
     * loss and the logits as outputs ({@code withLabels} true: the one graph trains either way). The parameters are the
     * same inputs in the same order, so the seed gives them the same starting values.
     */
    public static Program mlpLogits(boolean withLabels) {
        return Mil.program().function("main", f -> {
            var x = f.input("x", TensorType.of(DType.FP32, 8, 4));
            var labels = withLabels ? f.input("labels", int32(8)) : null;
            var w1 = f.input("w1", TensorType.of(DType.FP32, 16, 4));
            var b1 = f.input("b1", TensorType.of(DType.FP32, 16));
            var w2 = f.input("w2", TensorType.of(DType.FP32, 2, 16));
            var b2 = f.input("b2", TensorType.of(DType.FP32, 2));
            var logits = f.named("logits", f.linear(f.tanh(f.linear(x, w1, b1)), w2, b2));
            if (withLabels) f.output(f.named("loss", f.crossEntropyLabels(logits, labels)));
            f.output(logits);
        }).build();
    }

    /** {@link #write(Path)}, and {@link #mlpLogits} as dir/logits.mil (no labels input) and dir/both.mil (labels input, loss and logits out). */
    public static Path writeWithLogits(Path dir) throws IOException {
        Path g = write(dir);
        Files.writeString(dir.resolve("logits.mil"), MilWriter.write(mlpLogits(false), Dialect.IOS18));
        Files.writeString(dir.resolve("both.mil"), MilWriter.write(mlpLogits(true), Dialect.IOS18));
        return g;
    }

    /** Writes dir/mlp.mil and dir/data/{x,labels}.npy; returns the graph file. */
    public static Path write(Path dir) throws IOException { return write(dir, DType.FP32); }

    /** {@link #write(Path)} of the MLP and its x in {@code dtype}. */
    public static Path write(Path dir, DType dtype) throws IOException {
        Files.createDirectories(dir.resolve("data"));
        Path g = dir.resolve("mlp.mil");
        Files.writeString(g, MilWriter.write(mlp(dtype), Dialect.IOS18));
        Map<String, TensorBuffer> d = samples(96, 3);
        for (var e : d.entrySet()) {
            TensorBuffer b = e.getValue();
            if (e.getKey().equals("x") && dtype != DType.FP32) {
                TensorBuffer c = TensorBuffer.allocate(TensorType.of(dtype, b.shape()));
                c.copyFrom(b);
                b = c;
            }
            Npy.write(dir.resolve("data").resolve(e.getKey() + ".npy"), b);
        }
        return g;
    }

    /** {@code n} samples: x ~ N(0, 1)^4, label = x0 + x1 > 0. */
    public static Map<String, TensorBuffer> samples(int n, long seed) {
        Random r = new Random(seed);
        TensorBuffer x = TensorBuffer.allocate(TensorType.of(DType.FP32, n, 4)), y = TensorBuffer.allocate(TensorType.of(DType.INT32, n));
        for (int i = 0; i < n; i++) {
            float s = 0;
            for (int j = 0; j < 4; j++) {
                float v = (float) r.nextGaussian();
                x.set(i * 4 + j, v);
                if (j < 2) s += v;
            }
            y.set(i, s > 0 ? 1 : 0);
        }
        Map<String, TensorBuffer> m = new LinkedHashMap<>();
        m.put("x", x);
        m.put("labels", y);
        return m;
    }

    /** The options of a graph run of {@link #write}'s files. */
    public static Map<String, String> options(Path dir, Path runDir, int steps, String... more) {
        Map<String, String> m = new LinkedHashMap<>(Map.of("graph", dir.resolve("mlp.mil").toString(), "data", dir.resolve("data").toString(),
                "steps", Integer.toString(steps), "lr", "0.05", "warmup", "3", "runDir", runDir.toString(), "checkpointEvery", "10", "evalEvery", "10",
                "backend", "ref"));
        for (int i = 0; i < more.length; i += 2) m.put(more[i], more[i + 1]);
        return m;
    }
}
