package ane4j.backend;

import java.util.Locale;

/**
 * Chooses the backend: {@code -Dane4j.backend=ane|ref}, else the environment variable {@code ANE4J_BACKEND}, else the
 * ANE when it is available, else the reference interpreter. Logs one INFO line saying which and why. The ANE backend
 * is loaded by name ({@value #ANE_CLASS}) and only on macOS/arm64, so nothing FFM-related is initialised elsewhere; the
 * reference backend by name too ({@value #REF_CLASS}): the SPI names its implementations and never imports them
 * (docs/DESIGN.md §2, {@code PackageLayersTest}).
 */
public final class Backends {
    private Backends() {}

    public static final String PROPERTY = "ane4j.backend";
    public static final String ENV = "ANE4J_BACKEND";
    static final String ANE_CLASS = "ane4j.backend.ane.AneBackend";
    static final String REF_CLASS = "ane4j.backend.ref.RefBackend";
    /** The reference backend's storage precision, fp16 (default) or fp32; read by {@code RefBackend}, passed on by the worker's supervisor. */
    public static final String REF_STORAGE_PROPERTY = "ane4j.ref.storage";

    /** A replacement for Apple's libraries (the tests' fake runtime); read by {@code backend.ane.ffm.ObjC}. */
    public static final String LIBRARY_OVERRIDE_PROPERTY = "ane4j.ane.libraryOverride";

    private static final System.Logger LOG = System.getLogger("ane4j.backend");

    /** The chosen backend and the reason, as logged. */
    public record Selection(Backend backend, String reason) {}

    public static Backend select() {
        Selection s = choose(System.getProperty(PROPERTY), System.getenv(ENV), System.getProperty("os.name", ""), System.getProperty("os.arch", ""),
                System.getProperty(LIBRARY_OVERRIDE_PROPERTY));
        LOG.log(System.Logger.Level.INFO, "[backend] using " + s.backend().name() + " — " + s.reason());
        return s.backend();
    }

    /** The choice for these settings (no logging); {@code property} wins over {@code env}. */
    public static Selection choose(String property, String env, String osName, String osArch) {
        return choose(property, env, osName, osArch, null);
    }

    /**
     * {@link #choose(String, String, String, String)} where an explicit {@code ane} also loads on any OS when
     * {@code libraryOverride} names a replacement runtime (a worker JVM on the fake); automatic never picks it.
     */
    public static Selection choose(String property, String env, String osName, String osArch, String libraryOverride) {
        String choice = property, source = "-D" + PROPERTY;
        if (choice == null || choice.isBlank()) { choice = env; source = ENV; }
        String c = choice == null ? "" : choice.strip().toLowerCase(Locale.ROOT);
        return switch (c) {
            case "ref" -> new Selection(reference(), source + "=ref");
            case "ane" -> {
                Backend ane = loadAne(osName, osArch, libraryOverride);
                if (ane instanceof Unavailable u)
                    throw new BackendException("[backend] " + source + "=ane but the ANE backend is not available: " + u.why + "; use ref, or run on Apple silicon macOS");
                yield new Selection(ane, source + "=ane");
            }
            case "" -> {
                // automatic never bets on a macOS older than 15, which the private ANE path was never written or tested
                // for (docs/macos-first-contact.md #7); an explicit ane still tries it
                MacOs os = osName.toLowerCase(Locale.ROOT).startsWith("mac") ? MacOs.current() : MacOs.NONE;
                if (os.isMac() && os.major() < 15)
                    yield new Selection(reference(), "automatic: macOS " + os + " is older than 15, the oldest the ANE path is written for (use --backend ane to try it)");
                Backend ane = loadAne(osName, osArch, null);
                yield ane instanceof Unavailable u
                        ? new Selection(reference(), "automatic: ANE not available (" + u.why + ")")
                        : new Selection(ane, "automatic: ANE available");
            }
            default -> throw new IllegalArgumentException("[backend] unknown " + source + "=" + choice + "; use ane or ref (or leave it unset for automatic)");
        };
    }

    /**
     * What a run asks of its backend, given explicitly instead of through system properties.
     *
     * @param choice        {@code ane} | {@code ref} | null: automatic ({@code -Dane4j.backend}, else {@code ANE4J_BACKEND}, else the ANE where available)
     * @param fp32Storage   the reference backend keeps fp16-typed values in fp32
     * @param compileBudget compiles before {@link CompileBudgetExceededException}, or null: the backend's default
     */
    public record Settings(String choice, boolean fp32Storage, Long compileBudget) {}

    /** Whether {@code -D}{@value #REF_STORAGE_PROPERTY} ({@code fp16} when unset) asks for fp32 storage; another value is refused in one line. */
    public static boolean fp32StorageProperty() {
        String s = System.getProperty(REF_STORAGE_PROPERTY, "fp16").strip();
        if (!s.equals("fp16") && !s.equals("fp32")) throw new IllegalArgumentException("[ref] -D" + REF_STORAGE_PROPERTY + "=" + s + " must be fp16 or fp32");
        return s.equals("fp32");
    }

    /**
     * A new backend for these settings, never writing a system property: the implementation is loaded by name and given
     * the settings through its {@code (Backends.Settings)} constructor. Logs nothing.
     */
    public static Selection create(Settings s) {
        String property = s.choice() != null ? s.choice() : System.getProperty(PROPERTY);
        Selection chosen = choose(property, s.choice() != null ? null : System.getenv(ENV), System.getProperty("os.name", ""),
                System.getProperty("os.arch", ""), System.getProperty(LIBRARY_OVERRIDE_PROPERTY));
        String name = chosen.backend().name();
        if (name.equals("ref")) return new Selection(load(REF_CLASS, s), chosen.reason());
        if (name.equals("ane") && s.compileBudget() != null) return new Selection(load(ANE_CLASS, s), chosen.reason());
        return chosen;
    }

    private static Backend load(String className, Settings s) {
        try {
            return (Backend) Class.forName(className).getDeclaredConstructor(Settings.class).newInstance(s);
        } catch (java.lang.reflect.InvocationTargetException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw new BackendException("[backend] " + className + " failed to start: " + e.getCause());
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new BackendException("[backend] " + className + " cannot be loaded: " + e + "; is the ane4j jar complete?");
        }
    }

    /** A new reference backend (always on the class path: it is part of the same jar). */
    public static Backend reference() {
        try {
            return (Backend) Class.forName(REF_CLASS).getDeclaredConstructor().newInstance();
        } catch (java.lang.reflect.InvocationTargetException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;   // e.g. a bad -Dane4j.ref.storage, its one-line message intact
            throw new BackendException("[backend] " + REF_CLASS + " failed to start: " + e.getCause());
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new BackendException("[backend] " + REF_CLASS + " cannot be loaded: " + e + "; is the ane4j jar complete?");
        }
    }

    private static Backend loadAne(String osName, String osArch, String libraryOverride) {
        boolean mac = osName.toLowerCase(Locale.ROOT).startsWith("mac");
        boolean arm = osArch.equals("aarch64") || osArch.equals("arm64");
        boolean overridden = libraryOverride != null && !libraryOverride.isBlank();
        if ((!mac || !arm) && !overridden) return new Unavailable("not macOS on Apple silicon (" + osName + "/" + osArch + ")");
        try {
            Class<?> k = Class.forName(ANE_CLASS);
            Backend b = (Backend) k.getDeclaredConstructor().newInstance();
            return b.isAvailable() ? b : new Unavailable(ANE_CLASS + ".isAvailable() is false");
        } catch (ClassNotFoundException e) {
            return new Unavailable(ANE_CLASS + " is not on the class path");
        } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
            return new Unavailable(ANE_CLASS + " failed to load: " + e);
        }
    }

    /** Marker for "no ANE", carrying the reason. */
    private record Unavailable(String why) implements Backend {
        @Override public String name() { return "none"; }
        @Override public boolean isAvailable() { return false; }
        @Override public Kernel compile(ane4j.mil.Program program, String functionName) { throw new BackendException("[backend] " + why); }
        @Override public long compileCount() { return 0; }
        @Override public long compileBudget() { return 0; }
    }
}
