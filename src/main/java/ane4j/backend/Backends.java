package ane4j.backend;

import ane4j.backend.ref.RefBackend;

import java.util.Locale;

/**
 * Chooses the backend: {@code -Dane4j.backend=ane|ref}, else the environment variable {@code ANE4J_BACKEND}, else the
 * ANE when it is available, else the reference interpreter. Logs one INFO line saying which and why. The ANE backend
 * is loaded by name ({@value #ANE_CLASS}) and only on macOS/arm64, so nothing FFM-related is initialised elsewhere.
 */
public final class Backends {
    private Backends() {}

    public static final String PROPERTY = "ane4j.backend";
    public static final String ENV = "ANE4J_BACKEND";
    static final String ANE_CLASS = "ane4j.backend.ane.AneBackend";

    private static final System.Logger LOG = System.getLogger("ane4j.backend");

    /** The chosen backend and the reason, as logged. */
    public record Selection(Backend backend, String reason) {}

    public static Backend select() {
        Selection s = choose(System.getProperty(PROPERTY), System.getenv(ENV), System.getProperty("os.name", ""), System.getProperty("os.arch", ""));
        LOG.log(System.Logger.Level.INFO, "[backend] using " + s.backend().name() + " — " + s.reason());
        return s.backend();
    }

    /** The choice for these settings (no logging); {@code property} wins over {@code env}. */
    public static Selection choose(String property, String env, String osName, String osArch) {
        String choice = property, source = "-D" + PROPERTY;
        if (choice == null || choice.isBlank()) { choice = env; source = ENV; }
        String c = choice == null ? "" : choice.strip().toLowerCase(Locale.ROOT);
        return switch (c) {
            case "ref" -> new Selection(new RefBackend(), source + "=ref");
            case "ane" -> {
                Backend ane = loadAne(osName, osArch);
                if (ane instanceof Unavailable u)
                    throw new BackendException("[backend] " + source + "=ane but the ANE backend is not available: " + u.why + "; use ref, or run on Apple silicon macOS");
                yield new Selection(ane, source + "=ane");
            }
            case "" -> {
                Backend ane = loadAne(osName, osArch);
                yield ane instanceof Unavailable u
                        ? new Selection(new RefBackend(), "automatic: ANE not available (" + u.why + ")")
                        : new Selection(ane, "automatic: ANE available");
            }
            default -> throw new IllegalArgumentException("[backend] unknown " + source + "=" + choice + "; use ane or ref (or leave it unset for automatic)");
        };
    }

    private static Backend loadAne(String osName, String osArch) {
        boolean mac = osName.toLowerCase(Locale.ROOT).startsWith("mac");
        boolean arm = osArch.equals("aarch64") || osArch.equals("arm64");
        if (!mac || !arm) return new Unavailable("not macOS on Apple silicon (" + osName + "/" + osArch + ")");
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
