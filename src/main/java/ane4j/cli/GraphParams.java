package ane4j.cli;

import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.TensorType;
import ane4j.model.ParameterView;
import ane4j.run.RunFolder;
import ane4j.run.StepMetrics;
import ane4j.run.TrainOptions;
import ane4j.train.Checkpoint;
import ane4j.train.GraphLayout;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/** The end of {@code ane4j train --graph}: the trained parameters of the newest checkpoint as {@code runDir/params/NAME.npy}, and a summary. */
final class GraphParams {
    private GraphParams() {}

    static void write(TrainOptions o, List<StepMetrics> h, double seconds, PrintStream out) {
        Path checkpoints = o.runDir().resolve("checkpoints");
        Checkpoint.Contents c = Checkpoint.loadNewestWeights(checkpoints, out::println);
        if (c == null || c.state().graph() == null) throw new CliException("training ended without a readable graph checkpoint in " + checkpoints);
        GraphLayout layout = c.state().graph();
        Path dir = o.runDir().resolve("params");
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new CliException("cannot create " + dir + ": " + RunFolder.reason(e));
        }
        List<ParameterView> views = layout.views();
        for (int i = 0; i < views.size(); i++) {
            ParameterView v = views.get(i);
            TensorBuffer b = TensorBuffer.allocate(TensorType.of(DType.FP32, layout.params().get(i).shape()));
            b.copyFrom(c.params(), v.offset(), 0, v.size());
            Npy.write(dir.resolve(v.name() + ".npy"), b);
        }
        int window = Math.max(1, Math.min(10, h.size() / 2));
        out.printf(Locale.ROOT, "graph %s: %,d parameters; loss %.4f → %.4f (mean of first/last %d steps) in %.1f s; metrics: %s%n", layout.graph(), layout.size(),
                mean(h, 0, window), mean(h, h.size() - window, h.size()), window, seconds, o.runDir().resolve("metrics.jsonl"));
        String validation = TrainCommand.validationSummary(h);
        if (validation != null) out.println(validation.replaceFirst(" \\(perplexity [^)]*\\)", ""));
        out.println("trained " + String.join(", ", views.stream().map(ParameterView::name).toList()) + " → " + dir + " (NAME.npy, fp32); loss plot: " + o.runDir().resolve("loss.png"));
    }

    private static float mean(List<StepMetrics> h, int from, int to) {
        double sum = 0;
        for (int i = from; i < to; i++) sum += h.get(i).loss();
        return (float) (sum / Math.max(1, to - from));
    }
}
