package ane4j.backend.ane;

import java.util.Locale;

/**
 * The MIL text dialects of the ANE compiler: {@code program(1.3)} with {@code func main<ios18>} and short scalars, which
 * every maderix training generator emits and which ran on M3/M4 (and on M1 Pro/Max in maderix's benchmark report,
 * 148–167 ms/step with {@code stories_mil.h}); and {@code program(1.0)}, {@code <ios16>}, verbose scalars, which maderix
 * PR #6 (unmerged, "Tested on M1 Pro") says M1/M2 need. The evidence conflicts for M1/M2 (docs/ane-audit.md F7, docs/ane-facts.md
 * errata 5), so there ios18 is tried first and ios16 on a compile failure ({@link #fallbackFor}; the backend remembers
 * which compiled). Override with {@code -Dane4j.milDialect=1.0|1.3} (or {@code ios16|ios18}).
 */
public enum MilDialect {
    PROGRAM_1_0_IOS16("1.0", "ios16"),
    PROGRAM_1_3_IOS18("1.3", "ios18");

    public static final String PROPERTY = "ane4j.milDialect";

    private final String programVersion;
    private final String opset;

    MilDialect(String programVersion, String opset) {
        this.programVersion = programVersion;
        this.opset = opset;
    }

    /** The {@code program(...)} version, e.g. {@code 1.3}. */
    public String programVersion() { return programVersion; }

    /** The function opset suffix, e.g. {@code ios18}. */
    public String opset() { return opset; }

    /** The writer's dialect ({@link ane4j.mil.MilWriter#write}). */
    public ane4j.mil.Dialect mil() {
        return this == PROGRAM_1_0_IOS16 ? ane4j.mil.Dialect.IOS16 : ane4j.mil.Dialect.IOS18;
    }

    /**
     * The first dialect to compile in for an {@code _ANEDeviceInfo aneSubType} string ("h13g", "h16g", "h17", ...):
     * the {@value #PROPERTY} property when set, else 1.3/ios18 on every chip.
     */
    public static MilDialect forSubType(String aneSubType) {
        MilDialect forced = forced();
        return forced != null ? forced : PROGRAM_1_3_IOS18;
    }

    /** The dialect {@value #PROPERTY} forces, or null. */
    public static MilDialect forced() {
        String override = System.getProperty(PROPERTY);
        return override == null || override.isBlank() ? null : parse(override);
    }

    /**
     * The dialect to retry in when a compile in {@code first} fails: 1.0/ios16 after ios18 on h13 (M1) and h14 (M2),
     * where the evidence conflicts; none elsewhere.
     */
    public static java.util.Optional<MilDialect> fallbackFor(String aneSubType, MilDialect first) {
        String s = aneSubType == null ? "" : aneSubType.toLowerCase(Locale.ROOT);
        boolean m1m2 = s.startsWith("h13") || s.startsWith("h14");
        return m1m2 && first == PROGRAM_1_3_IOS18 ? java.util.Optional.of(PROGRAM_1_0_IOS16) : java.util.Optional.empty();
    }

    /** {@code 1.0}, {@code ios16}, {@code 1.3}, {@code ios18} or a constant name. */
    public static MilDialect parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        for (MilDialect d : values())
            if (t.equals(d.programVersion) || t.equals(d.opset) || t.equals(d.name().toLowerCase(Locale.ROOT))) return d;
        throw new IllegalArgumentException("[" + PROPERTY + "] unknown MIL dialect \"" + text + "\"; use 1.0 (ios16, M1/M2) or 1.3 (ios18)");
    }
}
