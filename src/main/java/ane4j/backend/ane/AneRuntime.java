package ane4j.backend.ane;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Whether the ANE can be used in this process. Decides without touching FFM where it can: on an OS other
 * than macOS, with no {@value #LIBRARY_OVERRIDE_PROPERTY}, it answers false and no class of
 * {@code ane4j.backend.ane.ffm} is loaded. Never throws.
 */
public final class AneRuntime {
    /** One shared library that provides every native symbol (the fake runtime in the contract tests); a constant, so naming it loads no ffm class. */
    public static final String LIBRARY_OVERRIDE_PROPERTY = ane4j.backend.ane.ffm.ObjC.LIBRARY_OVERRIDE_PROPERTY;
    /** The private framework's bundle; the binary itself lives in the dyld shared cache (docs/ane-facts.md §2.1). */
    static final String FRAMEWORK_DIR = "/System/Library/PrivateFrameworks/AppleNeuralEngine.framework";

    private static volatile String unavailableReason;
    private static volatile Boolean available;

    private AneRuntime() {}

    /** True when the framework (or the override library) loads and its ANE classes resolve. */
    public static boolean isAvailable() {
        Boolean a = available;
        if (a != null) return a;
        synchronized (AneRuntime.class) {
            if (available == null) available = probe();
            return available;
        }
    }

    /** Why {@link #isAvailable()} said false (null when available or not yet asked). */
    public static String unavailableReason() { return unavailableReason; }

    private static boolean probe() {
        try {
            String override = System.getProperty(LIBRARY_OVERRIDE_PROPERTY);
            boolean mac = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("mac");
            if (override == null || override.isBlank()) {
                if (!mac) return no("not macOS (" + System.getProperty("os.name") + ")");
                if (!Files.isDirectory(Path.of(FRAMEWORK_DIR))) return no(FRAMEWORK_DIR + " does not exist");
            }
            Native.check();   // first touch of the ffm package
            return true;
        } catch (Throwable t) {
            return no(String.valueOf(t.getMessage() != null ? t.getMessage() : t));
        }
    }

    private static boolean no(String reason) {
        unavailableReason = reason;
        return false;
    }

    /** Kept in its own class so that the ffm classes it names load only when it runs. */
    private static final class Native {
        static void check() {
            ane4j.backend.ane.ffm.ObjC objc = ane4j.backend.ane.ffm.ObjC.get();
            for (String cls : new String[] {"_ANEInMemoryModelDescriptor", "_ANEInMemoryModel", "_ANERequest", "_ANEIOSurfaceObject"})
                objc.cls(cls);
        }
    }
}
