package ane4j.cli;

import ane4j.backend.Backend;
import ane4j.backend.Backends;
import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.MilException;
import ane4j.mil.MilParser;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import ane4j.mil.grad.GradException;
import ane4j.model.ParameterView;
import ane4j.session.LossChart;
import ane4j.train.GraphStep;
import ane4j.train.GraphTrainer;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ane4j train --graph FILE.mil --loss NAME --params A,B --data x=X.npy --data labels=Y.npy …}: trains the
 * parameters of any MIL graph (see {@link GraphTrainer}). Each {@code --data} array holds every sample along its first
 * axis; step s takes the graph input's batch of consecutive samples from sample s·B (wrapping). Parameters start from
 * {@code --init DIR/<name>.npy} where present, else N(0, 1/fan_in) for matrices and 0 for vectors (seed 1). The run
 * folder gets metrics.jsonl, checkpoints/ (a rerun on it resumes), loss.png and params/<name>.npy.
 */
@Command(name = "train", sortOptions = false, sortSynopsis = false, description = "Train the parameters of a MIL graph (ane4j train --graph FILE.mil …).")
final class GraphTrainCommand implements Callable<Integer> {
    @Mixin Cli.HelpOption help;
    @Option(names = "--graph", paramLabel = "FILE.mil", required = true, description = "the forward graph, its loss among its outputs") Path graph;
    @Option(names = "--loss", paramLabel = "NAME", required = true, description = "the loss output") String loss;
    @Option(names = "--params", paramLabel = "A,B", required = true, split = ",", description = "the float inputs to train") List<String> params;
    @Option(names = "--data", paramLabel = "NAME=FILE.npy", required = true, description = "every sample of a data input along the first axis") Map<String, Path> data = new LinkedHashMap<>();
    @Option(names = "--val", paramLabel = "NAME=FILE.npy", description = "a validation batch (its first B samples)") Map<String, Path> val = new LinkedHashMap<>();
    @Option(names = "--init", paramLabel = "DIR", description = "initial parameters DIR/<name>.npy") Path init;
    @Option(names = "--steps", paramLabel = "N", description = "steps (default 200)") int steps = 200;
    @Option(names = "--lr", paramLabel = "X", description = "peak learning rate (default 1e-2)") float lr = 1e-2f;
    @Option(names = "--min-lr", paramLabel = "X", description = "final learning rate of the cosine (default lr/10)") Float minLr;
    @Option(names = "--warmup", paramLabel = "N", description = "warm-up steps (default 10)") int warmup = 10;
    @Option(names = "--weight-decay", paramLabel = "X", description = "AdamW's decay of matrices (default 0)") float weightDecay = 0f;
    @Option(names = "--clip", paramLabel = "X", description = "global gradient-norm clip (default 1)") float clip = 1f;
    @Option(names = "--eval-every", paramLabel = "N", description = "validation every N steps (default 50)") int evalEvery = 50;
    @Option(names = "--checkpoint-every", paramLabel = "N", description = "a checkpoint every N steps (and at the end)") int checkpointEvery = 50;
    @Option(names = "--run-dir", paramLabel = "DIR", required = true, description = "the run folder") Path runDir;
    private final PrintStream out;

    GraphTrainCommand(PrintStream out) { this.out = out; }

    /** Parses and runs; errors are {@link CliException}s, printed in one line by the ane4j command. */
    static int run(String[] args, PrintStream out) {
        List<String> rest = new ArrayList<>(List.of(args));
        if (rest.contains("--help") || rest.contains("-h")) {
            new CommandLine(new GraphTrainCommand(out)).usage(out, CommandLine.Help.Ansi.OFF);
            return 0;
        }
        return Cli.parse(new GraphTrainCommand(out), args).call();
    }

    @Override
    public Integer call() {
        Program p;
        try {
            p = MilParser.parse(MilParser.readText(graph), graph.toAbsolutePath().getParent());
        } catch (MilException e) {
            throw new CliException(graph + ": " + e.getMessage());
        }
        Map<String, TensorBuffer> all = new LinkedHashMap<>(), valBatch = new LinkedHashMap<>();
        int samples = -1;
        for (var e : data.entrySet()) {
            Value in = input(p, e.getKey(), "--data");
            TensorBuffer t = readAll(e.getValue(), in, e.getKey());
            int n = t.shape()[0];
            if (samples >= 0 && n != samples) throw new CliException("--data " + e.getKey() + " has " + n + " samples but the others have " + samples + "; give arrays of the same length");
            samples = n;
            all.put(e.getKey(), t);
        }
        for (var e : val.entrySet()) {
            Value in = input(p, e.getKey(), "--val");
            valBatch.put(e.getKey(), window(readAll(e.getValue(), in, e.getKey()), in.type(), 0));
        }
        Backend backend = Backends.select();
        try (GraphStep step = new GraphStep(p, loss, params, backend, true)) {
            float[] flat = initial(step, p);
            GraphTrainer.Options o = new GraphTrainer.Options(steps, lr, minLr != null ? minLr : lr / 10, warmup, weightDecay, clip, 1f, evalEvery, checkpointEvery, runDir);
            GraphTrainer t = new GraphTrainer(step, flat, o);
            if (t.nextStep() > 0) out.println("resumed " + runDir + " at step " + t.nextStep());
            long every = Math.max(1, steps / 10);
            var history = t.fit(s -> {
                Map<String, TensorBuffer> b = new LinkedHashMap<>();
                for (var e : all.entrySet()) b.put(e.getKey(), window(e.getValue(), p.main().input(e.getKey()).type(), s));
                return b;
            }, valBatch.isEmpty() ? null : valBatch, m -> {
                if ((m.step() + 1) % every == 0 || m.step() + 1 == steps)
                    out.println(String.format(Locale.ROOT, "step %d/%d  loss %.4f%s  lr %.2e", m.step() + 1, steps, m.loss(),
                            m.validated() ? String.format(Locale.ROOT, "  val %.4f", m.valLoss()) : "", m.lr()));
            });
            Files.createDirectories(runDir.resolve("params"));
            for (ParameterView v : step.views()) {
                TensorBuffer b = TensorBuffer.allocate(TensorType.of(DType.FP32, p.main().input(v.name()).shape()));
                b.copyFrom(flat, v.offset(), 0, v.size());
                Npy.write(runDir.resolve("params").resolve(v.name() + ".npy"), b);
            }
            LossChart.save(history, runDir);
            out.println("trained " + String.join(", ", params) + " → " + runDir.resolve("params") + "; loss.png, metrics.jsonl, checkpoints/");
            return 0;
        } catch (GradException e) {
            throw new CliException(graph + (e.line() > 0 ? ":" + e.line() + ":" + e.column() : "") + ": " + e.getMessage());
        } catch (IOException e) {
            throw new CliException("cannot write to " + runDir + ": " + e.getMessage());
        } catch (MilException | IllegalArgumentException | IllegalStateException e) {
            throw new CliException(e.getMessage());
        }
    }

    private static Value input(Program p, String name, String option) {
        for (Value v : p.main().inputs()) if (v.name().equals(name)) return v;
        throw new CliException(option + " " + name + ": the graph has no input '" + name + "' (inputs: " + p.main().inputs().stream().map(Value::name).toList() + ")");
    }

    /** The whole array: the input's shape with its first dim replaced by the file's. */
    private static TensorBuffer readAll(Path file, Value in, String name) {
        long[] shape;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer head = ByteBuffer.allocate((int) Math.min(ch.size(), 12 + 65536)).order(ByteOrder.LITTLE_ENDIAN);
            while (head.hasRemaining() && ch.read(head, head.position()) > 0) { }
            shape = Npy.header(head.flip(), ch.size(), file).shape();
        } catch (IOException e) {
            throw CliException.cannotRead(file, e);
        }
        int[] want = in.shape();
        if (shape.length != want.length) throw new CliException("[npy] " + file + " has rank " + shape.length + " but input '" + name + "' is " + in.type() + " (samples along the first axis)");
        want[0] = Math.toIntExact(shape[0]);
        return Npy.read(file, TensorType.of(in.dtype(), want), name);
    }

    /** B consecutive samples from sample step·B (wrapping), B the input's first dim. */
    private static TensorBuffer window(TensorBuffer all, TensorType type, long step) {
        int b = type.shape()[0], n = all.shape()[0];
        long per = type.count() / b;
        TensorBuffer out = TensorBuffer.allocate(type);
        for (int i = 0; i < b; i++) {
            long k = (step * b + i) % n;
            for (long j = 0; j < per; j++) out.set(i * per + j, all.get(k * per + j));
        }
        return out;
    }

    private float[] initial(GraphStep step, Program p) {
        float[] flat = new float[step.size()];
        Random r = new Random(1);
        for (ParameterView v : step.views()) {
            TensorType type = p.main().input(v.name()).type();
            Path f = init == null ? null : init.resolve(v.name() + ".npy");
            if (f != null && Files.exists(f)) {
                float[] x = Npy.read(f, TensorType.of(DType.FP32, type.shape()), v.name()).toFloatArray();
                System.arraycopy(x, 0, flat, v.offset(), v.size());
            } else if (type.rank() > 1) {
                double sd = 1 / Math.sqrt(v.cols());
                for (int i = 0; i < v.size(); i++) flat[v.offset() + i] = (float) (r.nextGaussian() * sd);
            }
        }
        return flat;
    }
}
