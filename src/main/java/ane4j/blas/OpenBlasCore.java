package ane4j.blas;

import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which {@code OPENBLAS_CORETYPE} a DYNAMIC_ARCH OpenBLAS should run on this CPU, when the core it picked itself is
 * below what the CPU can do.
 *
 * <p>Facts from OpenBLAS's {@code driver/others/dynamic.c} (OpenMathLib/OpenBLAS, tags v0.3.20–v0.3.28, develop):
 * <ul>
 * <li>the x86-64 core names (what {@code openblas_get_corename} returns) and the instruction set each core's kernels
 *     need, listed in {@link #X86_LEVELS};
 * <li>{@code OPENBLAS_CORETYPE} is read by {@code getenv} in {@code gotoblas_dynamic_init}, which runs in the library's
 *     constructor, so it must be in the C environment before the first {@code dlopen};
 * <li>{@code force_coretype} compares the value with the first 24 names up to 0.3.21 (so {@code Cooperlake} cannot be
 *     forced there), the first 25 from 0.3.22 ({@code SapphireRapids}, added in 0.3.24, cannot be forced in any
 *     release); {@code SkylakeX}, {@code Haswell} and {@code Sandybridge} can be forced in every 0.3 release, and
 *     {@code Cooperlake}'s sgemm is {@code SkylakeX}'s;
 * <li>up to 0.3.25 an Intel family-6 CPU whose extended model is not in its table falls through to the
 *     {@code Prescott} (SSE3) core (a {@code break} was added in 0.3.26): Debian 12's 0.3.21 runs Prescott kernels on
 *     Intel Xeons newer than it (issue 16).
 * </ul>
 * arm64 is deliberately not forced: which of its cores' kernels are safe on a CPU is not decidable from the feature
 * list alone (a wrong guess is an illegal instruction, not a slow GEMM); there the calibration against the Java GEMM
 * decides.
 */
final class OpenBlasCore {
    private OpenBlasCore() {}

    static final String ENV = "OPENBLAS_CORETYPE";

    /** Every x86-64 core name of dynamic.c and the instruction set its kernels use. */
    static final Map<String, CpuFeatures.X86Level> X86_LEVELS = Map.ofEntries(
            Map.entry("katmai", CpuFeatures.X86Level.SSE), Map.entry("coppermine", CpuFeatures.X86Level.SSE),
            Map.entry("northwood", CpuFeatures.X86Level.SSE), Map.entry("prescott", CpuFeatures.X86Level.SSE),
            Map.entry("banias", CpuFeatures.X86Level.SSE), Map.entry("atom", CpuFeatures.X86Level.SSE),
            Map.entry("core2", CpuFeatures.X86Level.SSE), Map.entry("penryn", CpuFeatures.X86Level.SSE),
            Map.entry("dunnington", CpuFeatures.X86Level.SSE), Map.entry("nehalem", CpuFeatures.X86Level.SSE),
            Map.entry("athlon", CpuFeatures.X86Level.SSE), Map.entry("opteron", CpuFeatures.X86Level.SSE),
            Map.entry("opteron_sse3", CpuFeatures.X86Level.SSE), Map.entry("barcelona", CpuFeatures.X86Level.SSE),
            Map.entry("nano", CpuFeatures.X86Level.SSE), Map.entry("bobcat", CpuFeatures.X86Level.SSE),
            Map.entry("sandybridge", CpuFeatures.X86Level.AVX), Map.entry("bulldozer", CpuFeatures.X86Level.AVX),
            Map.entry("piledriver", CpuFeatures.X86Level.AVX), Map.entry("steamroller", CpuFeatures.X86Level.AVX),
            Map.entry("excavator", CpuFeatures.X86Level.AVX),
            Map.entry("haswell", CpuFeatures.X86Level.AVX2), Map.entry("zen", CpuFeatures.X86Level.AVX2),
            Map.entry("skylakex", CpuFeatures.X86Level.AVX512), Map.entry("cooperlake", CpuFeatures.X86Level.AVX512),
            Map.entry("sapphirerapids", CpuFeatures.X86Level.AVX512));

    /** The name forced for each level: one that every 0.3 release accepts. */
    static final Map<CpuFeatures.X86Level, String> FORCE = Map.of(
            CpuFeatures.X86Level.AVX512, "SkylakeX", CpuFeatures.X86Level.AVX2, "Haswell",
            CpuFeatures.X86Level.AVX, "Sandybridge");

    /** What to do about the core: force {@code core} (with why), or nothing (with why not). */
    record Advice(Optional<String> core, String why) {}

    /**
     * @param reported what the library picked by itself ({@code openblas_get_corename}), "" if unknown
     * @param config   {@code openblas_get_config}, e.g. {@code "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64"}
     */
    static Advice advise(CpuFeatures cpu, String reported, String config) {
        if (!cpu.x86()) return new Advice(Optional.empty(), "not forced on " + cpu.arch());
        if (!config.contains("DYNAMIC_ARCH")) return new Advice(Optional.empty(), "not a DYNAMIC_ARCH build: its core is fixed");
        CpuFeatures.X86Level got = X86_LEVELS.get(reported.strip().toLowerCase(Locale.ROOT));
        if (got == null) return new Advice(Optional.empty(), "core name '" + reported + "' unknown: left as it is");
        CpuFeatures.X86Level can = cpu.x86Level();
        if (got.compareTo(can) >= 0) return new Advice(Optional.empty(), "the library's own choice");
        String core = FORCE.get(can);
        return new Advice(Optional.of(core), "the library reported " + reported + " on " + article(can) + " CPU it does not know");
    }

    private static String article(CpuFeatures.X86Level l) {
        return switch (l) {
            case AVX512 -> "an AVX-512";
            case AVX2 -> "an AVX2";
            case AVX -> "an AVX";
            case SSE -> "an SSE";
        };
    }

    private static final Pattern VERSION = Pattern.compile("OpenBLAS\\s+(\\d+\\.\\d+\\.\\d+)");

    /** "0.3.21" from the config string, or "". */
    static String version(String config) {
        Matcher m = VERSION.matcher(config);
        return m.find() ? m.group(1) : "";
    }
}
