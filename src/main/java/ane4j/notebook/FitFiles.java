package ane4j.notebook;

import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.Dialect;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.mil.Value;
import ane4j.run.RunFolder;
import ane4j.run.RunSpec;
import ane4j.session.Run;
import ane4j.session.Session;
import ane4j.train.Npy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A graph run from objects of a notebook or JShell ({@link Ane#fit}, {@code %%fit}): the program, the samples and the
 * starting values are written into the run's folder as the files a graph run names ({@code graph.mil},
 * {@code data/NAME.npy}, {@code val/NAME.npy}, {@code init/NAME.npy}), so the run is an ordinary run of the run layer
 * (a worker reads the files; a resume or a rerun from run.json finds them).
 */
final class FitFiles {
    private FitFiles() {}

    /** The keys that the objects give; a config naming them too is refused. */
    static final List<String> OBJECT_KEYS = List.of("graph", "data", "valData", "init");

    static TrainingRun start(Session session, Program graph, Map<String, TensorBuffer> data, Map<String, TensorBuffer> validation,
                             Map<String, float[]> init, Map<String, String> config) {
        if (graph == null) throw new IllegalArgumentException("[fit] no graph given");
        if (data == null || data.isEmpty()) throw new IllegalArgumentException("[fit] no data given: a map of each data input of the graph → its samples (along the first axis)");
        Map<String, String> keys = new LinkedHashMap<>(config);
        for (String k : keys.keySet()) {
            String c = RunSpec.KEYS.canonical(k);
            if (OBJECT_KEYS.contains(c))
                throw new IllegalArgumentException("[fit] " + c + " is given as an argument of Ane.fit (the graph, data, validation and init maps); drop " + k + " from the settings");
        }
        keys.put("graph", "graph.mil");   // named after the file the folder will hold (run folder: runs/graph-<time>)
        Run.Placed placed = Run.place(Ane.runSpec(keys));
        try {
            Path dir = placed.runDir().toAbsolutePath();
            // a run folder with checkpoints is resumed or left alone: its graph and data are not replaced before the run refuses
            List<Path> old = ane4j.train.Checkpoint.list(dir.resolve("checkpoints"));
            if (!old.isEmpty() && !placed.spec().train().resume())
                throw new IllegalArgumentException("[fit] " + dir + " already has checkpoints (newest " + old.getFirst().getFileName()
                        + "); pass resume = true to continue that run (its graph and data are written again from these arguments), or use another runDir");
            RunSpec spec = placed.spec().with("graph", write(dir, graph).toString()).with("data", samples(dir.resolve("data"), data).toString());
            if (validation != null && !validation.isEmpty()) spec = spec.with("valData", samples(dir.resolve("val"), validation).toString());
            if (init != null && !init.isEmpty()) spec = spec.with("init", init(dir.resolve("init"), graph, init).toString());
            return TrainingRun.start(session, spec);
        } catch (RuntimeException e) {
            Run.removeIfUnused(placed);
            throw e;
        }
    }

    private static Path write(Path dir, Program graph) {
        Path file = dir.resolve("graph.mil");
        try {
            Files.createDirectories(dir);
            Files.writeString(file, MilWriter.write(graph, Dialect.IOS18));
            graph.weights().writeTo(dir);
        } catch (IOException e) {
            throw new IllegalArgumentException("[fit] cannot write " + file + ": " + RunFolder.reason(e), e);
        }
        return file;
    }

    private static Path samples(Path dir, Map<String, TensorBuffer> data) {
        mkdirs(dir);
        for (var e : data.entrySet()) {
            if (!e.getKey().matches("[A-Za-z_][A-Za-z0-9_]*")) throw new IllegalArgumentException("[fit] '" + e.getKey() + "' is not a MIL input name");
            Npy.write(dir.resolve(e.getKey() + ".npy"), e.getValue());
        }
        return dir;
    }

    private static Path init(Path dir, Program graph, Map<String, float[]> init) {
        mkdirs(dir);
        for (var e : init.entrySet()) {
            Value in = graph.main().inputs().stream().filter(v -> v.name().equals(e.getKey())).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("[fit] init names '" + e.getKey() + "', which is not an input of the graph (inputs: "
                            + graph.main().inputs().stream().map(Value::name).toList() + ")"));
            TensorType t = TensorType.of(DType.FP32, in.shape());
            if (e.getValue().length != t.count())
                throw new IllegalArgumentException("[fit] init of '" + e.getKey() + "' has " + e.getValue().length + " values, the input " + in.type() + " needs " + t.count());
            Npy.write(dir.resolve(e.getKey() + ".npy"), TensorBuffer.of(t, e.getValue()));
        }
        return dir;
    }

    private static void mkdirs(Path dir) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new IllegalArgumentException("[fit] cannot create " + dir + ": " + RunFolder.reason(e), e);
        }
    }
}
