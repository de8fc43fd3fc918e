package ane4j.run;

/** The ane4j version: the jar manifest's {@code Implementation-Version}, which the build takes from the pom. */
public final class Version {
    private Version() {}

    /** Where no jar manifest is read (classes run from {@code target/classes}, as the tests do). */
    public static final String UNPACKAGED = "unpackaged (no Implementation-Version: not run from the ane4j jar)";

    /** The version in the jar's manifest, or {@link #UNPACKAGED}. */
    public static String ane4j() {
        String v = Version.class.getPackage().getImplementationVersion();
        return v != null && !v.isBlank() ? v : UNPACKAGED;
    }
}
