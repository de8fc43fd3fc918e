package ane4j.backend.ane;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * A cache of what the ANE compiler leaves in a model's hex directory, keyed by the content-derived hex id
 * (ane-facts.md §2.3): maderix/ANE PR #22 found that after compile {@code <hex>/} holds {@code net.plist} (and
 * {@code data} for BLOBFILE models), and that restoring those two files before {@code compileWithQoS} makes the compile
 * skip its work (700 ms vs 3800 ms for 74 kernels). So a restarted worker compiles its kernels from the cache.
 * Layout: {@code <root>/<hex>/net.plist}, {@code <root>/<hex>/data}. Off by default: {@value #PROPERTY}=true turns it on
 * (root {@code ~/.ane4j/cache}, or {@value #DIR_PROPERTY}).
 */
public record CompileCache(Path root) {
    public static final String PROPERTY = "ane4j.ane.compileCache";
    public static final String DIR_PROPERTY = "ane4j.ane.compileCacheDir";
    /** The compiler outputs PR #22 caches; {@code net.plist} must be present for an entry to count. */
    public static final List<String> FILES = List.of("net.plist", "data");

    /** The cache the system properties ask for, or null when it is off. */
    public static CompileCache fromSystemProperties() {
        String on = System.getProperty(PROPERTY, "false").strip().toLowerCase(Locale.ROOT);
        if (!on.equals("true") && !on.equals("false"))
            throw new IllegalArgumentException("[" + PROPERTY + "] \"" + on + "\" must be true or false");
        if (on.equals("false")) return null;
        String dir = System.getProperty(DIR_PROPERTY);
        return new CompileCache(dir != null && !dir.isBlank() ? Path.of(dir) : Path.of(System.getProperty("user.home"), ".ane4j", "cache"));
    }

    /** The entry for one hex id. */
    public Path entry(String hexId) { return root.resolve(hexId); }

    public boolean contains(String hexId) { return Files.isRegularFile(entry(hexId).resolve(FILES.get(0))); }

    /** Copies a cached entry into the model directory before compile; false when there is none. */
    boolean restore(String hexId, Path modelDir) {
        if (!contains(hexId)) return false;
        try {
            for (String f : FILES) {
                Path src = entry(hexId).resolve(f);
                if (Files.isRegularFile(src)) Files.copy(src, modelDir.resolve(f), StandardCopyOption.REPLACE_EXISTING);
            }
            return true;
        } catch (IOException e) {
            throw new UncheckedIOException("[ane.cache] cannot restore " + entry(hexId) + " into " + modelDir + ": " + e.getMessage(), e);
        }
    }

    /**
     * Saves the compiler's outputs after a successful compile; false when the compiler left no {@code net.plist}. Written
     * to a temporary directory and moved into place, so a concurrent reader never sees half an entry.
     */
    boolean store(String hexId, Path modelDir) {
        if (!Files.isRegularFile(modelDir.resolve(FILES.get(0))) || contains(hexId)) return false;
        Path tmp = null;
        try {
            Files.createDirectories(root);
            tmp = Files.createTempDirectory(root, hexId + ".tmp");
            for (String f : FILES) {
                Path src = modelDir.resolve(f);
                if (Files.isRegularFile(src)) Files.copy(src, tmp.resolve(f));
            }
            try {
                Files.move(tmp, entry(hexId), StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, entry(hexId));
            }
            tmp = null;
            return true;
        } catch (IOException e) {
            if (contains(hexId)) return false;   // another process stored it first
            throw new UncheckedIOException("[ane.cache] cannot store " + modelDir + " in " + root + ": " + e.getMessage(), e);
        } finally {
            if (tmp != null) deleteQuietly(tmp);
        }
    }

    private static void deleteQuietly(Path dir) {
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // a leftover temp dir is harmless
        }
    }
}
