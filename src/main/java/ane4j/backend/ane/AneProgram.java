package ane4j.backend.ane;

import ane4j.backend.ane.ffm.AneIOSurfaceObject;
import ane4j.backend.ane.ffm.AneInMemoryModel;
import ane4j.backend.ane.ffm.AneInMemoryModelDescriptor;
import ane4j.backend.ane.ffm.AneRequest;
import ane4j.backend.ane.ffm.AutoreleasePool;
import ane4j.backend.ane.ffm.Foundation;
import ane4j.backend.ane.ffm.IOSurfaces;
import ane4j.backend.ane.ffm.ObjC;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A MIL program compiled and loaded on the ANE, with its input and output IOSurfaces and its request:
 * the sequence of ane-facts.md §2.2 (steps 1–9) and the temp-directory protocol of §2.3. Not thread-safe.
 *
 * <pre>{@code
 * try (AneProgram p = AneProgram.compile(mil, Map.of("@model_path/weights/w.bin", blob),
 *         List.of(new SurfaceSpec("x", 4096)), List.of(new SurfaceSpec("y", 4096)))) {
 *     p.input("x").write(xBytes);
 *     p.evaluate();
 *     p.output("y").read(yBytes);
 * }
 * }</pre>
 */
public final class AneProgram implements AutoCloseable {
    /** The prefix of every weight path in MIL {@code BLOBFILE(path=...)} and in the weights dictionary (ane-facts.md §2.3). */
    public static final String MODEL_PATH_PREFIX = "@model_path/";
    /** The weights-dictionary entry: {@code {"offset": @0, "data": NSData}}; every maderix caller after inmem_basic uses offset 0. */
    static final int WEIGHT_ENTRY_OFFSET = 0;

    /** Temp directories in use, by count: two programs with the same MIL and weights share one hex id. */
    private static final Map<Path, Integer> DIRECTORIES = new HashMap<>();

    private final ObjC objc;
    private AneInMemoryModel model;       // retained (+1) by us
    private MemorySegment request;        // retained (+1) by us
    private boolean loaded;
    private String hexId;
    private Path directory;
    private final List<AneSurface> inputs = new ArrayList<>();
    private final List<AneSurface> outputs = new ArrayList<>();
    private final List<InputSet> inputSets = new ArrayList<>();
    private boolean closed;
    private boolean cacheHit;
    private long compileNanos, loadNanos;

    private AneProgram(ObjC objc) {
        this.objc = objc;
    }

    /** {@link #compile(String, Map, List, List, CompileBudget)} against the process budget. */
    public static AneProgram compile(String milText, Map<String, byte[]> weightFiles,
                                     List<SurfaceSpec> inputs, List<SurfaceSpec> outputs) {
        return compile(milText, weightFiles, inputs, outputs, CompileBudget.process());
    }

    /**
     * Compiles and loads {@code milText} with its weight files (keys as in the MIL, {@code "@model_path/weights/x.bin"},
     * values the MILBlob file bytes) and allocates its surfaces ({@link SurfacePlan}). Takes one compile from
     * {@code budget} first. Errors carry the failing selector and Apple's message.
     */
    public static AneProgram compile(String milText, Map<String, byte[]> weightFiles,
                                     List<SurfaceSpec> inputs, List<SurfaceSpec> outputs, CompileBudget budget) {
        return compile(milText, weightFiles, inputs, outputs, budget, null);
    }

    /**
     * As {@link #compile(String, Map, List, List, CompileBudget)}, restoring the compiler's outputs from {@code cache}
     * into the hex directory before compile when it has them, and storing them after a compile when it has not
     * ({@code cache} null: no cache). A cache hit still sends {@code compileWithQoS} and still counts against the budget.
     */
    public static AneProgram compile(String milText, Map<String, byte[]> weightFiles,
                                     List<SurfaceSpec> inputs, List<SurfaceSpec> outputs, CompileBudget budget,
                                     CompileCache cache) {
        byte[] mil = milText.getBytes(StandardCharsets.UTF_8);
        Map<String, byte[]> weights = new TreeMap<>(weightFiles);   // sorted: a stable dictionary, a stable hex id
        Map<String, Path> weightPaths = new LinkedHashMap<>();
        for (String key : weights.keySet()) weightPaths.put(key, relativeWeightPath(key));
        List<SurfacePlan.Slot> inputSlots = SurfacePlan.plan("input", inputs);
        List<SurfacePlan.Slot> outputSlots = SurfacePlan.plan("output", outputs);
        budget.acquire();

        ObjC objc = ObjC.get();
        AneProgram p = new AneProgram(objc);
        try {
            try (AutoreleasePool pool = objc.pool()) {
                // 1. descriptor from the MIL bytes (NSData, not NSString) and {path: {offset, data}}
                MemorySegment descriptor = AneInMemoryModelDescriptor.modelWithMILText(
                        Foundation.data(mil), weightsDictionary(weights));
                // 2. the model (+0; retained because we keep it — it keeps its descriptor)
                AneInMemoryModel model = AneInMemoryModel.inMemoryModelWithDescriptor(descriptor);
                objc.retain(model.id());
                p.model = model;
                // 3. the temp dir <NSTemporaryDirectory>/<hex>/ with model.mil and weights/..., written before compile
                p.hexId = directoryName(model.hexStringIdentifier());
                p.directory = acquireDirectory(Path.of(Foundation.temporaryDirectory(), p.hexId));
                writeFiles(p.directory, mil, weights, weightPaths);
                p.cacheHit = cache != null && cache.restore(p.hexId, p.directory);
                // 4. compile (a failure late in the process is the compiler leak)
                long t0 = System.nanoTime();
                try {
                    model.compileWithQoS(AneInMemoryModel.QOS_DEFAULT, Foundation.emptyDictionary());
                } catch (AneException e) {
                    throw budget.classifyFailure(e);
                }
                long t1 = System.nanoTime();
                p.compileNanos = t1 - t0;
                if (cache != null && !p.cacheHit) cache.store(p.hexId, p.directory);
                // 5. load
                model.loadWithQoS(AneInMemoryModel.QOS_DEFAULT, Foundation.emptyDictionary());
                p.loadNanos = System.nanoTime() - t1;
                p.loaded = true;
                // 6. surfaces (+1 each, ours) and their _ANEIOSurfaceObject wrappers (+0, kept alive by the request)
                List<MemorySegment> inputObjects = p.allocate(inputSlots, p.inputs);
                List<MemorySegment> outputObjects = p.allocate(outputSlots, p.outputs);
                // 7. the request (+0; retained because we keep it — it keeps its arrays, wrappers and surfaces)
                p.request = objc.retain(AneRequest.requestWithInputs(inputObjects, outputObjects));
            }
        } catch (RuntimeException e) {
            try {
                p.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        return p;
    }

    private List<MemorySegment> allocate(List<SurfacePlan.Slot> slots, List<AneSurface> into) {
        List<MemorySegment> wrappers = new ArrayList<>(slots.size());
        for (SurfacePlan.Slot slot : slots) {
            MemorySegment surface = IOSurfaces.create(slot.allocBytes());
            into.add(new AneSurface(slot, surface));
            wrappers.add(AneIOSurfaceObject.objectWithIOSurface(surface));
        }
        return wrappers;
    }

    /** 8. Runs the request once: inputs must be written and unlocked. */
    public void evaluate() {
        if (closed) throw new IllegalStateException("[ane.evaluate] the program is closed");
        for (AneSurface s : inputs) checkUnlocked(s);
        for (AneSurface s : outputs) checkUnlocked(s);
        try (AutoreleasePool pool = objc.pool()) {
            model.evaluateWithQoS(AneInMemoryModel.QOS_DEFAULT, Foundation.emptyDictionary(), request);
        }
    }

    /**
     * Another set of input surfaces, sized as the program's own, with its own request on the program's output surfaces:
     * what maderix's dynamic training allocates per layer and weight-bearing kernel so that weights stay bound between
     * steps ({@code training/training_dynamic/train.m}: {@code pls[L].sdpaFwd_in = make_surface(...)},
     * {@code plr[L].sdpaFwd = make_request(dk.sdpaFwd, pls[L].sdpaFwd_in)}, evaluated by {@code ane_eval_req}).
     * Released by {@link InputSet#close()} or with the program.
     */
    public InputSet newInputSet() {
        if (closed) throw new IllegalStateException("[ane.surface] the program is closed");
        InputSet set = new InputSet();
        try (AutoreleasePool pool = objc.pool()) {
            List<MemorySegment> inputObjects = new ArrayList<>(inputs.size());
            for (AneSurface own : inputs) {
                MemorySegment surface = IOSurfaces.create(own.allocBytes());
                set.inputs.add(new AneSurface(new SurfacePlan.Slot(own.index(), new SurfaceSpec(own.name(), own.bytes()), own.allocBytes()), surface));
                inputObjects.add(AneIOSurfaceObject.objectWithIOSurface(surface));
            }
            List<MemorySegment> outputObjects = new ArrayList<>(outputs.size());
            for (AneSurface out : outputs) outputObjects.add(AneIOSurfaceObject.objectWithIOSurface(out.ref()));
            set.request = objc.retain(AneRequest.requestWithInputs(inputObjects, outputObjects));
        } catch (RuntimeException e) {
            set.release();
            throw e;
        }
        inputSets.add(set);
        return set;
    }

    /** Input surfaces of their own and a request binding them to the program's outputs ({@link #newInputSet()}). */
    public final class InputSet implements AutoCloseable {
        private final List<AneSurface> inputs = new ArrayList<>();
        private MemorySegment request;
        private boolean released;

        private InputSet() {}

        /** Inputs in binding order. */
        public List<AneSurface> inputs() { return List.copyOf(inputs); }

        public AneSurface input(String name) { return find(inputs, name, "input"); }

        /** Runs the program on these inputs into the program's output surfaces; inputs must be written and unlocked. */
        public void evaluate() {
            if (released || closed) throw new IllegalStateException("[ane.evaluate] the input set or its program is closed");
            for (AneSurface s : inputs) checkUnlocked(s);
            for (AneSurface s : outputs) checkUnlocked(s);
            try (AutoreleasePool pool = objc.pool()) {
                model.evaluateWithQoS(AneInMemoryModel.QOS_DEFAULT, Foundation.emptyDictionary(), request);
            }
        }

        /** Releases the request and the surfaces. Idempotent. */
        @Override
        public void close() {
            if (!closed) inputSets.remove(this);
            release();
        }

        private void release() {
            if (released) return;
            released = true;
            try (AutoreleasePool pool = objc.pool()) {
                if (request != null) objc.release(request);
                for (AneSurface s : inputs) IOSurfaces.release(s.ref());
            }
        }
    }

    private static void checkUnlocked(AneSurface s) {
        if (s.isLocked()) throw new IllegalStateException("[ane.evaluate] surface " + s.name() + " is still locked; close its Access first");
    }

    /** Wall time of {@code compileWithQoS:options:error:}. */
    public long compileNanos() { return compileNanos; }

    /** Wall time of {@code loadWithQoS:options:error:}. */
    public long loadNanos() { return loadNanos; }

    /** Whether the compiler's outputs were restored from the compile cache before compile. */
    public boolean cacheHit() { return cacheHit; }

    /** The content-derived id from {@code hexStringIdentifier} (names the temp dir; a cache key). */
    public String hexId() { return hexId; }

    /** {@code NSTemporaryDirectory()/<hexId>}: model.mil, weights/, and what the compiler leaves there. */
    public Path directory() { return directory; }

    /** Inputs in binding order (alphabetical by MIL name). */
    public List<AneSurface> inputs() { return List.copyOf(inputs); }

    /** Outputs in binding order (alphabetical by MIL name). */
    public List<AneSurface> outputs() { return List.copyOf(outputs); }

    public AneSurface input(String name) { return find(inputs, name, "input"); }

    public AneSurface output(String name) { return find(outputs, name, "output"); }

    private static AneSurface find(List<AneSurface> list, String name, String role) {
        for (AneSurface s : list) if (s.name().equals(name)) return s;
        throw new IllegalArgumentException("[ane.surface] no " + role + " named \"" + name + "\"; have "
                + list.stream().map(AneSurface::name).toList());
    }

    /**
     * 9. Unloads, releases the request, the model and the surfaces, and deletes the temp dir (when no other
     * program shares it), as maderix's free does. Idempotent; an unload error is thrown after cleanup.
     */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        AneException failure = null;
        try (AutoreleasePool pool = objc.pool()) {
            if (loaded) {
                try {
                    model.unloadWithQoS(AneInMemoryModel.QOS_DEFAULT);
                } catch (AneException e) {
                    failure = e;
                }
            }
            for (InputSet set : inputSets) set.release();
            if (request != null) objc.release(request);
            if (model != null) objc.release(model.id());
            for (AneSurface s : inputs) IOSurfaces.release(s.ref());
            for (AneSurface s : outputs) IOSurfaces.release(s.ref());
        }
        if (directory != null) releaseDirectory(directory);
        if (failure != null) throw failure;
    }

    /** Longest identifier accepted: APFS and HFS+ allow 255 bytes per name; Apple's is 194 characters. */
    static final int MAX_IDENTIFIER_BYTES = 255;

    /**
     * The identifier as the name of {@code NSTemporaryDirectory()/<identifier>}, checked only for what would make it
     * unusable as one path component (hardware-proven callers use it as it comes; see
     * {@link AneInMemoryModel#hexStringIdentifier}).
     */
    static String directoryName(String id) {
        String why = id == null ? "it is nil"
                : id.isEmpty() ? "it is empty"
                : id.equals(".") || id.equals("..") ? "it is \"" + id + "\""
                : id.indexOf('/') >= 0 ? "it contains '/'"
                : id.indexOf('\0') >= 0 ? "it contains a NUL character"
                : id.getBytes(StandardCharsets.UTF_8).length > MAX_IDENTIFIER_BYTES
                        ? "it is " + id.getBytes(StandardCharsets.UTF_8).length + " bytes, over the " + MAX_IDENTIFIER_BYTES + "-byte name limit"
                : null;
        if (why == null) return id;
        String shown = id == null ? "nil" : "\"" + (id.length() > 80 ? id.substring(0, 80) + "…" : id).replace("\0", "\\0") + "\"";
        throw new AneException("[ane] hexStringIdentifier returned " + shown + ", which cannot name the model directory ("
                + why + "); the private API changed in this macOS version: please report it with the output of `ane4j doctor`");
    }

    // --- weights and files ---

    /** "@model_path/weights/w.bin" → "weights/w.bin", refusing anything that would leave the model directory. */
    static Path relativeWeightPath(String key) {
        if (!key.startsWith(MODEL_PATH_PREFIX))
            throw new IllegalArgumentException("[ane.weights] key \"" + key + "\" must start with \"" + MODEL_PATH_PREFIX
                    + "\", as in the MIL BLOBFILE path (e.g. @model_path/weights/w.bin)");
        Path rel = Path.of(key.substring(MODEL_PATH_PREFIX.length())).normalize();
        if (rel.isAbsolute() || rel.toString().isEmpty() || rel.startsWith("..") || rel.toString().equals("model.mil"))
            throw new IllegalArgumentException("[ane.weights] key \"" + key + "\" does not name a file inside the model directory");
        return rel;
    }

    /** {path: {"offset": @0, "data": NSData}} in key order, +0. An empty map gives {@code @{}}, never nil. */
    private static MemorySegment weightsDictionary(Map<String, byte[]> weights) {
        Map<MemorySegment, MemorySegment> entries = new LinkedHashMap<>();
        for (Map.Entry<String, byte[]> w : weights.entrySet()) {
            Map<MemorySegment, MemorySegment> entry = new LinkedHashMap<>();
            entry.put(Foundation.string("offset"), Foundation.number(WEIGHT_ENTRY_OFFSET));
            entry.put(Foundation.string("data"), Foundation.data(w.getValue()));
            entries.put(Foundation.string(w.getKey()), Foundation.dictionary(entry));
        }
        return Foundation.dictionary(entries);
    }

    private static void writeFiles(Path dir, byte[] mil, Map<String, byte[]> weights, Map<String, Path> paths) {
        try {
            Files.createDirectories(dir.resolve("weights"));
            Files.write(dir.resolve("model.mil"), mil);
            for (Map.Entry<String, byte[]> w : weights.entrySet()) {
                Path file = dir.resolve(paths.get(w.getKey()));
                Files.createDirectories(file.getParent());
                Files.write(file, w.getValue());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("[ane.compile] cannot write the model files into " + dir + ": " + e.getMessage(), e);
        }
    }

    private static Path acquireDirectory(Path dir) {
        synchronized (DIRECTORIES) {
            DIRECTORIES.merge(dir, 1, Integer::sum);
        }
        return dir;
    }

    private static void releaseDirectory(Path dir) {
        synchronized (DIRECTORIES) {
            int left = DIRECTORIES.merge(dir, -1, Integer::sum);
            if (left > 0) return;
            DIRECTORIES.remove(dir);
            if (!Files.exists(dir)) return;
            try (Stream<Path> walk = Files.walk(dir)) {
                for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
            } catch (IOException e) {
                throw new UncheckedIOException("[ane.close] cannot delete " + dir + ": " + e.getMessage(), e);
            }
        }
    }
}
