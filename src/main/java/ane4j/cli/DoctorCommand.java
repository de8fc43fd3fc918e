package ane4j.cli;

import ane4j.backend.CompileBudgetExceededException;
import ane4j.backend.Kernel;
import ane4j.backend.OutputDiff;
import ane4j.backend.TensorBuffer;
import ane4j.backend.ane.AneBackend;
import ane4j.backend.ane.AneKernel;
import ane4j.backend.ref.RefBackend;
import ane4j.blas.Blas;
import ane4j.chip.Chip;
import ane4j.chip.ChipRules;
import ane4j.chip.Violation;
import ane4j.model.ModelConfig;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ane4j doctor [--model tiny|stories110m|…] [--json FILE]}: what this machine is (chip, OS, JDK, MIL dialect, BLAS),
 * then the {@link Probes} ladder, one table row per rung as it runs. With the ANE, each rung is compiled, loaded and evaluated (twice, the second timed) there
 * and compared with the reference backend (fp16 tolerances, {@link OutputDiff#within}); without it, the reference backend
 * runs each rung with fp16 storage and is compared with itself in fp32 storage (the rounding an fp16 engine must live
 * with). Every rung's failure is recorded, never thrown; a compile-budget refusal stops the ladder and says where. Ends
 * with a summary, one line per assumption the first Mac run must confirm ({@link DoctorReport#assumptions}), a verdict to
 * paste into a bug report and, with {@code --json}, the report. Exit code 0 when every rung passes, 1 otherwise (probes
 * observe; they never fail the run).
 */
@Command(name = "doctor", sortOptions = false, sortSynopsis = false, description = {"Check the ANE and the backends: the probe ladder against the reference backend.",
        "Prints what this machine is, one row per rung, a summary and a verdict to paste into a bug report; exit status 1 when a rung fails."})
public final class DoctorCommand implements Callable<Integer> {
    @Mixin Cli.HelpOption help;
    @Option(names = "--model", paramLabel = "NAME", defaultValue = "tiny", description = "the model whose training kernels are probed (default ${DEFAULT-VALUE})")
    String model;
    @Option(names = "--json", paramLabel = "FILE", description = "also write the report as JSON") Path json;
    @Option(names = "--chip", paramLabel = "m1|m2|m3|m4|m5", description = "the chip whose rules are checked (default: this machine's)") String chipName;
    @Option(names = "--worker", paramLabel = "auto|ane|ref|off", defaultValue = "auto",
            description = "run the conv rung once more inside a supervised worker JVM, as training runs kernels (default ${DEFAULT-VALUE}: the backend doctor probes)")
    String worker;

    /** Whether the ANE backend was handed in by a caller (tests) rather than made here: auto then runs no worker. */
    private boolean injected;

    private final PrintStream out, err;

    DoctorCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Override
    public Integer call() {
        AneBackend ane = new AneBackend();
        return run(ane.isAvailable() ? ane : null, ane.isAvailable() ? null : ane.unavailableReason());
    }

    /** What happened to one rung or probe. */
    public enum Status {
        /** compiled, ran, matched the reference */
        OK,
        /** ran, outside the fp16 tolerance of the reference */
        DIFFERS,
        /** compile, load or evaluate failed (or the reference did) */
        FAILED,
        /** does not apply here (e.g. an ios17 op under the ios16 dialect) */
        SKIPPED,
        /** not reached: the ladder stopped earlier */
        NOT_RUN;

        @Override public String toString() { return name().toLowerCase(Locale.ROOT).replace('_', ' '); }
    }

    /**
     * One rung's outcome; times in milliseconds (load: ANE only), NaN when not measured.
     * @param identifier   the program's {@code hexStringIdentifier} (ANE only)
     * @param origin       how the ANE got the program: compiled, daemon cache (loaded without compiling), shared (ANE only)
     * @param dirAfterUnload whether {@code NSTemporaryDirectory()/<identifier>} was still there after {@code unloadWithQoS}
     * @param allZero      every output element was 0 (how a silently failing matmul looks, maderix #47)
     * @param violations   what the chip rules ({@link ChipRules}) say about the program on this chip, one line each
     */
    public record Result(String probe, Probes.Kind kind, String assumption, String rule, Status status, String backend,
                         String reference, double compileMs, double loadMs, double evalMs, OutputDiff diff, boolean allZero,
                         String dialect, String identifier, String origin, Boolean dirAfterUnload, List<String> violations,
                         boolean ruleError, String error) {
        public boolean passed() { return status == Status.OK; }

        /** Loaded from the aned daemon's cache without compiling (null off the ANE). */
        public Boolean cacheHit() { return origin == null ? null : origin.equals("daemon cache"); }

        /** A rung that did not pass (probes never fail the ladder). */
        public boolean failedRung() { return kind == Probes.Kind.RUNG && status != Status.OK; }

        /** max|err| / max|reference| (0 when the reference is all zero). */
        public double maxRelErr() { return diff == null || diff.maxRef() == 0 ? (diff == null ? Double.NaN : 0) : diff.maxAbs() / diff.maxRef(); }

        static Result of(Probes.Probe p, Status s, String backend, String reference, String error) {
            return new Result(p.name(), p.kind(), p.assumption(), p.rule(), s, backend, reference, Double.NaN, Double.NaN, Double.NaN,
                    null, false, null, null, null, null, List.of(), false, error);
        }

        /** The same result with the chip rules' verdict on its program. */
        Result withRules(List<Violation> vs) {
            return new Result(probe, kind, assumption, rule, status, backend, reference, compileMs, loadMs, evalMs, diff, allZero, dialect,
                    identifier, origin, dirAfterUnload, vs.stream().map(v -> v.severity() + " [" + v.rule().id() + "] " + v.what()).toList(),
                    vs.stream().anyMatch(Violation::isError), error);
        }

        Result withStatus(Status s, String why) {
            return new Result(probe, kind, assumption, rule, s, backend, reference, compileMs, loadMs, evalMs, diff, allZero, dialect,
                    identifier, origin, dirAfterUnload, violations, ruleError, why);
        }
    }

    /** With a given ANE backend (null: not available, for {@code reason}). */
    public static int run(String[] args, PrintStream out, PrintStream err, AneBackend ane, String reason) {
        DoctorCommand d = Cli.parse(new DoctorCommand(out, err), args);
        if (d.help.help) {
            out.print(Cli.usage(d));
            return Cli.OK;
        }
        d.injected = true;
        return d.run(ane, reason);
    }

    private int run(AneBackend ane, String reason) {
        firstBundle = null;
        if (ane != null) ane.chipRulesChecked(false);   // the probes ask Apple's compiler, not ane4j's chip rules
        ModelConfig config;
        try {
            config = ModelConfig.parse(model);
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage());
        }

        Chip chip;
        try {
            chip = chipName != null ? Chip.parse(chipName) : ane == null ? null
                    : Chip.fromSubType(safe(ane::aneSubType)).orElse(null);
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage() + " (ane4j doctor --help)");
        }

        Map<String, String> host = new LinkedHashMap<>();
        host.put("chip", ane == null ? "n/a" : safe(ane::chip));
        // the release and build from sw_vers on a Mac (old-SDK JDKs say 16.x on macOS 26: first-contact #25; bug threads quote the build)
        ane4j.backend.MacOs mac = ane4j.backend.MacOs.current();
        host.put("os", System.getProperty("os.name") + " " + (mac.isMac() ? mac.toString() : System.getProperty("os.version")) + " " + System.getProperty("os.arch"));
        host.put("cpu", cpuBrand());
        host.put("jdk", System.getProperty("java.vm.vendor") + " " + System.getProperty("java.runtime.version"));
        host.put("dialect", ane == null ? "n/a" : safe(() -> dialect(ane)));
        host.put("blas", safe(() -> Blas.get().name()));
        host.put("ane", ane == null ? "not available: " + reason : "available");
        host.put("guard", ane == null ? "n/a" : safe(() -> ane.exceptionGuard() == null
                ? "absent: no clang at install (an Objective-C exception aborts the JVM)" : ane.exceptionGuard()));
        if (ane != null)
            host.put("framework", safe(() -> {
                StringBuilder b = new StringBuilder();
                ane.capabilities().forEach((k, v) -> b.append(b.isEmpty() ? "" : ", ").append(k).append(v ? " present" : " absent"));
                return b + (ane.capabilities().get("_ANEHashEncoding") ? " (macOS 27's bundle hash check: kernels need ≤1 weight file)" : " (no bundle hash check)");
            }));
        // the framework's own version (370.x with 15, 380.x with 26, 382.x with 27; docs/macos27-ane.md §3); absent off a Mac
        String fw = HostContext.frameworkVersion(Path.of("/"));
        if (fw != null || mac.isMac()) host.put("aneVersion", fw != null ? fw : "unknown (no Info.plist or version.plist under /" + HostContext.FRAMEWORK + ")");
        host.put("context", HostContext.processContext());
        if (mac.isMac() || ane != null)
            host.put("macos27", mac.oneWeightFile() ? "one weight file per program (bundle hash check, Code=10): ane4j packs weights into weight.bin; I/O rows at a 64-byte stride"
                    : "rules of macOS 15/26: a weight file per weight, packed I/O rows");
        host.put("rules", chip == null ? "none (chip unknown; --chip m1..m5 picks a family)"
                : chip + (ane == null ? " (the reference backend emulates it)" : " (checked, not enforced: the probes ask Apple's compiler)"));
        host.put("model", config.name());
        List<Probes.Probe> ladder = Probes.ladder(config);
        if (chip == Chip.M1 && mac.oneWeightFile()) {
            // the backend refuses these before compiling (AneBackend.forThisMac); said here before the ladder, not per rung
            List<String> several = ladder.stream().filter(p -> p.weightFiles() > 1).map(p -> p.name() + " (" + p.weightFiles() + " files)").toList();
            host.put("refused", "M1 on macOS " + mac.version() + ": no weight layout is known to work for a program with 2 or more weight files "
                    + "(macOS 27 refuses several files, Code=10; M1 misreads the blobs after the first of a packed file, chip rule packed-blob), "
                    + "so ane4j refuses such programs before compiling" + (several.isEmpty() ? "" : ": " + String.join(", ", several))
                    + "; the training kernels carry none");
        }
        for (var e : host.entrySet()) out.printf(Locale.ROOT, "%-8s %s%n", e.getKey() + ":", e.getValue());
        if (ane == null) out.println("The ANE is not available here (" + reason + "); running the reference-backend half of the probes"
                + (chip == null ? "." : ", emulating " + chip + "."));
        out.println();

        out.println(DoctorReport.header());
        List<Result> results = new ArrayList<>();
        String stopped = null;
        for (Probes.Probe p : ladder) {
            Result r;
            if (stopped != null) r = Result.of(p, Status.NOT_RUN, ane != null ? "ane" : "ref", ane != null ? "ref" : "ref-fp32", stopped);
            else {
                r = ane != null ? onAne(ane, p) : onRef(p, chip);
                if (r.error() != null && r.error().startsWith(STOP)) {
                    stopped = "ladder stopped at " + p.name() + ": " + r.error().substring(STOP.length());
                    r = r.withStatus(Status.FAILED, r.error().substring(STOP.length()));
                }
            }
            if (chip != null) r = rules(r, p, chip);
            results.add(r);
            out.println(DoctorReport.row(r, p.weightFiles()));
            out.flush();
        }
        WorkerRun inWorker = workerRun(ane, ladder.get(0));
        host.put("worker", inWorker.line());
        if (ane != null) host.put("dialectChoice", safe(ane::dialectChoice));   // settled by the ladder's compiles
        if (ane != null) {
            host.put("bundle", firstBundle == null ? "no program was compiled" : firstBundle);
            out.println("bundle after the first compile (" + host.get("bundle") + ")");
        }
        DoctorReport report = new DoctorReport(host, ane != null, reason, chip, results, stopped);
        out.println(report.summary());
        out.println();
        out.println("assumptions (audit F1–F14; what the first Mac run confirms):");
        for (String line : report.assumptions()) out.println("  " + line);
        out.println();
        out.println("verdict (paste into a bug report):");
        for (String line : report.verdict()) out.println("  " + line);
        if (json != null) {
            try {
                if (json.getParent() != null) Files.createDirectories(json.getParent());
                Files.writeString(json, report.json());
            } catch (IOException e) {
                throw new CliException("cannot write " + json + ": " + e.getMessage(), e);
            }
            out.println("report written to " + json);
        }
        return report.passed() && inWorker.ok() ? 0 : 1;
    }

    /** The worker rung's outcome: ok (or not run), and its one line. */
    record WorkerRun(boolean ok, String line) {}

    /** {@code --worker}: which backend the worker runs the first rung on, or not at all. */
    private WorkerRun workerRun(AneBackend ane, Probes.Probe first) {
        String w = worker == null ? "auto" : worker.toLowerCase(Locale.ROOT);
        String backend = switch (w) {
            case "auto" -> injected ? null : ane != null ? "ane" : "ref";
            case "ane", "ref" -> w;
            case "off" -> null;
            default -> throw new CliException("--worker " + worker + ": use auto, ane, ref or off");
        };
        if (backend == null) return new WorkerRun(true, "not run (" + (w.equals("off") ? "--worker off" : "a backend handed in by the caller; --worker ane|ref runs it") + ")");
        return workerRung(first, ane4j.worker.Supervisor.Options.defaults().withBackend(backend).withRefStorage("fp16").withLog(line -> {}));
    }

    /**
     * Runs {@code p} once inside a supervised worker (a child JVM, as {@code ane4j train} and notebooks run their kernels)
     * and compares it with the reference backend here: macOS 27 restricts background access to the Neural Engine
     * (docs/macos27-ane.md C10), and a rung that passes in this process but fails in the worker points there. Only the
     * worker's public API ({@link ane4j.worker.Supervisor}); never thrown, one line either way.
     */
    static WorkerRun workerRung(Probes.Probe p, ane4j.worker.Supervisor.Options options) {
        Map<String, TensorBuffer> in, want;
        try (Kernel r = new RefBackend(RefBackend.Options.ANE_LIKE).compile(p.reference())) {
            in = inputs(p, r);
            want = r.evaluate(in);
        } catch (RuntimeException e) {
            return new WorkerRun(false, p.name() + " FAILED: reference: " + oneLine(e));
        }
        try (ane4j.worker.Supervisor s = new ane4j.worker.Supervisor(options)) {
            long t0 = System.nanoTime();
            ane4j.worker.RemoteKernel k = s.compile(p.program());
            long t1 = System.nanoTime();
            Map<String, TensorBuffer> kin = new LinkedHashMap<>(), got = new LinkedHashMap<>();
            for (var e : in.entrySet()) {
                TensorBuffer b = k.allocateInput(e.getKey());
                b.copyFrom(e.getValue());
                kin.put(e.getKey(), b);
            }
            for (var o : k.outputs()) got.put(o.name(), k.allocateOutput(o.name()));
            k.evaluate(kin, got);
            long t2 = System.nanoTime();
            k.evaluate(kin, got);
            long t3 = System.nanoTime();
            OutputDiff d = diff(want, got);
            boolean ok = d.within(OutputDiff.FP16_ATOL, OutputDiff.FP16_RTOL);
            String where = "in a supervised worker (pid " + s.workerPid() + ", backend " + s.status().backend() + ")";
            k.close();
            return new WorkerRun(ok, String.format(Locale.ROOT, "%s %s %s: compile %.1f ms, evaluate %.2f ms, max|err| %.3g%s", p.name(),
                    ok ? "ok" : "DIFFERS", where, ms(t1 - t0), ms(t3 - t2), d.maxAbs(),
                    ok ? "" : " (outside fp16 tolerance; in this process the same rung is in the table above)"));
        } catch (RuntimeException e) {
            return new WorkerRun(false, p.name() + " FAILED in a supervised worker: " + oneLine(e)
                    + " (if it passed in this process above: on macOS 27 the background restriction, docs/macos27-ane.md C10)");
        }
    }

    /**
     * The first compiled program's bundle as it stood after the compile (NSTemporaryDirectory()/<identifier>/): whether
     * macOS 27 hashes the framework's own files there too is open (docs/macos27-ane.md C4); the listing answers it.
     */
    static volatile String firstBundle;

    /** Files under {@code dir}, relative, sorted: "data, model.mil, net.plist, weights/W.bin". */
    static String listing(java.nio.file.Path dir) {
        if (dir == null || !Files.isDirectory(dir)) return "directory gone";
        try (var files = Files.walk(dir)) {
            return String.join(", ", files.filter(Files::isRegularFile).map(f -> dir.relativize(f).toString().replace('\\', '/')).sorted().toList());
        } catch (IOException | RuntimeException e) {
            return "unreadable (" + e.getClass().getSimpleName() + ")";
        }
    }

    /** The CPU as bug reports quote it: sysctl machdep.cpu.brand_string on macOS, /proc/cpuinfo's model name on Linux. */
    static String cpuBrand() {
        try {
            if (System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("mac")) {
                Process p = new ProcessBuilder("/usr/sbin/sysctl", "-n", "machdep.cpu.brand_string").redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).strip();
                return p.waitFor(5, java.util.concurrent.TimeUnit.SECONDS) && p.exitValue() == 0 && !out.isEmpty() ? out : "unknown (sysctl failed)";
            }
            java.nio.file.Path info = java.nio.file.Path.of("/proc/cpuinfo");
            if (Files.isReadable(info))
                for (String line : Files.readAllLines(info))
                    if (line.startsWith("model name")) return line.substring(line.indexOf(':') + 1).strip();
        } catch (IOException | InterruptedException | RuntimeException e) {
            return "unknown (" + e.getClass().getSimpleName() + ")";
        }
        return "unknown";
    }

    /** The chip rules' verdict on the rung's program; a rule checker that fails is noted, never fatal. */
    private static Result rules(Result r, Probes.Probe p, Chip chip) {
        try {
            return r.withRules(ChipRules.check(p.program(), chip));
        } catch (RuntimeException e) {
            return r.withStatus(r.status(), (r.error() == null ? "" : r.error() + "; ") + "chip rules could not check it: " + oneLine(e));
        }
    }

    /** Marks an error after which the ladder cannot go on (the compile budget is spent). */
    private static final String STOP = "\u0000stop:";

    private interface Text { String get(); }

    private static String safe(Text t) {
        try {
            return t.get();
        } catch (RuntimeException e) {
            return "unknown (" + e.getMessage() + ")";
        }
    }

    static String dialect(AneBackend ane) { return ane.dialect().programVersion() + "/" + ane.dialect().opset(); }

    static Map<String, TensorBuffer> inputs(Probes.Probe p, Kernel k) {
        return p.inputs() != null ? p.inputs().make(k.inputs()) : Probes.uniformInputs(k.inputs(), p.name().hashCode(), p.inputScale());
    }

    private static OutputDiff diff(Map<String, TensorBuffer> want, Map<String, TensorBuffer> got) {
        OutputDiff d = null;
        for (var e : want.entrySet()) {
            OutputDiff one = OutputDiff.of(e.getValue(), got.get(e.getKey()));
            d = d == null ? one : d.merge(one);
        }
        return d;
    }

    private static boolean allZero(Map<String, TensorBuffer> got) {
        for (TensorBuffer b : got.values()) for (long i = 0; i < b.count(); i++) if (b.get(i) != 0f) return false;
        return true;
    }

    private static double ms(long nanos) { return nanos / 1e6; }

    /** ANE vs reference: compile, load and the second of two evaluations timed on the ANE. */
    static Result onAne(AneBackend ane, Probes.Probe p) {
        String dialect = safe(() -> dialect(ane));
        if (p.program().requiredOpset().compareTo(ane.dialect().mil().opset()) > 0)
            return Result.of(p, Status.SKIPPED, "ane", "ref", "needs the " + p.program().requiredOpset().milName() + " opset; this chip's dialect is " + dialect);
        Map<String, TensorBuffer> in, want;
        RefBackend ref = new RefBackend(RefBackend.Options.ANE_LIKE);
        try (Kernel r = ref.compile(p.reference())) {
            in = inputs(p, r);
            want = r.evaluate(in);
        } catch (RuntimeException e) {
            return Result.of(p, Status.FAILED, "ane", "ref", "reference: " + oneLine(e));
        }
        AneKernel k = null;
        boolean separate = p.knobs().contains(Probes.Knob.SEPARATE_WEIGHT_FILES), packedRows = p.knobs().contains(Probes.Knob.PACKED_ROWS);
        boolean exact = p.knobs().contains(Probes.Knob.EXACT_SURFACES);
        try {
            ane.packWeights(!separate).rowStrides(!packedRows).exactSurfaces(exact);
            k = (AneKernel) ane.compile(p.program());
            Map<String, TensorBuffer> got = k.evaluate(in);
            got = k.evaluate(in);
            OutputDiff d = diff(want, got);
            boolean ok = d.within(OutputDiff.FP16_ATOL, OutputDiff.FP16_RTOL);
            var prog = k.program();
            if (firstBundle == null && prog.origin() == ane4j.backend.ane.AneProgram.Origin.COMPILED) firstBundle = p.name() + ": " + listing(prog.directory());
            k.close();
            return new Result(p.name(), p.kind(), p.assumption(), p.rule(), ok ? Status.OK : Status.DIFFERS, "ane", "ref",
                    ms(prog.compileNanos()), ms(prog.loadNanos()), ms(k.lastEvaluateNanos()), d, allZero(got),
                    k.dialect().programVersion() + "/" + k.dialect().opset(),
                    prog.identifier(), prog.origin().name().toLowerCase(Locale.ROOT).replace('_', ' '), prog.unloadLeftDirectory(),
                    List.of(), false, ok ? null : "outside fp16 tolerance");
        } catch (CompileBudgetExceededException e) {
            return Result.of(p, Status.FAILED, "ane", "ref", STOP + oneLine(e));
        } catch (RuntimeException e) {
            return Result.of(p, Status.FAILED, "ane", "ref", oneLine(e));
        } catch (Error e) {
            if (e instanceof VirtualMachineError) throw e;
            return Result.of(p, Status.FAILED, "ane", "ref", e.getClass().getSimpleName() + ": " + oneLine(e));
        } finally {
            ane.packWeights(true).rowStrides(true).exactSurfaces(false);
            if (k != null) k.close();
        }
    }

    /**
     * Reference (fp16 storage; emulating {@code chip}'s rules and fp16 cliffs when not null) vs reference (fp32 storage),
     * timing the fp16 one.
     */
    static Result onRef(Probes.Probe p, Chip chip) {
        RefBackend ref = new RefBackend(RefBackend.Options.ANE_LIKE.withChip(chip));
        RefBackend exact = new RefBackend(RefBackend.Options.FP32_STORAGE);
        try (Kernel e = exact.compile(p.reference())) {
            long t0 = System.nanoTime();
            try (Kernel k = ref.compile(p.reference())) {
                long t1 = System.nanoTime();
                Map<String, TensorBuffer> in = inputs(p, k);
                Map<String, TensorBuffer> got = k.evaluate(in);   // the first run warms the JIT; the second is timed
                long t2 = System.nanoTime();
                k.evaluate(in, got);
                long t3 = System.nanoTime();
                OutputDiff d = diff(e.evaluate(in), got);
                boolean ok = d.within(OutputDiff.FP16_ATOL, OutputDiff.FP16_RTOL);
                return new Result(p.name(), p.kind(), p.assumption(), p.rule(), ok ? Status.OK : Status.DIFFERS, "ref", "ref-fp32",
                        ms(t1 - t0), Double.NaN, ms(t3 - t2), d, allZero(got), null, null, null, null, List.of(), false,
                        ok ? null : "outside fp16 tolerance");
            }
        } catch (RuntimeException ex) {
            return Result.of(p, Status.FAILED, "ref", "ref-fp32", oneLine(ex));
        }
    }

    static String oneLine(Throwable t) {
        String m = t.getMessage() == null ? t.toString() : t.getMessage();
        return m.replace('\n', ' ');
    }
}
