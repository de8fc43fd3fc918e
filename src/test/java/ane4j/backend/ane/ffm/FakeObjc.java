package ane4j.backend.ane.ffm;

import ane4j.backend.ane.AneRuntime;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The fake Objective-C runtime of {@code src/test/c/fakeobjc.c}, compiled on demand with the system
 * {@code cc} into {@code target/fakeobjc/}, installed as {@value AneRuntime#LIBRARY_OVERRIDE_PROPERTY}
 * (so production code loads it instead of Apple's libraries), plus bindings of its test controls.
 * Tests call {@link #get()} first; without a C compiler they are skipped with the reason.
 */
public final class FakeObjc {
    static final Path SOURCE = Path.of("src/test/c/fakeobjc.c");
    static final Path LIBRARY = Path.of("target/fakeobjc/libfakeobjc.so").toAbsolutePath();

    private static FakeObjc instance;
    private static String unavailable;

    private final Arena arena = Arena.global();
    private final SymbolLookup lookup;
    private final Linker linker = Linker.nativeLinker();
    private final MethodHandle logCount, logEntry, errorCount, error, liveObjects, liveDescription, poolDepth, reset,
            setFailCompile, setLeakAfter, setMinSurfaceBytes, setAneSubType, setMacos, setTmpdir, setEvaluateHook,
            evaluatingHex, realCompiles, daemonLoads, setIdentifier, setDaemonDir, setRefuseDialect, newProcess, setThrow, setThrowTimes;
    private final MemorySegment hookStub;
    private volatile EvaluateHook hook;
    private volatile Throwable hookFailure;

    /** One line of the fake's log: {@code kind, receiver, selector, arguments, result}. */
    public record Entry(String kind, String receiver, String selector, List<String> args, String result) {
        static Entry parse(String line) {
            String[] f = line.split("\t", -1);
            String[] g = Arrays.copyOf(f, 5);
            for (int i = 0; i < 5; i++) if (g[i] == null) g[i] = "";
            return new Entry(g[0], g[1], g[2], g[3].isEmpty() ? List.of() : List.of(g[3].split("\\|", -1)), g[4]);
        }

        /** A message to one of the private {@code _ANE*} classes or their instances. */
        public boolean isAneSend() {
            return kind.equals("send") && (receiver.startsWith("class:_ANE") || receiver.startsWith("_ANE"));
        }
    }

    /** What the fake's evaluate hands Java: the surfaces of the request, in binding order, at their alloc size. */
    @FunctionalInterface
    public interface EvaluateHook {
        void evaluate(List<MemorySegment> inputs, List<MemorySegment> outputs);
    }

    private FakeObjc() throws ReflectiveOperationException {
        lookup = SymbolLookup.libraryLookup(LIBRARY.toString(), arena);
        logCount = fn("fake_log_count", FunctionDescriptor.of(JAVA_INT));
        logEntry = fn("fake_log_entry", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        errorCount = fn("fake_error_count", FunctionDescriptor.of(JAVA_INT));
        error = fn("fake_error", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        liveObjects = fn("fake_live_objects", FunctionDescriptor.of(JAVA_INT));
        liveDescription = fn("fake_live_description", FunctionDescriptor.of(ADDRESS));
        poolDepth = fn("fake_pool_depth", FunctionDescriptor.of(JAVA_INT));
        reset = fn("fake_reset", FunctionDescriptor.ofVoid());
        setFailCompile = fn("fake_set_fail_compile", FunctionDescriptor.ofVoid(ADDRESS));
        setLeakAfter = fn("fake_set_leak_after", FunctionDescriptor.ofVoid(JAVA_INT));
        setMinSurfaceBytes = fn("fake_set_min_surface_bytes", FunctionDescriptor.ofVoid(JAVA_LONG));
        setAneSubType = fn("fake_set_ane_subtype", FunctionDescriptor.ofVoid(ADDRESS));
        setMacos = fn("fake_set_macos", FunctionDescriptor.ofVoid(JAVA_INT));
        setTmpdir = fn("fake_set_tmpdir", FunctionDescriptor.ofVoid(ADDRESS));
        setEvaluateHook = fn("fake_set_evaluate_hook", FunctionDescriptor.ofVoid(ADDRESS));
        evaluatingHex = fn("fake_evaluating_hex", FunctionDescriptor.of(ADDRESS));
        realCompiles = fn("fake_real_compiles", FunctionDescriptor.of(JAVA_INT));
        daemonLoads = fn("fake_daemon_loads", FunctionDescriptor.of(JAVA_INT));
        setDaemonDir = fn("fake_set_daemon_dir", FunctionDescriptor.ofVoid(ADDRESS));
        setRefuseDialect = fn("fake_set_refuse_dialect", FunctionDescriptor.ofVoid(ADDRESS));
        newProcess = fn("fake_new_process", FunctionDescriptor.ofVoid());
        setThrow = fn("fake_set_throw", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
        setThrowTimes = fn("fake_set_throw_times", FunctionDescriptor.ofVoid(JAVA_INT));
        setIdentifier = fn("fake_set_identifier", FunctionDescriptor.ofVoid(ADDRESS));
        // void hook(int nin, void **inBases, long long *inSizes, int nout, void **outBases, long long *outSizes)
        MethodHandle target = MethodHandles.lookup().findVirtual(FakeObjc.class, "onEvaluate",
                MethodType.methodType(void.class, int.class, MemorySegment.class, MemorySegment.class,
                        int.class, MemorySegment.class, MemorySegment.class)).bindTo(this);
        hookStub = linker.upcallStub(target,
                FunctionDescriptor.ofVoid(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS), arena);
    }

    /** The fake, built and installed; skips the calling test when it cannot be built. */
    public static synchronized FakeObjc get() {
        if (instance == null && unavailable == null) {
            try {
                build();
                System.setProperty(AneRuntime.LIBRARY_OVERRIDE_PROPERTY, LIBRARY.toString());
                instance = new FakeObjc();
            } catch (Exception e) {
                unavailable = e.getMessage();
            }
        }
        assumeTrue(instance != null, () -> "fake Objective-C runtime unavailable: " + unavailable);
        if (!LIBRARY.toString().equals(ObjC.get().origin()))
            throw new IllegalStateException("ObjC was loaded from " + ObjC.get().origin() + " before the fake was installed");
        instance.reset();
        return instance;
    }

    private static void build() throws IOException, InterruptedException {
        if (Files.exists(LIBRARY) && Files.getLastModifiedTime(LIBRARY).compareTo(Files.getLastModifiedTime(SOURCE)) > 0) return;
        Files.createDirectories(LIBRARY.getParent());
        Path log = LIBRARY.resolveSibling("cc.log");
        Process cc;
        try {
            cc = new ProcessBuilder("cc", "-shared", "-fPIC", "-O1", "-Wall", "-o", LIBRARY.toString(), SOURCE.toString())
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        } catch (IOException e) {
            throw new IOException("no C compiler: `cc` could not be started (" + e.getMessage() + "); install gcc or clang");
        }
        if (!cc.waitFor(120, TimeUnit.SECONDS) || cc.exitValue() != 0)
            throw new IOException("cc failed to build " + SOURCE + ": " + Files.readString(log));
    }

    private MethodHandle fn(String name, FunctionDescriptor d) {
        return linker.downcallHandle(lookup.find(name).orElseThrow(), d);
    }

    @SuppressWarnings("unused") // the upcall target
    private void onEvaluate(int nin, MemorySegment inBases, MemorySegment inSizes, int nout, MemorySegment outBases, MemorySegment outSizes) {
        EvaluateHook h = hook;
        if (h == null) return;
        try {
            h.evaluate(surfaces(nin, inBases, inSizes), surfaces(nout, outBases, outSizes));
        } catch (Throwable t) {   // an exception escaping an upcall would abort the JVM
            if (hookFailure == null) hookFailure = t;
        }
    }

    private static List<MemorySegment> surfaces(int n, MemorySegment bases, MemorySegment sizes) {
        MemorySegment b = bases.reinterpret(ADDRESS.byteSize() * n), s = sizes.reinterpret(8L * n);
        List<MemorySegment> list = new ArrayList<>(n);
        for (int i = 0; i < n; i++) list.add(b.getAtIndex(ADDRESS, i).reinterpret(s.getAtIndex(JAVA_LONG, i)));
        return list;
    }

    private static String string(MemorySegment p) {
        return p.equals(MemorySegment.NULL) ? null : p.reinterpret(Long.MAX_VALUE).getString(0);
    }

    private static RuntimeException fail(Throwable t) {
        return t instanceof RuntimeException r ? r : new IllegalStateException(t);
    }

    /**
     * Clears the log, errors and knobs, and forgets objects created so far (called by {@link #get()}); aned's cache of
     * compiled programs starts empty in a new directory, unless {@code $FAKE_ANED_DIR} names one (a second process).
     */
    public void reset() {
        hook = null;
        hookFailure = null;
        try {
            reset.invokeExact();
            setEvaluateHook.invokeExact(hookStub);
        } catch (Throwable t) {
            throw fail(t);
        }
        if (System.getenv("FAKE_ANED_DIR") == null) {
            try {
                Files.createDirectories(LIBRARY.getParent());
                daemonDir = Files.createTempDirectory(LIBRARY.getParent(), "aned-");
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            setDaemonDir(daemonDir);
        } else {
            daemonDir = Path.of(System.getenv("FAKE_ANED_DIR"));
        }
    }

    private Path daemonDir;

    /** Where the fake aned keeps compiled programs (one directory per identifier). */
    public Path daemonDir() { return daemonDir; }

    /** Points the fake aned at another cache directory (e.g. one a second process shares). */
    public void setDaemonDir(Path dir) {
        try (Arena a = Arena.ofConfined()) {
            setDaemonDir.invokeExact(a.allocateFrom(dir.toAbsolutePath().toString()));
        } catch (Throwable t) {
            throw fail(t);
        }
        daemonDir = dir;
    }

    /** Makes compiles of MIL in this dialect ({@code "ios18"}, {@code "ios16"}) fail as ANECCompile() does (null: off). */
    public void setRefuseDialect(String opset) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment text = opset == null ? MemorySegment.NULL : a.allocateFrom(opset);
            setRefuseDialect.invokeExact(text);
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** Makes every send of {@code selector} raise an Objective-C exception with this name and reason (null: off). */
    public void setThrow(String selector, String name, String reason) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = selector == null ? MemorySegment.NULL : a.allocateFrom(selector);
            MemorySegment n = a.allocateFrom(name == null ? "" : name), r = a.allocateFrom(reason == null ? "" : reason);
            setThrow.invokeExact(s, n, r);
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** Only the next {@code n} sends of {@link #setThrow}'s selector raise; later ones run normally (call after setThrow). */
    public void setThrowTimes(int n) {
        try {
            setThrowTimes.invokeExact(n);
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** A fresh process as far as the compiler leak goes (its count restarts); aned and its cache stay. */
    public void newProcess() {
        try {
            newProcess.invokeExact();
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    public List<Entry> log() {
        try {
            int n = (int) logCount.invokeExact();
            List<Entry> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) out.add(Entry.parse(string((MemorySegment) logEntry.invokeExact(i))));
            return out;
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** Contract violations the fake detected (each also makes the call fail the way the framework would). */
    public List<String> errors() {
        try {
            int n = (int) errorCount.invokeExact();
            List<String> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) out.add(string((MemorySegment) error.invokeExact(i)));
            return out;
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** Objects created since the last reset that are still alive (retain count above zero). */
    public int liveObjects() {
        try {
            return (int) liveObjects.invokeExact();
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    public String liveDescription() {
        try {
            return string((MemorySegment) liveDescription.invokeExact());
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    public int poolDepth() {
        try {
            return (int) poolDepth.invokeExact();
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** Makes every compile return NO with an NSError whose localizedDescription is {@code message} (null: off). */
    public void setFailCompile(String message) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment text = message == null ? MemorySegment.NULL : a.allocateFrom(message);
            setFailCompile.invokeExact(text);
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** Emulates the compiler leak: compiles after the first {@code compiles} successful ones fail. */
    public void setLeakAfter(int compiles) {
        try {
            setLeakAfter.invokeExact(compiles);
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** Makes {@code hexStringIdentifier} return {@code id} instead of the descriptor's identifier (null: off). */
    public void setIdentifier(String id) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment text = id == null ? MemorySegment.NULL : a.allocateFrom(id);
            setIdentifier.invokeExact(text);
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** Makes evaluate fail with 0x1d for surfaces smaller than {@code bytes} (0: off). */
    public void setMinSurfaceBytes(long bytes) {
        try {
            setMinSurfaceBytes.invokeExact(bytes);
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** The fake's OS profile: 26 (macOS 15/26 rules, the default) or 27 (adds H1-H4 of fakeobjc.c). */
    public void setMacos(int major) {
        try {
            setMacos.invokeExact(major);
        } catch (Throwable t) {
            throw new RuntimeException(t);
        }
    }

    public void setAneSubType(String subType) {
        try (Arena a = Arena.ofConfined()) {
            setAneSubType.invokeExact(a.allocateFrom(subType));
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** What {@code NSTemporaryDirectory()} returns (with a trailing slash added, like Apple's). */
    public void setTmpdir(Path dir) {
        try (Arena a = Arena.ofConfined()) {
            setTmpdir.invokeExact(a.allocateFrom(dir.toAbsolutePath().toString()));
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** The first exception the evaluate hook threw since the last reset (it is caught: it must not unwind into C). */
    public Throwable hookFailure() { return hookFailure; }

    /** The hex id of the model whose evaluate is calling the hook (null outside the hook). */
    public String evaluatingHex() {
        try {
            return string((MemorySegment) evaluatingHex.invokeExact());
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** Compiles since the last reset. */
    public int realCompiles() {
        try {
            return (int) realCompiles.invokeExact();
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** Loads since the last reset that aned served from its cache, for a model object that did not compile. */
    public int daemonLoads() {
        try {
            return (int) daemonLoads.invokeExact();
        } catch (Throwable t) {
            throw fail(t);
        }
    }

    /** Java code run by the fake's evaluate over the request's surfaces (null: evaluate does nothing). */
    public void setEvaluateHook(EvaluateHook hook) {
        this.hook = hook;
    }
}
