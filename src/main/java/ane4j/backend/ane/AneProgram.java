package ane4j.backend.ane;

import ane4j.backend.AneException;
import ane4j.backend.ane.ffm.AneIOSurfaceObject;
import ane4j.backend.ane.ffm.AneInMemoryModel;
import ane4j.backend.ane.ffm.AneRequest;
import ane4j.backend.ane.ffm.AutoreleasePool;
import ane4j.backend.ane.ffm.IOSurfaces;
import ane4j.backend.ane.ffm.ObjC;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A MIL program compiled and loaded on the ANE, with its input and output IOSurfaces and its request:
 * the sequence of docs/ane-facts.md §2.2 (steps 1–9) and the temp-directory protocol of §2.3. Not thread-safe.
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
    /** The prefix of every weight path in MIL {@code BLOBFILE(path=...)} and in the weights dictionary (docs/ane-facts.md §2.3). */
    public static final String MODEL_PATH_PREFIX = "@model_path/";
    /** The weights-dictionary entry: {@code {"offset": @0, "data": NSData}}; every maderix caller after inmem_basic uses offset 0. */
    static final int WEIGHT_ENTRY_OFFSET = 0;

    private final ObjC objc;
    private LoadedModel shared;           // one user of it is us
    private LoadedModel.Source source;
    private MemorySegment request;        // retained (+1) by us
    private final List<AneSurface> inputs = new ArrayList<>();
    private final List<AneSurface> outputs = new ArrayList<>();
    private final List<InputSet> inputSets = new ArrayList<>();
    private boolean closed;

    /** How a program got its loaded model. */
    public enum Origin {
        /** {@code compileWithQoS} then {@code loadWithQoS}: one compile, counted against the budget. */
        COMPILED,
        /** {@code loadWithQoS} alone: the aned daemon had the compiled program (e.g. from an earlier process). */
        DAEMON_CACHE,
        /** an identical program live in this process already had it loaded: no compile, no load. */
        SHARED
    }

    private AneProgram(ObjC objc) {
        this.objc = objc;
    }

    /** {@link #compile(String, Map, List, List, CompileBudget)} against the process budget. */
    public static AneProgram compile(String milText, Map<String, byte[]> weightFiles,
                                     List<SurfaceSpec> inputs, List<SurfaceSpec> outputs) {
        return compile(milText, weightFiles, inputs, outputs, CompileBudget.process());
    }

    /**
     * Loads {@code milText} with its weight files (keys as in the MIL, {@code "@model_path/weights/x.bin"}, values the
     * MILBlob file bytes) and allocates its surfaces ({@link SurfacePlan}): shared with a live identical program, else
     * from the aned daemon's cache, else compiled, taking one compile from {@code budget} just before
     * {@code compileWithQoS} ({@link LoadedModel}). Errors carry the failing selector and Apple's message.
     */
    public static AneProgram compile(String milText, Map<String, byte[]> weightFiles,
                                     List<SurfaceSpec> inputs, List<SurfaceSpec> outputs, CompileBudget budget) {
        return compile(milText, weightFiles, inputs, outputs, budget, () -> {}, true);
    }

    /**
     * As {@link #compile(String, Map, List, List, CompileBudget)}; a real compile also runs {@code beforeCompile} first
     * (the backend's own budget), and {@code useDaemonCache} false compiles even when the daemon has the program.
     */
    public static AneProgram compile(String milText, Map<String, byte[]> weightFiles,
                                     List<SurfaceSpec> inputs, List<SurfaceSpec> outputs, CompileBudget budget,
                                     Runnable beforeCompile, boolean useDaemonCache) {
        return compile(milText, weightFiles, inputs, outputs, budget, beforeCompile, useDaemonCache, false);
    }

    /** As above; {@code exactSurfaces}: each surface its own tensor's size ({@link SurfacePlan#plan(String, List, boolean)}). */
    public static AneProgram compile(String milText, Map<String, byte[]> weightFiles,
                                     List<SurfaceSpec> inputs, List<SurfaceSpec> outputs, CompileBudget budget,
                                     Runnable beforeCompile, boolean useDaemonCache, boolean exactSurfaces) {
        byte[] mil = milText.getBytes(StandardCharsets.UTF_8);
        Map<String, byte[]> weights = new TreeMap<>(weightFiles);   // sorted, as the descriptor hashes them
        Map<String, Path> weightPaths = new LinkedHashMap<>();
        for (String key : weights.keySet()) weightPaths.put(key, relativeWeightPath(key));
        List<SurfacePlan.Slot> inputSlots = SurfacePlan.plan("input", inputs, exactSurfaces);
        List<SurfacePlan.Slot> outputSlots = SurfacePlan.plan("output", outputs, exactSurfaces);
        LoadedModel.CompileCharge charge = new LoadedModel.CompileCharge() {
            @Override public void take() {
                beforeCompile.run();
                budget.acquire();
            }

            @Override public RuntimeException classify(AneException failure) { return budget.classifyFailure(failure); }
        };

        ObjC objc = ObjC.get();
        AneProgram p = new AneProgram(objc);
        LoadedModel.Use use = LoadedModel.acquire(mil, weights, weightPaths, charge, useDaemonCache);
        p.shared = use.model();
        p.source = use.source();
        try {
            try (AutoreleasePool pool = objc.pool()) {
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
        shared.evaluate(request);
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
            shared.evaluate(request);
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

    /** Wall time of {@code compileWithQoS:options:error:} for the shared model (0 when it came from the daemon's cache). */
    public long compileNanos() { return source == LoadedModel.Source.COMPILED ? shared.compileNanos : 0; }

    /** Wall time of {@code loadWithQoS:options:error:} (0 for a program that shared a loaded model). */
    public long loadNanos() { return source == LoadedModel.Source.SHARED ? 0 : shared.loadNanos; }

    /** How this program got its loaded model: compiled, from the daemon's cache, or shared with a live identical one. */
    public Origin origin() { return Origin.valueOf(source.name()); }

    /**
     * {@code hexStringIdentifier}: {@code <SHA-256 MIL>_<SHA-256 weights>_<SHA-256 options>} as Apple's descriptor
     * builds it; names the model directory and keys the daemon's cache of compiled programs.
     */
    public String identifier() { return shared.identifier; }

    /**
     * After the last program using the loaded model closed: whether {@code NSTemporaryDirectory()/<identifier>} was still
     * there after {@code unloadWithQoS} (ane4j removes it then); null while it is in use (docs/ane-audit.md F13).
     */
    public Boolean unloadLeftDirectory() { return shared.unloadLeftDirectory; }

    /** {@code NSTemporaryDirectory()/<identifier>}: model.mil, weights/, and what the compiler leaves there. */
    public Path directory() { return shared.directory; }

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
     * 9. Releases the request, the input sets and the surfaces, and drops this program's use of the loaded model: the
     * last user unloads it, which deletes the model directory (docs/ane-audit.md F13). Idempotent; an unload error is thrown
     * after cleanup.
     */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        try (AutoreleasePool pool = objc.pool()) {
            for (InputSet set : inputSets) set.release();
            if (request != null) objc.release(request);
            for (AneSurface s : inputs) IOSurfaces.release(s.ref());
            for (AneSurface s : outputs) IOSurfaces.release(s.ref());
        }
        if (shared != null) shared.release();
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
}
