package ane4j.blas;

import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Optional;

/**
 * Entry point of {@code ane4j.blas}: picks an {@link Sgemm} once and forwards to it.
 *
 * <p>Selection: the system property {@code ane4j.blas} (or environment variable {@code ANE4J_BLAS}) set to
 * {@code openblas}, {@code accelerate} or {@code java}; otherwise automatic: Accelerate on macOS, OpenBLAS
 * ({@code libopenblas.so.0}, then {@code libblas.so.3}, with the core set as {@link OpenBlas} says), then pure Java;
 * with a native library and the Vector API both present, a calibration (once per machine, library and core, cached in
 * {@link BlasCache}) gives each {@link Calibration.ShapeClass} to the Java GEMM where it is faster. The pure-Java implementation uses the Vector
 * API when the module {@code jdk.incubator.vector} is in the boot layer ({@code --add-modules jdk.incubator.vector})
 * and a blocked scalar loop otherwise. One INFO line on the {@code ane4j.blas} logger names the choice and why; a
 * requested library that does not load falls back to Java with a WARNING. Nothing here throws at class
 * initialisation.
 */
public final class Blas {
    private Blas() {}

    public static final String PROPERTY = "ane4j.blas";
    public static final String ENV = "ANE4J_BLAS";

    private static final System.Logger LOG = System.getLogger("ane4j.blas");
    private static volatile Sgemm selected;

    /** The selected implementation (chosen and logged on the first call). */
    public static Sgemm get() {
        Sgemm s = selected;
        if (s != null) return s;
        synchronized (Blas.class) {
            if (selected == null) {
                String choice = System.getProperty(PROPERTY);
                String source = "-D" + PROPERTY;
                if (choice == null || choice.isBlank()) {
                    choice = System.getenv(ENV);
                    source = ENV;
                }
                selected = select(choice, source);
            }
            return selected;
        }
    }

    /** CPU model: /proc/cpuinfo on Linux, {@code sysctl machdep.cpu.brand_string} on macOS, else os.arch. */
    public static String cpuModel() {
        String model = CpuFeatures.current().model();
        return model.isEmpty() ? System.getProperty("os.arch") : model;
    }

    /** Forgets the selection so the next {@link #get()} chooses again (tests). */
    static synchronized void reset() { selected = null; }

    /** Same as {@code get().sgemm(…)}; see {@link Sgemm}. */
    public static void sgemm(Layout layout, Transpose transA, Transpose transB, int m, int n, int k,
                             float alpha, MemorySegment a, long aOffset, int lda,
                             MemorySegment b, long bOffset, int ldb,
                             float beta, MemorySegment c, long cOffset, int ldc) {
        get().sgemm(layout, transA, transB, m, n, k, alpha, a, aOffset, lda, b, bOffset, ldb, beta, c, cOffset, ldc);
    }

    /** Same as {@code get().sgemm(…)} over heap arrays; see {@link Sgemm}. */
    public static void sgemm(Layout layout, Transpose transA, Transpose transB, int m, int n, int k,
                             float alpha, float[] a, int aOffset, int lda,
                             float[] b, int bOffset, int ldb,
                             float beta, float[] c, int cOffset, int ldc) {
        get().sgemm(layout, transA, transB, m, n, k, alpha, a, aOffset, lda, b, bOffset, ldb, beta, c, cOffset, ldc);
    }

    /** OpenBLAS (or the system CBLAS) through FFM, if it loads. */
    public static Optional<Sgemm> openBlas() { return Optional.ofNullable(OpenBlas.PROBE.sgemm()); }

    /** Accelerate through FFM, if it loads (macOS only). */
    public static Optional<Sgemm> accelerate() { return Optional.ofNullable(Accelerate.PROBE.sgemm()); }

    /** The Vector API implementation, if {@code jdk.incubator.vector} is in the boot layer. */
    public static Optional<Sgemm> javaVector() { return Optional.ofNullable(JavaProbe.VECTOR.sgemm()); }

    /** The blocked scalar implementation (always available). */
    public static Sgemm javaScalar() { return JavaProbe.SCALAR; }

    /** The best pure-Java implementation: vector if available, else scalar. */
    public static Sgemm java() { return javaVector().orElse(JavaProbe.SCALAR); }

    /** Chooses and logs; {@code choice} null or blank means automatic. */
    static Sgemm select(String choice, String source) {
        String c = choice == null ? "" : choice.strip().toLowerCase(Locale.ROOT);
        switch (c) {
            case "" -> {
                return automatic(Accelerate.isMacOs() ? Accelerate.PROBE : OpenBlas.PROBE, BlasCache.standard());
            }
            case "openblas", "accelerate" -> {
                Probe nat = c.equals("openblas") ? OpenBlas.PROBE : Accelerate.PROBE;
                if (nat.loaded()) return chosen(System.Logger.Level.INFO, nat.sgemm(), source + "=" + c);
                return chosen(System.Logger.Level.WARNING, java(), source + "=" + c + " but it did not load ("
                        + nat.detail() + "); falling back" + javaReason());
            }
            case "java" -> {
                return chosen(System.Logger.Level.INFO, java(), source + "=java" + javaReason());
            }
            default -> throw new IllegalArgumentException("[blas] unknown " + source + "=" + choice
                    + "; use openblas, accelerate or java (or leave it unset for automatic)");
        }
    }

    /** No choice forced: the native library if it loaded, with the Java GEMM for the classes the calibration gives it. */
    static Sgemm automatic(Probe nat, BlasCache cache) {
        if (!nat.loaded()) return chosen(System.Logger.Level.INFO, java(), "automatic, no native BLAS loaded ("
                + nat.detail() + ")" + javaReason());
        if (!JavaProbe.VECTOR.loaded()) return chosen(System.Logger.Level.INFO, nat.sgemm(),
                "automatic, first library found; not calibrated" + javaReason());
        Sgemm java = JavaProbe.VECTOR.sgemm();
        // one decision per machine: the processes of a run (a worker and its restarts, the notebook) must route every
        // product the same way, or a resumed run is not bit-identical; so the first process measures, under the cache's
        // lock, and every later one reads what it measured
        String key = BlasCache.key("calibration", CpuFeatures.current().key(), nat.identity());
        BlasCache.Decision d = cache.decide(key, Blas::decodable, () -> Calibration.measure(nat.sgemm(), java).encode());
        Calibration cal = Calibration.decode(d.value());
        String cached = cache.problem().isEmpty() ? "cached in " + cache.file() : cache.problem();
        String how = cached;
        if (d.measured()) {
            String before = d.discarded() != null ? "cached value unreadable (" + whyNotDecodable(d.discarded()) + "), "
                    : cached.startsWith("cached in") ? "" : cached + ", ";
            how = before + String.format(Locale.ROOT, "calibrated in %.2f s at load average %.1f, %s", cal.seconds(), cal.loadAverage(),
                    cache.problem().isEmpty() ? "cached in " + cache.file() : cache.problem());
        }
        Sgemm s = route(nat.sgemm(), java, cal);
        return chosen(System.Logger.Level.INFO, s, "automatic: " + routeSummary(s, nat.sgemm()) + " ("
                + cal.summary() + "; " + how + "; -D" + BlasCache.RECALIBRATE_PROPERTY + "=true measures again)");
    }

    private static boolean decodable(String calibration) { return whyNotDecodable(calibration) == null; }

    private static String whyNotDecodable(String calibration) {
        try {
            Calibration.decode(calibration);
            return null;
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
    }

    /** The native GEMM, the Java one, or the native one with the Java one for the classes the calibration gives it. */
    static Sgemm route(Sgemm nat, Sgemm java, Calibration cal) {
        EnumSet<Calibration.ShapeClass> javaClasses = EnumSet.noneOf(Calibration.ShapeClass.class);
        for (Calibration.ShapeClass c : Calibration.ShapeClass.values()) if (cal.javaFor(c)) javaClasses.add(c);
        if (javaClasses.isEmpty()) return nat;
        if (javaClasses.size() == Calibration.ShapeClass.values().length) return java;
        return new RoutedSgemm(nat, java, javaClasses);
    }

    private static String routeSummary(Sgemm s, Sgemm nat) {
        if (s == nat) return "the native GEMM for every shape class";
        if (s instanceof RoutedSgemm r) {
            StringBuilder b = new StringBuilder();
            for (Calibration.ShapeClass c : Calibration.ShapeClass.values())
                if (r.javaClasses().contains(c)) b.append(b.isEmpty() ? "" : ", ").append(c.label);
            return "the native GEMM, the Java GEMM for " + b;
        }
        return "the Java GEMM for every shape class";
    }

    private static String javaReason() {
        return JavaProbe.VECTOR.loaded() ? "" : "; " + JavaProbe.VECTOR.detail();
    }

    private static Sgemm chosen(System.Logger.Level level, Sgemm sgemm, String why) {
        LOG.log(level, "[blas] sgemm: " + sgemm.description() + " — " + why);
        return sgemm;
    }

    /** The Java implementations; the vector tile multiplier class is only touched when its module is present. */
    static final class JavaProbe {
        private JavaProbe() {}

        static final String VECTOR_MODULE = VectorClasses.MODULE;
        static final Sgemm SCALAR = new JavaSgemm(new JavaSgemm.ScalarTileMultiplier());
        static final Probe VECTOR = loadVector();

        private static Probe loadVector() {
            if (!VectorClasses.available()) {
                return Probe.missing("scalar loop: module " + VECTOR_MODULE
                        + " not in the boot layer (run java with --add-modules " + VECTOR_MODULE + ")");
            }
            try {
                Class<?> k = Class.forName("ane4j.blas.VectorTileMultiplier");
                JavaSgemm.TileMultiplier tiles = (JavaSgemm.TileMultiplier) k.getDeclaredConstructor().newInstance();
                return new Probe(new JavaSgemm(tiles), "vector");
            } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
                return Probe.missing("scalar loop: the vector tile multiplier did not load (" + e + ")");
            }
        }
    }
}
