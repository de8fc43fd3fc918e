package ane4j.backend.ane;

import ane4j.backend.MacOs;
import ane4j.backend.FrameworkException;
import ane4j.backend.AneException;
import ane4j.backend.BackendException;
import ane4j.backend.ChipDescription;
import ane4j.backend.CountingBackend;
import ane4j.backend.Kernel;
import ane4j.backend.TensorSpec;
import ane4j.mil.DType;
import ane4j.mil.Function;
import ane4j.mil.MilWriter;
import ane4j.mil.Program;
import ane4j.mil.Value;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The Apple Neural Engine backend: writes the function as MIL text in the chip's dialect, hands it with its MILBlob weight
 * files to {@code _ANEInMemoryModel} ({@link AneProgram}), and returns an {@link AneKernel} over the model's IOSurfaces.
 * A kernel whose program is live in this process already shares its loaded model; one that Apple's aned daemon has
 * compiled before (in any process: a restarted worker, a second run) is loaded without compiling; only the rest is
 * compiled ({@link LoadedModel}, {@link AneKernel#origin()}). Only real compiles count against the budget
 * ({@value CountingBackend#BUDGET_PROPERTY}, default {@value #DEFAULT_BUDGET}; {@link #compileCount()}); a compile that
 * fails after {@link Options#leakSuspectAfter} earlier ones is reported as
 * {@link ane4j.backend.CompileBudgetExceededException}, because that is how Apple's compiler leak fails.
 *
 * <p>MIL dialect: ios18 first on every chip; on M1/M2 (where the evidence conflicts, docs/ane-audit.md F7) ios16 after a failed
 * compile, per program (ane-audit-2 R1): the one that compiled last is tried first, the other after a failure, and each
 * kernel records its own ({@link #dialectChoice()}, {@link AneKernel#dialect()}).
 *
 * <p>Knobs: {@code -Dane4j.milDialect=1.0|1.3} forces one dialect;
 * {@code -Dane4j.ane.daemonCache=false} compiles even what the daemon has (to measure compiles). On anything but macOS
 * {@link #isAvailable()} is false and no FFM class is loaded.
 */
public final class AneBackend extends CountingBackend {
    public static final long DEFAULT_BUDGET = CompileBudget.DEFAULT_BUDGET;

    /**
     * @param compileBudget    null: {@code -Dane4j.compileBudget}, else {@value #DEFAULT_BUDGET}
     * @param dialect          null: {@code -Dane4j.milDialect}, else ios18 first and, on M1/M2, ios16 if that fails to compile
     * @param daemonCache      null or true: load what the aned daemon has compiled without compiling it; false: compile
     * @param leakSuspectAfter a compile failing after this many earlier ones is taken for the compiler leak
     */
    public record Options(Long compileBudget, MilDialect dialect, Boolean daemonCache, int leakSuspectAfter) {
        public static Options fromSystemProperties() {
            String d = System.getProperty(MilDialect.PROPERTY);
            return new Options(null, d == null || d.isBlank() ? null : MilDialect.parse(d),
                    daemonCacheFromProperty(), CompileBudget.LEAK_SUSPECT_AFTER);
        }

        public Options withCompileBudget(long b) { return new Options(b, dialect, daemonCache, leakSuspectAfter); }
        public Options withDialect(MilDialect d) { return new Options(compileBudget, d, daemonCache, leakSuspectAfter); }
        public Options withDaemonCache(boolean on) { return new Options(compileBudget, dialect, on, leakSuspectAfter); }
        public Options withLeakSuspectAfter(int n) { return new Options(compileBudget, dialect, daemonCache, n); }

        boolean usesDaemonCache() { return daemonCache == null || daemonCache; }
    }

    public static final String DAEMON_CACHE_PROPERTY = "ane4j.ane.daemonCache";

    static Boolean daemonCacheFromProperty() {
        String on = System.getProperty(DAEMON_CACHE_PROPERTY, "true").strip().toLowerCase(java.util.Locale.ROOT);
        if (!on.equals("true") && !on.equals("false"))
            throw new IllegalArgumentException("[" + DAEMON_CACHE_PROPERTY + "] \"" + on + "\" must be true or false");
        return on.equals("true");
    }

    private final Options options;
    private final CompileBudget leakWatch;   // counts native compiles to classify failures; the budget is CountingBackend's
    private volatile MilDialect dialect;          // settled: forced, or the one that compiled
    private volatile String dialectReason;
    private final java.util.concurrent.atomic.AtomicLong daemonCacheLoads = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong sharedLoads = new java.util.concurrent.atomic.AtomicLong();
    private volatile java.util.Optional<ane4j.chip.Chip> chipFamily;
    private volatile boolean chipRulesChecked = true;

    public AneBackend() { this(Options.fromSystemProperties()); }

    /** The system properties' options with the settings' compile budget ({@link ane4j.backend.Backends#create}). */
    public AneBackend(ane4j.backend.Backends.Settings s) {
        this(s.compileBudget() == null ? Options.fromSystemProperties() : Options.fromSystemProperties().withCompileBudget(s.compileBudget()));
    }

    public AneBackend(Options options) {
        super(options.compileBudget(), DEFAULT_BUDGET, false);
        this.options = options;
        this.leakWatch = new CompileBudget(Integer.MAX_VALUE, options.leakSuspectAfter());
        MilDialect forced = options.dialect() != null ? options.dialect() : MilDialect.forced();
        this.dialect = forced;
        this.forced = forced != null;
        if (forced != null) dialectReason = options.dialect() != null ? "set by AneBackend.Options" : "forced by -D" + MilDialect.PROPERTY;
    }

    public Options options() { return options; }

    @Override public String name() { return "ane"; }

    /** Whether the ANE framework loads here; never throws. */
    @Override
    public boolean isAvailable() {
        try {
            return AneRuntime.isAvailable();
        } catch (Throwable t) {
            return false;
        }
    }

    /** Why the ANE is not available (null when it is). */
    public String unavailableReason() { return isAvailable() ? null : AneRuntime.unavailableReason(); }

    /**
     * The MIL dialect compiles use: the option or {@value MilDialect#PROPERTY}, else the one that compiled in this
     * session, else the first to try (1.3/ios18; on M1/M2 ios16 follows if it fails: {@link #dialectChoice()}).
     */
    public MilDialect dialect() {
        MilDialect d = dialect;
        if (d != null) return d;
        requireAvailable();
        return Native.firstDialect();
    }

    /**
     * Which dialect this session compiles in and why, one line for {@code doctor}: e.g. {@code "1.3/ios18: compiled
     * on M1 (h13g), tried first from now on, …"}, {@code "1.0/ios16: ios18 failed to compile on M1 (h13g): …"},
     * {@code "1.3/ios18: forced by -Dane4j.milDialect"}, {@code "1.3/ios18: not settled yet (on M1/M2 ios16 is tried if
     * ios18 fails)"}.
     */
    public String dialectChoice() {
        String why = dialectReason;
        MilDialect d = dialect();
        return d.programVersion() + "/" + d.opset() + ": " + (why != null ? why : "not settled yet (on M1/M2 ios16 is tried if ios18 fails)");
    }

    /**
     * Where the {@code @try/@catch} trampoline came from (Objective-C exceptions become {@link FrameworkException}), or
     * null when there is none and such an exception aborts the JVM (no {@code clang} at install time).
     */
    public String exceptionGuard() {
        requireAvailable();
        return Native.exceptionGuard();
    }

    /**
     * Classes macOS 27's AppleNeuralEngine added (docs/macos27-ane.md C1, C5, C9), present or not, without compiling
     * anything: {@code _ANEHashEncoding} (the per-file bundle hash check: kernels need at most one weight file),
     * {@code _ANECloneHelper} (bundles copied by clone, symlinks refused), {@code _ANESandboxingHelper}.
     */
    public java.util.Map<String, Boolean> capabilities() {
        requireAvailable();
        java.util.Map<String, Boolean> m = new java.util.LinkedHashMap<>();
        for (String c : List.of("_ANEHashEncoding", "_ANECloneHelper", "_ANESandboxingHelper")) m.put(c, Native.hasClass(c));
        return m;
    }

    /** The chip as the framework reports it, e.g. {@code M4 (h16g)}. */
    public String chip() {
        requireAvailable();
        return Native.chip();
    }

    /** The ANE sub-type the framework reports ({@code h16g} on an M4): what the chip family and the MIL dialect follow. */
    public String aneSubType() {
        requireAvailable();
        return Native.aneSubType();
    }

    /** The chip as the framework reports it ({@link #chip()}) and its family ({@link #aneSubType()}); what fails to read is "unknown (why)". */
    @Override
    public ChipDescription describeChip() {
        ane4j.chip.Chip family;
        try {
            family = ane4j.chip.Chip.fromSubType(aneSubType()).orElse(null);
        } catch (RuntimeException e) {
            family = null;
        }
        try {
            return new ChipDescription(family, chip());
        } catch (RuntimeException e) {
            return new ChipDescription(family, "unknown (" + e.getMessage() + ")");
        }
    }

    /** The MIL text {@link #compile(Program, String)} sends for this function. */
    public String milText(Program program, String functionName) { return milText(program, functionName, dialect()); }

    private static String milText(Program program, String functionName, MilDialect dialect) {
        Function f = program.function(functionName);
        Function main = f.name().equals("main") ? f : new Function("main", f.inputs(), f.operations(), f.outputs());
        return MilWriter.write(new Program(Map.of("main", main), program.weights()), dialect.mil());
    }

    private volatile boolean packWeights = true;

    /**
     * Whether a program with several weight files is packed into one {@code weight.bin} before it reaches the compiler on
     * macOS ≥ 27 (default true: {@link MacOs#oneWeightFile}). {@code doctor}'s two-file probe turns it off to see what
     * this Mac's compiler does with two files.
     */
    public AneBackend packWeights(boolean on) {
        packWeights = on;
        return this;
    }

    /** The file packed weights go into (one per program, as Core ML's weight.bin). */
    public static final String PACKED_WEIGHT_FILE = "weight.bin";

    /**
     * The program as it goes to this Mac's compiler: on macOS ≥ 27 (one weight file per program, docs/macos27-ane.md C2)
     * its weight files packed into one, and refused before compiling where no layout is known to work: M1 misreads the
     * blobs after the first of a packed file (chip rule packed-blob, maderix's benchmark report), so on M1 under 27 neither
     * several files nor one packed file works. Not yet run on Apple hardware.
     */
    Program forThisMac(Program program, String functionName, MacOs os, java.util.Optional<ane4j.chip.Chip> chip) {
        int files = program.weights().files().size();
        if (!packWeights || !os.oneWeightFile() || files <= 1) return program;
        if (chip.isPresent() && chip.get() == ane4j.chip.Chip.M1)
            throw new BackendException("[ane] " + functionName + ": macOS " + os.version() + " compiles a program only with at most 1 weight file "
                    + "(Code=10 verifyBundleAtPath) and M1 misreads the blobs after the first of a packed file (chip rule packed-blob); "
                    + "no weight layout is known to work for this program's " + files + " files: pass its constants as inputs");
        return program.packedWeights(PACKED_WEIGHT_FILE);
    }

    @Override
    protected Kernel doCompile(Program program, String functionName) {
        requireAvailable();
        Function f = program.function(functionName);
        chipRules(program, functionName);
        MacOs os = MacOs.current();
        program = forThisMac(program, functionName, os, chipRulesChecked ? chipFamily() : java.util.Optional.empty());
        List<TensorSpec> ins = specs(f.inputs(), "input"), outs = specs(f.outputs(), "output");
        if (forced) return compileIn(dialect, program, functionName, f, ins, outs);
        // per program (ane-audit-2 R1): the dialect that compiled last is tried first; on M1/M2 a failure is retried in
        // the other one for this program, whatever earlier programs compiled in (maderix's report: ios18 "PARTIAL" on M1;
        // Espresso #18, M1 Ultra: toy ios18 programs compile, attention layers do not)
        MilDialect first = dialect();
        String chip = chip();
        var fallback = MilDialect.fallbackFor(aneSubType(), first);
        if (fallback.isEmpty() && first != MilDialect.forSubType(aneSubType())) fallback = java.util.Optional.of(MilDialect.forSubType(aneSubType()));
        AneKernel k;
        try {
            k = compileIn(first, program, functionName, f, ins, outs);
        } catch (AneException e) {
            if (fallback.isEmpty() || e instanceof FrameworkException || e.isBundleCheck()) throw e;
            MilDialect second = fallback.get();
            try {
                k = compileIn(second, program, functionName, f, ins, outs);
            } catch (AneException e2) {
                if (e2 instanceof FrameworkException) throw e2;
                throw new AneException("[ane] " + f.name() + " compiled in neither MIL dialect on " + chip + ": " + first.opset() + ": "
                        + e.getMessage() + "; " + second.opset() + ": " + e2.getMessage(), e2);
            }
            settle(second, first.opset() + " failed to compile on " + chip + " (" + e.getMessage() + "), "
                    + second.opset() + " compiled; tried first from now on, the other still tried per program", true);
            return k;
        }
        settle(first, fallback.isPresent() ? "compiled on " + chip + ", tried first from now on, the other still tried per program" : "the dialect of " + chip, false);
        return k;
    }

    private boolean forced;

    /** Records what compiled: the dialect tried first from now on, and why; a change is said once on stderr. */
    private synchronized void settle(MilDialect d, String why, boolean fellBack) {
        if (d == dialect && dialectReason != null && !fellBack) return;
        boolean changed = d != dialect || dialectReason == null;
        dialectReason = why;
        dialect = d;
        if (changed && why.contains("per program")) System.err.println("[ane] MIL dialect " + d.programVersion() + "/" + d.opset() + ": " + why);
    }

    private AneKernel compileIn(MilDialect d, Program program, String functionName, Function f, List<TensorSpec> ins, List<TensorSpec> outs) {
        String mil = milText(program, functionName, d);
        AneProgram p;
        boolean rows64 = MacOs.current().rowsAt64Bytes() && rowStrides;
        try {
            p = AneProgram.compile(mil, program.weights().encoded(), surfaces(ins, rows64), surfaces(outs, rows64), leakWatch,
                    this::chargeCompile, options.usesDaemonCache(), exactSurfaces);
        } catch (AneException e) {
            if (!e.isBundleCheck()) throw e;
            int files = program.weights().files().size();
            throw e.withMessage("[ane] " + f.name() + " (" + files + " weight file" + (files == 1 ? "" : "s") + "): the compiler's bundle hash check "
                    + "refused it (Code=" + e.code() + " verifyBundleAtPath" + (files > 1 ? "; macOS 27 compiles at most 1 weight file per program" : "")
                    + "; not the compiler leak, a restart will not help; see docs/current-macs.md): " + e.getMessage());
        }
        switch (p.origin()) {
            case DAEMON_CACHE -> daemonCacheLoads.incrementAndGet();
            case SHARED -> sharedLoads.incrementAndGet();
            case COMPILED -> { }
        }
        return new AneKernel(f.name(), ins, outs, p, mil, d, rows64);
    }

    /** Kernels loaded from the aned daemon's cache without a compile (not counted in {@link #compileCount()}). */
    public long daemonCacheLoads() { return daemonCacheLoads.get(); }

    /** Kernels that shared the loaded model of an identical live program (not counted in {@link #compileCount()}). */
    public long sharedLoads() { return sharedLoads.get(); }

    /**
     * Whether compiles check the chip rules first (default true). {@code doctor}'s probes turn it off: they exist to see
     * what Apple's compiler itself does with a program the rules would refuse.
     */
    public AneBackend chipRulesChecked(boolean on) {
        chipRulesChecked = on;
        return this;
    }

    /**
     * Refuses a program that breaks an error rule of this chip ({@link ane4j.chip.ChipRules}) before Apple's compiler would
     * fail it with "ANECCompile() FAILED"; an unknown chip is not checked. Same message as the reference backend's
     * {@code -Dane4j.ref.chip} emulation.
     */
    private java.util.Optional<ane4j.chip.Chip> chipFamily() {
        var chip = chipFamily;
        if (chip == null) chipFamily = chip = ane4j.chip.Chip.fromSubType(aneSubType());
        return chip;
    }

    private void chipRules(Program program, String functionName) {
        if (!chipRulesChecked) return;
        var chip = chipFamily();
        try {
            chip.ifPresent(c -> ane4j.chip.ChipRules.requireCompatible(program, functionName, c));
        } catch (ane4j.chip.ChipRuleException e) {
            throw new BackendException(e.getMessage(), e);
        }
    }

    private void requireAvailable() {
        if (!isAvailable()) throw new BackendException("[ane] the ANE is not available: " + AneRuntime.unavailableReason()
                + "; use the reference backend (-Dane4j.backend=ref)");
    }

    private static List<TensorSpec> specs(List<Value> values, String role) {
        List<TensorSpec> out = new ArrayList<>(values.size());
        for (Value v : values) {
            if (v.dtype() != DType.FP16 && v.dtype() != DType.FP32)
                throw new BackendException("[ane] " + role + " '" + v.name() + "' is " + v.type()
                        + "; ANE kernel inputs and outputs are IOSurfaces of fp16 or fp32 (cast inside the program)");
            out.add(new TensorSpec(v.name(), v.type()));
        }
        return out;
    }

    /**
     * Bytes of each tensor, as {@code [1,C,H,W]} with C·H·W·element size (docs/ane-facts.md §3); on macOS ≥ 27 each row padded
     * to 64 bytes ({@link AneKernel#rowStride}, docs/macos27-ane.md C7).
     */
    private static List<SurfaceSpec> surfaces(List<TensorSpec> specs, boolean rows64) {
        return specs.stream().map(s -> new SurfaceSpec(s.name(), AneKernel.surfaceBytes(s, rows64))).toList();
    }

    private volatile boolean rowStrides = true, exactSurfaces;

    /**
     * Whether surfaces are allocated at their tensors' own sizes (rounded to 128 bytes) instead of one common size of at
     * least 48 KB (default false). Only {@code doctor}'s surface probes turn it on, to observe the size rules they test.
     */
    public AneBackend exactSurfaces(boolean on) {
        exactSurfaces = on;
        return this;
    }

    /**
     * Whether I/O rows get macOS 27's 64-byte stride there (default true). {@code doctor}'s 32-byte-row probe turns it off to
     * see whether this Mac misreads a packed short row.
     */
    public AneBackend rowStrides(boolean on) {
        rowStrides = on;
        return this;
    }

    /** Kept apart so that the ffm classes it names load only when it runs. */
    private static final class Native {
        static MilDialect firstDialect() {
            return MilDialect.forSubType(ane4j.backend.ane.ffm.DeviceInfo.read().aneSubType());
        }

        static boolean hasClass(String name) { return ane4j.backend.ane.ffm.ObjC.get().hasClass(name); }

        static String exceptionGuard() {
            return ane4j.backend.ane.ffm.ObjC.get().exceptionGuard();
        }

        static String aneSubType() {
            return ane4j.backend.ane.ffm.DeviceInfo.read().aneSubType();
        }

        static String chip() {
            var d = ane4j.backend.ane.ffm.DeviceInfo.read();
            return d.chipFamily() + " (" + d.aneSubType() + ")";
        }
    }
}
