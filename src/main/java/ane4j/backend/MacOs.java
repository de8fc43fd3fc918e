package ane4j.backend;

import java.util.Locale;

/**
 * The macOS release this process runs on, and the private-ANE rules that follow from it (docs/macos27-ane.md).
 * Read from {@code sw_vers} on Darwin, because a JDK built with an older Xcode SDK reports {@code os.version} 16.x on
 * macOS 26 (JDK-8359830; macos-first-contact #25); {@code -Dane4j.macos=27.0} overrides it (tests, and the fake runtime's
 * OS profiles). Not macOS: {@link #NONE}.
 *
 * @param version the product version ("27.0", "26.6.2"), "" when not macOS
 * @param build   the build ("26A428"), "" when unknown
 */
public record MacOs(String version, String build) {
    public static final String PROPERTY = "ane4j.macos";
    public static final MacOs NONE = new MacOs("", "");

    private static volatile MacOs current;

    /** This machine's release ({@value #PROPERTY} first); read once per process, unless the property is set. */
    public static MacOs current() {
        String forced = System.getProperty(PROPERTY);
        if (forced != null && !forced.isBlank()) return parse(forced.strip());
        MacOs m = current;
        if (m == null) current = m = read();
        return m;
    }

    /** "27.0" or "27.0 (26A428)". */
    public static MacOs parse(String text) {
        String t = text.strip();
        int p = t.indexOf(" (");
        String build = p > 0 && t.endsWith(")") ? t.substring(p + 2, t.length() - 1) : "";
        String v = p > 0 ? t.substring(0, p) : t;
        if (!v.matches("\\d+(\\.\\d+){0,2}"))
            throw new IllegalArgumentException("[" + PROPERTY + "] '" + text + "' is not a macOS version like 27.0 or \"27.0 (26A428)\"");
        return new MacOs(v, build);
    }

    private static MacOs read() {
        if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("mac")) return NONE;
        String v = swVers("-productVersion"), b = swVers("-buildVersion");
        if (v == null || v.isBlank()) {
            // no sw_vers: os.version, with the 16.x of old-SDK JDKs read as 26.x (JDK-8359830)
            v = System.getProperty("os.version", "");
            if (v.startsWith("16.")) v = "26." + v.substring(3);
        }
        return new MacOs(v.strip(), b == null ? "" : b.strip());
    }

    private static String swVers(String flag) {
        try {
            Process p = new ProcessBuilder("/usr/bin/sw_vers", flag).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            return p.waitFor(5, java.util.concurrent.TimeUnit.SECONDS) && p.exitValue() == 0 ? out : null;
        } catch (Exception e) {
            return null;
        }
    }

    public boolean isMac() { return !version.isEmpty(); }

    /** The major release (15, 26, 27), 0 when not macOS. */
    public int major() {
        if (version.isEmpty()) return 0;
        int dot = version.indexOf('.');
        return Integer.parseInt(dot < 0 ? version : version.substring(0, dot));
    }

    /**
     * macOS 27 checks a hash per bundle file at compile and fails a program with two or more weight files with Code=10
     * (docs/macos27-ane.md C1/C2: pmetal pack_weights, the "Q38" notes on 27.0 26A428 M5 Max, Espresso and omlx#3124 on
     * M4 Max/M5 Max); programs go to the compiler with at most one, packed ({@link ane4j.mil.Program#packedWeights}).
     * Not yet run on Apple hardware by ane4j.
     */
    public boolean oneWeightFile() { return major() >= 27; }

    /**
     * macOS 27 lays I/O rows out at a 64-byte stride (docs/macos27-ane.md C7, pmetal AneTensorLayout; one source): a
     * tensor whose last axis is not a multiple of 64 bytes is misread from a packed surface. Not yet run on Apple hardware.
     */
    public boolean rowsAt64Bytes() { return major() >= 27; }

    /** "27.0 (26A428)", "27.0", or "not macOS". */
    @Override public String toString() {
        if (!isMac()) return "not macOS";
        return build.isEmpty() ? version : version + " (" + build + ")";
    }
}
