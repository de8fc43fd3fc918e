package ane4j.mil;

/**
 * The two MIL text dialects the ANE compiler accepts (docs/ane-facts.md §4.1, docs/anchors.md §2.1):
 * {@code program(1.3)} / {@code <ios18>} with short scalars for M3 and later, and {@code program(1.0)} / {@code <ios16>} with
 * verbose {@code tensor<T, []>(…)} scalars, which M1/M2 need (maderix/ANE PR #6).
 */
public enum Dialect {
    IOS18("1.3", Opset.IOS18, false),
    IOS16("1.0", Opset.IOS16, true);

    private final String programVersion;
    private final Opset opset;
    private final boolean verboseScalars;

    Dialect(String programVersion, Opset opset, boolean verboseScalars) {
        this.programVersion = programVersion;
        this.opset = opset;
        this.verboseScalars = verboseScalars;
    }

    public String programVersion() { return programVersion; }
    public Opset opset() { return opset; }
    public boolean verboseScalars() { return verboseScalars; }

    /** {@code ane4j.milDialect=ios16|ios18}, else the given default. */
    public static Dialect fromProperty(Dialect fallback) {
        String s = System.getProperty("ane4j.milDialect");
        if (s == null || s.isBlank()) return fallback;
        return parse(s);
    }

    public static Dialect parse(String s) {
        return switch (s.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "ios18", "1.3" -> IOS18;
            case "ios16", "1.0" -> IOS16;
            default -> throw new MilException("[mil] unknown dialect '" + s + "' (ios18 or ios16)");
        };
    }
}
