package ane4j.blas;

import java.io.File;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Loads {@code cblas_sgemm} from OpenBLAS (or any CBLAS) by library name, through the dynamic loader's search path,
 * first setting {@code OPENBLAS_CORETYPE} when the library would otherwise run kernels below what the CPU can do (see
 * {@link OpenBlasCore}).
 *
 * <p>The core: {@code OPENBLAS_CORETYPE} from the environment is always left as it is (on some CPUs it is set because
 * an older build computes wrong results there); {@code -Dane4j.blas.coretype=NAME} forces one; otherwise the core the
 * library picks by itself is learnt once per machine and library — from a child JVM that loads it as it is, cached in
 * {@link BlasCache} — and, if it is below the CPU's instruction set, the better core is put into the C environment
 * with {@code setenv} before the library is loaded (OpenBLAS reads the variable in its constructor, at {@code dlopen}).
 */
@SuppressWarnings("restricted")
final class OpenBlas {
    private OpenBlas() {}

    /**
     * Tried in order: the OpenBLAS soname, then the generic BLAS soname (on Debian an alternative, often OpenBLAS); on
     * macOS Homebrew's OpenBLAS (Apple silicon and Intel prefixes; keg-only, so never on the default search path).
     */
    static final List<String> LIBRARIES = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("mac")
            ? List.of("/opt/homebrew/opt/openblas/lib/libopenblas.dylib", "/usr/local/opt/openblas/lib/libopenblas.dylib", "libopenblas.dylib")
            : List.of("libopenblas.so.0", "libblas.so.3");

    static final String CORE_PROPERTY = "ane4j.blas.coretype";

    /** Loaded once; never throws. */
    static final Probe PROBE = load(CpuFeatures.current(), BlasCache.standard());

    /** The core setting that was applied before loading: the name put into the environment (or null) and why. */
    record CoreSetting(String forced, String why) {}

    private static Probe load(CpuFeatures cpu, BlasCache cache) {
        String probeKey = BlasCache.key("core", cpu.key(), LIBRARIES.getFirst());
        CoreSetting setting = coreSetting(cpu, cache, probeKey);
        List<String> failures = new ArrayList<>();
        for (String library : LIBRARIES) {
            try {
                SymbolLookup lookup = SymbolLookup.libraryLookup(library, Arena.global());
                Optional<MemorySegment> symbol = lookup.find("cblas_sgemm");
                if (symbol.isEmpty()) {
                    failures.add(library + " has no cblas_sgemm");
                    continue;
                }
                int threads = NativeSgemm.intFunction(lookup, "openblas_get_num_threads");
                // the threading is done by NativeSgemm (see there): the library runs each call on one thread
                boolean parallel = threads > 1 && NativeSgemm.setThreads(lookup, "openblas_set_num_threads", 1);
                String config = NativeSgemm.stringFunction(lookup, "openblas_get_config");
                String core = NativeSgemm.stringFunction(lookup, "openblas_get_corename");
                String why = afterLoad(cpu, cache, probeKey, library, setting, core, config);
                String description = "OpenBLAS via FFM (" + library
                        + (config.isEmpty() ? "" : ", " + config)
                        + (core.isEmpty() ? "" : ", core " + core + " (" + why + ")")
                        + (threads > 0 ? ", " + threads + " threads" + (parallel ? " split by ane4j" : "") : "") + ")";
                String identity = "OpenBLAS (" + library + ", " + config + ", core " + core + ", " + threads + " threads)";
                return new Probe(new NativeSgemm("openblas", description, threads, parallel, symbol.get()), library, identity);
            } catch (RuntimeException | LinkageError e) {
                failures.add(library + ": " + e.getMessage());
            }
        }
        return Probe.missing(String.join("; ", failures));
    }

    /** Decides the core and puts it into the C environment; before any load of the library. */
    static CoreSetting coreSetting(CpuFeatures cpu, BlasCache cache, String probeKey) {
        String env = System.getenv(OpenBlasCore.ENV);
        if (env != null && !env.isBlank()) return new CoreSetting(null, "set by " + OpenBlasCore.ENV + "=" + env + " in the environment");
        String forced = System.getProperty(CORE_PROPERTY, "").strip();
        if (!forced.isEmpty() && !forced.equalsIgnoreCase("auto")) {
            return setenv(OpenBlasCore.ENV, forced) ? new CoreSetting(forced, "set by -D" + CORE_PROPERTY + "=" + forced)
                    : new CoreSetting(null, "-D" + CORE_PROPERTY + "=" + forced + " could not be set (setenv failed)");
        }
        if (!cpu.x86() || !System.getProperty("os.name", "").startsWith("Linux")) return new CoreSetting(null, "the library's own choice");
        Optional<String[]> seen = cache.get(probeKey).map(v -> v.split("\t", 2)).filter(v -> v.length == 2);
        if (seen.isEmpty() || BlasCache.recalibrate()) {
            seen = probeInChild();
            seen.ifPresent(v -> cache.put(probeKey, v[0] + "\t" + v[1]));
        }
        if (seen.isEmpty()) return new CoreSetting(null, "the library's own choice; not probed");
        OpenBlasCore.Advice advice = OpenBlasCore.advise(cpu, seen.get()[0], seen.get()[1]);
        if (advice.core().isEmpty()) return new CoreSetting(null, advice.why());
        String core = advice.core().get();
        return setenv(OpenBlasCore.ENV, core) ? new CoreSetting(core, "set: " + advice.why())
                : new CoreSetting(null, advice.why() + "; setenv failed, left as it is");
    }

    /** Checks the core the library reported against the setting, keeps the cache honest, and says why it is this core. */
    static String afterLoad(CpuFeatures cpu, BlasCache cache, String probeKey, String library, CoreSetting setting,
                            String core, String config) {
        if (setting.forced() != null) {
            Optional<String[]> seen = cache.get(probeKey).map(v -> v.split("\t", 2)).filter(v -> v.length == 2);
            // another version of the library than the one probed (the config names the core, so compare versions only):
            // probe again at the next start
            if (seen.isPresent() && !OpenBlasCore.version(seen.get()[1]).equals(OpenBlasCore.version(config))) cache.remove(probeKey);
            if (!core.equalsIgnoreCase(setting.forced()))
                return OpenBlasCore.ENV + "=" + setting.forced() + " did not take: the library reported " + core;
            return setting.why();
        }
        boolean envSet = System.getenv(OpenBlasCore.ENV) != null && !System.getenv(OpenBlasCore.ENV).isBlank();
        if (envSet || !library.equals(LIBRARIES.getFirst()) || core.isEmpty()) return setting.why();
        // loaded as it is: this is what the library picks by itself; a fallback is fixed from the next start on
        if (!cache.get(probeKey).orElse("").equals(core + "\t" + config)) cache.put(probeKey, core + "\t" + config);
        OpenBlasCore.Advice advice = OpenBlasCore.advise(cpu, core, config);
        return advice.core().map(c -> advice.why() + "; " + OpenBlasCore.ENV + "=" + c + " from the next start on")
                .orElse(setting.why());
    }

    /** The core and config the library reports when loaded as it is, from a child JVM; empty if that failed. */
    static Optional<String[]> probeInChild() {
        try {
            String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
            ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xshare:auto", "-XX:TieredStopAtLevel=1",
                    "-cp", System.getProperty("java.class.path"), CoreProbe.class.getName(), LIBRARIES.getFirst());
            pb.environment().remove(OpenBlasCore.ENV);
            pb.redirectErrorStream(false).redirectError(ProcessBuilder.Redirect.DISCARD);
            Process p = pb.start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return Optional.empty();
            }
            String[] v = out.split("\t", 2);
            return p.exitValue() == 0 && v.length == 2 && !v[0].isBlank() ? Optional.of(v) : Optional.empty();
        } catch (java.io.IOException | RuntimeException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    /** {@code setenv(name, value, 1)} of the C library: the environment the library's constructor reads. */
    static boolean setenv(String name, String value) {
        try (Arena arena = Arena.ofConfined()) {
            Linker linker = Linker.nativeLinker();
            MemorySegment fn = linker.defaultLookup().find("setenv").orElse(null);
            if (fn == null) return false;
            int rc = (int) linker.downcallHandle(fn, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT))
                    .invokeExact(arena.allocateFrom(name), arena.allocateFrom(value), 1);
            return rc == 0;
        } catch (Throwable t) {
            return false;
        }
    }
}
