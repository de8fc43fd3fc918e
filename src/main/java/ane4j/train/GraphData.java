package ane4j.train;

import ane4j.backend.TensorBuffer;
import ane4j.mil.Function;
import ane4j.mil.MilException;
import ane4j.mil.MilParseException;
import ane4j.mil.MilParser;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import ane4j.model.Rng;
import ane4j.run.RunJson;
import ane4j.run.TrainOptions;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * What a graph run trains and on what, resolved from its options ({@code graph}, {@code loss} or {@code logits} and
 * {@code labels}, {@code params}, {@code data}, {@code valData}, {@code valFraction}, {@code init}, {@code seed}) before a
 * {@link Trainer} starts:
 * <pre>
 *   graph   a MIL program; its main function's inputs are data (those with a file in the data folder) or parameters
 *   data    a folder of NAME.npy, one per data input: every sample along the first axis, the input's shape after it
 *           (input x is [B, 64]: x.npy is [N, 64]; a micro-step draws B samples, uniformly with replacement)
 *   valData the same for held-out samples; without it the last valFraction of the samples are held out
 *   init    a folder of NAME.npy per parameter (its shape, fp32 or fp16); a parameter without one starts from the seed:
 *           a matrix [r, …] as N(0, 1/fan_in) (fan_in: the product of its other dims), a vector as 0
 *   logits  instead of a loss output: the graph's logits [N, C], whose mean cross-entropy against the int32 labels (one
 *   labels  per row; a data input of the graph, or a data file of no input: labels.npy [N, …] with N·… = N rows per
 *           batch) is computed on the CPU ({@link CpuLossHead}); every label is checked to be −1 (ignored) or a class
 * </pre>
 * Every name, file, shape and dtype is checked here, each problem one line naming the file and the fix.
 *
 * @param samples   data input → every sample, [N, …] (the input's type with N for its first dim)
 * @param train     samples [0, train) train, [train, N) are held out when there is no valData
 * @param heldOut   data input → the held-out samples [M, …], or null: no validation
 * @param inputs    the run's input files, for run.json
 * @param head      the CPU loss head (logits and labels), or null: the graph's loss output {@link GraphLayout#loss()}
 */
public record GraphData(Program program, GraphLayout layout, float[] init, Map<String, TensorBuffer> samples, int train,
                        Map<String, TensorBuffer> heldOut, String heldOutDescription, List<RunJson.Input> inputs, CpuLossHead head) {

    /** The graph's loss output (with a CPU loss head: the layout's description of its loss). */
    public String loss() { return layout.loss(); }

    /** How the checkpoints and the run record name a CPU loss head's loss ({@link GraphLayout#loss()}). */
    static String headLoss(CpuLossHead h) { return "cross-entropy(" + h.logits() + ", " + h.labels() + ") on the CPU"; }

    /** A batch of data input {@code name}: its graph input's type, or [B, …] of a labels file that is no input of the graph. */
    public TensorType batchType(String name) {
        for (Value v : program.main().inputs()) if (v.name().equals(name)) return v.type();
        int[] s = samples.get(name).shape();
        s[0] = batch();
        return TensorType.of(samples.get(name).dtype(), s);
    }

    /** The parameters, in the order of the flat array. */
    public List<String> params() { return layout.params().stream().map(GraphLayout.Param::name).toList(); }

    /** The batch size: the first dim of the data inputs. */
    public int batch() { return program.main().input(samples.keySet().iterator().next()).shape()[0]; }

    /** Samples held out, 0 without validation. */
    public int heldOutCount() { return heldOut == null ? 0 : heldOut.values().iterator().next().shape()[0]; }

    public static GraphData resolve(TrainOptions o, Consumer<String> log) {
        Path file = o.graph();
        Program p = parse(file);
        Function f = p.main();
        CpuLossHead head = o.logits().isEmpty() ? null : new CpuLossHead(o.logits(), o.labels());
        String loss = head == null ? loss(o, file, f) : headLoss(head);
        Value logits = head == null ? null : logits(head, file, f);
        // the head's labels: an input of the graph, or a data file of no input
        String labelsFile = head != null && !names(f).contains(head.labels()) ? head.labels() : null;
        if (o.data() == null)
            throw new IllegalArgumentException("[train] graph = " + file + " needs data = DIR, a folder of NAME.npy (one per data input of the graph, samples along the first axis)");
        Map<String, Path> dataFiles = npyFiles(o.data(), "data", file, f, labelsFile);
        // the parameters: as given, else every float input without a data file
        List<String> params = new ArrayList<>();
        if (!o.params().isEmpty()) {
            for (String n : o.params()) {
                Value v = input(f, n, file, "params");
                if (!v.dtype().isFloat()) throw new IllegalArgumentException("[train] params: graph input '" + n + "' is " + v.type() + ", not a float tensor; only float inputs train");
                if (dataFiles.containsKey(n)) throw new IllegalArgumentException("[train] params names '" + n + "', but data has " + dataFiles.get(n) + " for it; a parameter has no data file");
                if (params.contains(n)) throw new IllegalArgumentException("[train] params names '" + n + "' twice");
                params.add(n);
            }
        } else {
            for (Value v : f.inputs()) if (!dataFiles.containsKey(v.name()) && v.dtype().isFloat()) params.add(v.name());
        }
        // every input is a parameter or has data
        for (Value v : f.inputs())
            if (!params.contains(v.name()) && !dataFiles.containsKey(v.name()) && !(head != null && v.name().equals(head.labels())))
                throw new IllegalArgumentException("[train] graph input '" + v.name() + "' " + v.type() + " has no data file " + o.data().resolve(v.name() + ".npy")
                        + (v.dtype().isFloat() ? " and is not among params" : "") + "; add that file (samples along the first axis)");
        if (params.isEmpty()) throw new IllegalArgumentException("[train] graph " + file + " has no parameter to train: every input has a data file; name the trained inputs with params = A,B");
        if (dataFiles.isEmpty() || (dataFiles.size() == 1 && dataFiles.containsKey(labelsFile))) throw new IllegalArgumentException("[train] data " + o.data() + " has no NAME.npy for any input of graph " + file + " (inputs: " + names(f) + ")");
        if (head != null) checkLabelsInput(head, file, f, params, labelsFile, dataFiles, o.data());
        int batch = -1;
        String batchOf = null;
        for (String n : dataFiles.keySet()) {
            if (n.equals(labelsFile)) continue;
            int[] s = f.input(n).shape();
            if (s.length == 0) throw new IllegalArgumentException("[train] graph input '" + n + "' is a scalar; a data input needs a first (batch) dimension");
            if (batch >= 0 && s[0] != batch)
                throw new IllegalArgumentException("[train] graph inputs '" + batchOf + "' and '" + n + "' differ in their first (batch) dimension (" + batch + " and " + s[0] + "); every data input takes a batch of the same samples");
            batch = s[0];
            batchOf = n;
        }
        // the data: every file [N, …] with the same N
        Map<String, TensorBuffer> all = readSamples(dataFiles, f, "data", labelsFile);
        int n = all.values().iterator().next().shape()[0];
        Map<String, TensorBuffer> held = null;
        String heldDescription = null;
        int train = n;
        if (o.valData() != null) {
            Map<String, Path> valFiles = npyFiles(o.valData(), "valData", file, f, labelsFile);
            if (!valFiles.keySet().equals(dataFiles.keySet()))
                throw new IllegalArgumentException("[train] valData " + o.valData() + " has " + valFiles.keySet() + " but data has " + dataFiles.keySet() + "; give the same inputs");
            held = readSamples(valFiles, f, "valData", labelsFile);
            heldDescription = held.values().iterator().next().shape()[0] + " samples of " + o.valData();
        } else if (o.valFraction() > 0) {
            int tail = (int) (n * (double) o.valFraction());
            if (tail < 1 || n - tail < 1) {
                log.accept("[eval] data " + o.data() + ": " + n + " samples are too few to hold out " + o.valFraction() + " of them; training on all, no validation (give valData = DIR)");
            } else {
                train = n - tail;
                held = new LinkedHashMap<>();
                for (var e : all.entrySet()) held.put(e.getKey(), rows(e.getValue(), train, tail));
                heldDescription = "the last " + tail + " of the " + n + " samples of " + o.data();
            }
        }
        // the parameters' starting values: init files, else from the seed
        if (head != null) {
            checkLabels(head, logits, batch, all, dataFiles.get(head.labels()));
            if (held != null && o.valData() != null) checkLabels(head, logits, batch, held, o.valData().resolve(head.labels() + ".npy"));
        }
        Map<String, Path> initFiles = o.init() == null ? Map.of() : npyFiles(o.init(), "init", file, f, null);
        for (String k : initFiles.keySet())
            if (!params.contains(k)) throw new IllegalArgumentException("[train] init " + initFiles.get(k) + " is for '" + k + "', which is not a trained parameter (params: " + params + ")");
        List<GraphLayout.Param> layout = new ArrayList<>();
        for (String name : params) layout.add(new GraphLayout.Param(name, f.input(name).shape()));
        GraphLayout gl = new GraphLayout(file.getFileName().toString(), loss, layout);
        float[] init = new float[gl.size()];
        Rng rng = new Rng(o.seed());
        for (var v : gl.views()) {
            Path pf = initFiles.get(v.name());
            TensorType t = f.input(v.name()).type();
            if (pf != null) {
                float[] x = Npy.readFloats(pf, t.shape(), v.name());
                System.arraycopy(x, 0, init, v.offset(), v.size());
            } else if (t.rank() > 1) {
                // N(0, 1/fan_in): a layer's outputs start at about the scale of its inputs
                double sd = 1 / Math.sqrt(v.cols());
                for (int i = 0; i < v.size(); i++) init[v.offset() + i] = (float) (rng.nextGaussian() * sd);
            }
        }
        List<RunJson.Input> inputs = new ArrayList<>();
        inputs.add(RunJson.Input.file("graph", file));
        dataFiles.forEach((k, v) -> inputs.add(RunJson.Input.file("data." + k, v)));
        if (o.valData() != null) npyFiles(o.valData(), "valData", file, f, labelsFile).forEach((k, v) -> inputs.add(RunJson.Input.file("valData." + k, v)));
        initFiles.forEach((k, v) -> inputs.add(RunJson.Input.file("init." + k, v)));
        log.accept("[train] graph " + file.getFileName() + ": loss " + loss + ", training " + layout.stream().map(x -> x.name() + " " + Arrays.toString(x.shape())).toList()
                + " (" + gl.size() + " floats); " + train + " samples of " + dataFiles.keySet() + ", batches of " + batch);
        return new GraphData(p, gl, init, all, train, held, heldDescription, inputs, head);
    }

    private static Program parse(Path file) {
        String text;
        try {
            text = MilParser.readText(file);
        } catch (MilException e) {
            throw new IllegalArgumentException("[train] graph = " + file + ": " + e.getMessage().replaceFirst("^\\[mil\\] ", ""), e);
        }
        try {
            return MilParser.parse(text, file.toAbsolutePath().getParent());
        } catch (MilParseException e) {
            throw new IllegalArgumentException("[train] graph " + file + (e.line() > 0 ? ":" : ": ") + e.getMessage(), e);
        } catch (MilException e) {
            throw new IllegalArgumentException("[train] graph " + file + ": " + e.getMessage(), e);
        }
    }

    /** The loss given, else the output named loss, else the only output; it must be an output of the graph. */
    private static String loss(TrainOptions o, Path file, Function f) {
        List<String> outs = f.outputs().stream().map(Value::name).toList();
        String loss = o.loss();
        if (loss.isEmpty()) {
            if (outs.contains("loss")) loss = "loss";
            else if (outs.size() == 1) loss = outs.getFirst();
            else throw new IllegalArgumentException("[train] graph " + file + " has outputs " + outs + " and none is named loss; name the loss with loss = NAME");
        }
        if (!outs.contains(loss))
            throw new IllegalArgumentException("[train] loss = " + loss + " is not an output of graph " + file + " (outputs: " + String.join(", ", outs) + "); name one of them");
        // one float: the backward is seeded with one upstream gradient; a tensor would train on its sum while its mean is shown
        String name = loss;
        Value v = f.outputs().stream().filter(x -> x.name().equals(name)).findFirst().orElseThrow();
        if (!v.dtype().isFloat() || v.type().count() != 1)
            throw new IllegalArgumentException("[train] loss = " + loss + " is " + v.type() + " in graph " + file + "; a graph run's loss is one float number: "
                    + "reduce it in the graph (reduce_mean), or give logits = NAME and labels = NAME for the CPU loss head");
        return loss;
    }

    /** The head's logits: an output of the graph, float [N, C] with C ≥ 2. */
    private static Value logits(CpuLossHead head, Path file, Function f) {
        List<String> outs = f.outputs().stream().map(Value::name).toList();
        Value v = f.outputs().stream().filter(x -> x.name().equals(head.logits())).findFirst().orElse(null);
        if (v == null)
            throw new IllegalArgumentException("[train] logits = " + head.logits() + " is not an output of graph " + file + " (outputs: " + String.join(", ", outs) + "); name the output holding the logits [N, C]");
        if (v.rank() != 2 || !v.dtype().isFloat() || v.shape()[1] < 2)
            throw new IllegalArgumentException("[train] logits = " + head.logits() + " is " + v.type() + " in graph " + file
                    + "; the CPU loss head takes float logits [N, C] (a row per example, C ≥ 2 classes): reshape them to [N, C] in the graph");
        return v;
    }

    /** The head's labels as an input of the graph: integer, not trained, with data; as a file of no input: present. */
    private static void checkLabelsInput(CpuLossHead head, Path file, Function f, List<String> params, String labelsFile, Map<String, Path> dataFiles, Path data) {
        String l = head.labels();
        if (labelsFile != null) {
            if (!dataFiles.containsKey(l))
                throw new IllegalArgumentException("[train] labels = " + l + " is not an input of graph " + file + " (inputs: " + names(f) + ") and data has no " + data.resolve(l + ".npy")
                        + "; give the class ids as that file (int32, one per row of the logits) or name the graph's int32 input holding them");
            return;
        }
        Value v = f.input(l);
        if (v.dtype() != ane4j.mil.DType.INT32)
            throw new IllegalArgumentException("[train] labels = " + l + " is graph input '" + l + "' " + v.type() + ", not integer class ids; make it int32 (or name the input holding the class ids)");
        if (params.contains(l)) throw new IllegalArgumentException("[train] labels = " + l + " is among params; the labels are data, not trained");
    }

    /** A labels file of no graph input as a value of its own [N, …] int32 type; another dtype is refused in one line. */
    private static Value labelsValue(String name, Path file, String key) {
        String d = Npy.descr(file);
        if (!d.equals("<i4"))
            throw new IllegalArgumentException("[train] labels = " + name + ": " + key + " " + file + " has dtype '" + d + "', not int32 class ids; save it with np.save(f, labels.astype(np.int32))");
        long[] s = Npy.shape(file);
        if (s.length == 0) throw new IllegalArgumentException("[train] labels = " + name + ": " + key + " " + file + " is a scalar; give one class id per sample, [N, …]");
        return new Value(name, TensorType.of(ane4j.mil.DType.INT32, java.util.Arrays.stream(s).mapToInt(Math::toIntExact).toArray()));
    }

    /**
     * The labels fit the logits: a batch of labels holds one class id per row of the logits [N, C], each in 0..C−1 or −1
     * (an ignored row); {@code file} names the samples' file in the messages.
     */
    private static void checkLabels(CpuLossHead head, Value logits, int batch, Map<String, TensorBuffer> samples, Path file) {
        TensorBuffer all = samples.get(head.labels());
        int[] s = all.shape();
        long perBatch = all.count() / s[0] * batch;
        int rows = logits.shape()[0], classes = logits.shape()[1];
        if (perBatch != rows) {
            int[] b = s.clone();
            b[0] = batch;
            throw new IllegalArgumentException("[train] labels = " + head.labels() + " gives " + perBatch + " class ids per batch (int32" + Arrays.toString(b).replace(" ", "") + ") but logits = "
                    + head.logits() + " is " + logits.type() + ": give one label per row of the logits, " + rows + " per batch of " + batch + " samples");
        }
        long per = all.count() / s[0];
        for (long i = 0; i < all.count(); i++) {
            long t = (long) all.get(i);
            if (t < -1 || t >= classes)
                throw new IllegalArgumentException("[train] " + file + ": label " + t + " of sample " + i / per + " is outside 0.." + (classes - 1) + " (logits = " + head.logits() + " has "
                        + classes + " classes; -1 ignores a row); fix the labels or the graph's number of classes");
        }
    }

    private static Value input(Function f, String name, Path file, String key) {
        for (Value v : f.inputs()) if (v.name().equals(name)) return v;
        throw new IllegalArgumentException("[train] " + key + ": '" + name + "' is not an input of graph " + file + " (inputs: " + names(f) + ")");
    }

    private static List<String> names(Function f) { return f.inputs().stream().map(Value::name).toList(); }

    /** The NAME.npy files of a folder, each the input it names (or {@code extra}, the head's labels of no input, last). */
    private static Map<String, Path> npyFiles(Path dir, String key, Path graph, Function f, String extra) {
        if (!Files.isDirectory(dir))
            throw new IllegalArgumentException("[train] " + key + " = " + dir + " is not a folder; a graph run's " + key + " is a folder of NAME.npy, one per input");
        Map<String, Path> out = new java.util.TreeMap<>();
        try (var s = Files.list(dir)) {
            for (Path p : s.sorted().toList()) {
                String n = p.getFileName().toString();
                if (!n.endsWith(".npy")) continue;
                String name = n.substring(0, n.length() - 4);
                if (!name.equals(extra)) input(f, name, graph, key + " " + p);
                out.put(name, p);
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("[train] cannot list " + key + " " + dir + ": " + ane4j.run.RunFolder.reason(e), e);
        }
        // in the order of the graph's inputs
        Map<String, Path> ordered = new LinkedHashMap<>();
        for (Value v : f.inputs()) if (out.containsKey(v.name())) ordered.put(v.name(), out.get(v.name()));
        if (extra != null && out.containsKey(extra)) ordered.put(extra, out.get(extra));
        return ordered;
    }

    /** Every file as [N, …] of its input's dtype, with one N for all ({@code labels}: int32 class ids of no input, any [N, …]). */
    private static Map<String, TensorBuffer> readSamples(Map<String, Path> files, Function f, String key, String labels) {
        Map<String, TensorBuffer> out = new LinkedHashMap<>();
        int n = -1;
        String first = null;
        for (var e : files.entrySet()) {
            Value in = e.getKey().equals(labels) ? labelsValue(e.getKey(), e.getValue(), key) : f.input(e.getKey());
            long[] shape = Npy.shape(e.getValue());
            int[] want = in.shape();
            boolean ok = shape.length == want.length && shape.length > 0;
            for (int i = 1; ok && i < want.length; i++) ok = shape[i] == want[i];
            if (!ok) {
                int[] hint = want.clone();
                String dims = Arrays.toString(hint).replaceFirst("^\\[\\d+", "[N");
                throw new IllegalArgumentException("[train] " + key + " " + e.getValue() + " is " + Arrays.toString(shape) + " but graph input '" + e.getKey() + "' is " + in.type()
                        + ": give " + dims + " (samples along the first axis)");
            }
            if (shape[0] < 1) throw new IllegalArgumentException("[train] " + key + " " + e.getValue() + " holds no sample");
            if (n >= 0 && shape[0] != n)
                throw new IllegalArgumentException("[train] " + key + " " + e.getValue() + " has " + shape[0] + " samples but " + first + " has " + n + "; give every input the same samples");
            n = (int) shape[0];
            first = e.getValue().getFileName().toString();
            want[0] = n;
            out.put(e.getKey(), Npy.read(e.getValue(), TensorType.of(in.dtype(), want), e.getKey()));
        }
        return out;
    }

    /** Samples [from, from + count) of {@code all} (a copy). */
    private static TensorBuffer rows(TensorBuffer all, int from, int count) {
        int[] s = all.shape();
        long per = all.byteSize() / s[0];
        s[0] = count;
        TensorBuffer out = TensorBuffer.allocate(TensorType.of(all.dtype(), s));
        MemorySegment.copy(all.segment(), from * per, out.segment(), 0, count * per);
        return out;
    }

    /** Copies sample {@code sample} of {@code all} into row {@code row} of {@code batch}. */
    static void copySample(TensorBuffer all, int sample, TensorBuffer batch, int row) {
        long per = batch.byteSize() / batch.shape()[0];
        MemorySegment.copy(all.segment(), sample * per, batch.segment(), row * per, per);
    }
}
