package ane4j.backend.ane;

import java.util.Locale;

/**
 * The MIL text dialect the ANE compiler of a chip accepts (ane-facts.md §4.1): {@code program(1.3)} with
 * {@code func main<ios18>} on M3 and later; {@code program(1.0)}, {@code <ios16>}, verbose scalars and fp16
 * I/O on M1/M2 (maderix/ANE PR #6, unmerged; the benchmark report lists M1 as 1.3/ios18 "PARTIAL").
 * Override with {@code -Dane4j.milDialect=1.0|1.3} (or {@code ios16|ios18}).
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
     * The dialect for an {@code _ANEDeviceInfo aneSubType} string ("h13g", "h16g", "h17", ...), unless the
     * {@value #PROPERTY} property overrides it. h13 = M1 and h14 = M2 families get 1.0/ios16; everything else
     * (including an unknown or missing subtype) gets 1.3/ios18, the dialect all maderix training code emits.
     */
    public static MilDialect forSubType(String aneSubType) {
        String override = System.getProperty(PROPERTY);
        if (override != null && !override.isBlank()) return parse(override);
        String s = aneSubType == null ? "" : aneSubType.toLowerCase(Locale.ROOT);
        return s.startsWith("h13") || s.startsWith("h14") ? PROGRAM_1_0_IOS16 : PROGRAM_1_3_IOS18;
    }

    /** {@code 1.0}, {@code ios16}, {@code 1.3}, {@code ios18} or a constant name. */
    public static MilDialect parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        for (MilDialect d : values())
            if (t.equals(d.programVersion) || t.equals(d.opset) || t.equals(d.name().toLowerCase(Locale.ROOT))) return d;
        throw new IllegalArgumentException("[" + PROPERTY + "] unknown MIL dialect \"" + text + "\"; use 1.0 (ios16, M1/M2) or 1.3 (ios18)");
    }
}
