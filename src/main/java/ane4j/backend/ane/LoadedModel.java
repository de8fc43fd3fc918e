package ane4j.backend.ane;

import ane4j.backend.FrameworkException;
import ane4j.backend.AneException;
import ane4j.backend.ane.ffm.AneInMemoryModel;
import ane4j.backend.ane.ffm.AneInMemoryModelDescriptor;
import ane4j.backend.ane.ffm.AutoreleasePool;
import ane4j.backend.ane.ffm.Foundation;
import ane4j.backend.ane.ffm.ObjC;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * One {@code _ANEInMemoryModel} loaded on the ANE, shared by every {@link AneProgram} of this process with the same
 * identifier (same MIL, weights and options), each of which has its own surfaces and requests on it.
 *
 * <p>Getting it loaded: if Apple's aned daemon already has the compiled program ({@code compiledModelExists}), it is
 * loaded with {@code loadWithQoS} alone — the daemon caches compiled programs by identifier outside the client process
 * (decompiled {@code -[_ANEInMemoryModel loadWithQoS:options:error:]}, docs/ane-audit.md F2, asks
 * {@code compiledModelExistsMatchingHash:} and loads with {@code isCompiledModelCached:YES}; the public probe ane_cache_probe2.m:
 * load without compile 1.5 ms vs 14 ms; maderix PR #22 skips {@code compileWithQoS} on a hit). Otherwise it is compiled
 * ({@code compileWithQoS} always recompiles: {@code isCompiledModelCached:0}) and then loaded; only that counts as a
 * compile. A failed cache load falls back to the compile.
 *
 * <p>Sharing also keeps the model directory alive: {@code unloadWithQoS} deletes
 * {@code NSTemporaryDirectory()/<identifier>} itself (same decompile, docs/ane-audit.md F13), so it is sent once, when the last
 * program using the model closes.
 */
final class LoadedModel {
    /** How a program got its model. */
    enum Source { COMPILED, DAEMON_CACHE, SHARED }

    private static final Map<String, LoadedModel> LIVE = new HashMap<>();   // by identifier; guarded by itself

    final ObjC objc;
    final AneInMemoryModel model;   // retained (+1)
    final String identifier;
    final Path directory;
    final Source source;           // COMPILED or DAEMON_CACHE: how it was first loaded
    final long compileNanos, loadNanos;
    private int users;
    /** After the last release: whether the directory was still there after {@code unloadWithQoS} (null before). */
    volatile Boolean unloadLeftDirectory;

    private LoadedModel(ObjC objc, AneInMemoryModel model, String identifier, Path directory, Source source,
                        long compileNanos, long loadNanos) {
        this.objc = objc;
        this.model = model;
        this.identifier = identifier;
        this.directory = directory;
        this.source = source;
        this.compileNanos = compileNanos;
        this.loadNanos = loadNanos;
    }

    /** A model and how this caller got it. */
    record Use(LoadedModel model, Source source) {}

    /** What a real compile costs the caller: one compile from the budgets, taken just before {@code compileWithQoS}. */
    interface CompileCharge {
        /** Throws (e.g. {@link ane4j.backend.CompileBudgetExceededException}) when no compile is left. */
        void take();

        /** The exception to throw for a failed compile (the compiler leak is told apart here). */
        RuntimeException classify(AneException failure);
    }

    /**
     * The loaded model for this MIL and weights (keys sorted, {@code relativePaths} their files under the model
     * directory): a live one with the same identifier, else one loaded from the daemon's cache, else one compiled.
     *
     * @param useDaemonCache false: always compile when no live program shares it (to measure compiles)
     */
    static Use acquire(byte[] mil, Map<String, byte[]> weights, Map<String, Path> relativePaths,
                       CompileCharge charge, boolean useDaemonCache) {
        ObjC objc = ObjC.get();
        synchronized (LIVE) {
            try (AutoreleasePool pool = objc.pool()) {
                // 1. descriptor from the MIL bytes (NSData, not NSString) and {path: {offset, data}}; 2. the model (+0)
                MemorySegment descriptor = AneInMemoryModelDescriptor.modelWithMILText(Foundation.data(mil), weightsDictionary(weights));
                AneInMemoryModel fresh = AneInMemoryModel.inMemoryModelWithDescriptor(descriptor);
                // 3. the identifier names <NSTemporaryDirectory>/<identifier>/
                String id = AneProgram.directoryName(fresh.hexStringIdentifier());
                LoadedModel live = LIVE.get(id);
                if (live != null) {
                    live.users++;
                    return new Use(live, Source.SHARED);
                }
                Path dir = Path.of(Foundation.temporaryDirectory(), id);
                objc.retain(fresh.id());
                try {
                    // model.mil and weights/... before compile or load, as maderix io.h and the cache probe write them
                    writeFiles(dir, mil, weights, relativePaths);
                    LoadedModel m = useDaemonCache && fresh.compiledModelExists() ? loadCached(objc, fresh, id, dir) : null;
                    if (m == null) m = compileAndLoad(objc, fresh, id, dir, charge);
                    m.users = 1;
                    LIVE.put(id, m);
                    return new Use(m, m.source);
                } catch (RuntimeException e) {
                    objc.release(fresh.id());
                    deleteQuietly(dir);
                    throw e;
                }
            }
        }
    }

    /** 5. {@code loadWithQoS} of a program the daemon has; null when that load fails (the caller compiles instead). */
    private static LoadedModel loadCached(ObjC objc, AneInMemoryModel model, String id, Path dir) {
        long t0 = System.nanoTime();
        try {
            model.loadWithQoS(AneInMemoryModel.QOS_DEFAULT, Foundation.emptyDictionary());
        } catch (FrameworkException e) {
            throw e;
        } catch (AneException e) {
            return null;
        }
        return new LoadedModel(objc, model, id, dir, Source.DAEMON_CACHE, 0, System.nanoTime() - t0);
    }

    /** 4. compile (a failure late in the process is the compiler leak), 5. load. */
    private static LoadedModel compileAndLoad(ObjC objc, AneInMemoryModel model, String id, Path dir, CompileCharge charge) {
        charge.take();
        long t0 = System.nanoTime();
        try {
            model.compileWithQoS(AneInMemoryModel.QOS_DEFAULT, Foundation.emptyDictionary());
        } catch (FrameworkException e) {
            throw e;   // an exception is not the leak's symptom
        } catch (AneException e) {
            throw charge.classify(e);
        }
        long t1 = System.nanoTime();
        model.loadWithQoS(AneInMemoryModel.QOS_DEFAULT, Foundation.emptyDictionary());
        return new LoadedModel(objc, model, id, dir, Source.COMPILED, t1 - t0, System.nanoTime() - t1);
    }

    /** 8. Runs one request; evaluations of programs sharing this model are serialised. */
    void evaluate(MemorySegment request) {
        synchronized (this) {
            try (AutoreleasePool pool = objc.pool()) {
                model.evaluateWithQoS(AneInMemoryModel.QOS_DEFAULT, Foundation.emptyDictionary(), request);
            }
        }
    }

    /**
     * Drops one user; the last one unloads (which deletes the model directory: decompiled {@code unloadWithQoS}),
     * releases the model and removes what is left of the directory. An unload error is thrown after the cleanup.
     */
    void release() {
        synchronized (LIVE) {
            if (--users > 0) return;
            LIVE.remove(identifier);
            AneException failure = null;
            try (AutoreleasePool pool = objc.pool()) {
                try {
                    model.unloadWithQoS(AneInMemoryModel.QOS_DEFAULT);
                } catch (AneException e) {
                    failure = e;
                }
                objc.release(model.id());
            }
            unloadLeftDirectory = Files.exists(directory);   // what ane4j doctor reports for F13
            if (unloadLeftDirectory) deleteTree(directory);
            if (failure != null) throw failure;
        }
    }

    /** {path: {"offset": @0, "data": NSData}} in key order, +0. An empty map gives {@code @{}}, never nil. */
    private static MemorySegment weightsDictionary(Map<String, byte[]> weights) {
        Map<MemorySegment, MemorySegment> entries = new LinkedHashMap<>();
        for (Map.Entry<String, byte[]> w : weights.entrySet()) {
            Map<MemorySegment, MemorySegment> entry = new LinkedHashMap<>();
            entry.put(Foundation.string("offset"), Foundation.number(AneProgram.WEIGHT_ENTRY_OFFSET));
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

    private static void deleteTree(Path dir) {
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        } catch (IOException e) {
            throw new UncheckedIOException("[ane.close] cannot delete " + dir + ": " + e.getMessage(), e);
        }
    }

    private static void deleteQuietly(Path dir) {
        try {
            if (Files.exists(dir)) deleteTree(dir);
        } catch (UncheckedIOException ignored) {
            // the first failure is the one to report
        }
    }
}
