package ane4j.blas;

import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;
import java.util.Properties;

/**
 * What ane4j learnt about this machine's BLAS, kept between runs in a small properties file: the core a DYNAMIC_ARCH
 * OpenBLAS picks by itself, and the calibration of the Java GEMM against the native one. Default
 * {@code $XDG_CACHE_HOME/ane4j/blas.properties} (else {@code ~/.cache/ane4j/blas.properties}); {@code -Dane4j.blas.cache=FILE}
 * moves it. Delete it, or set {@code -Dane4j.blas.recalibrate=true} ({@code ANE4J_BLAS_RECALIBRATE=1}), to measure again.
 * An unreadable or unwritable file is never an error: the values are then measured for this run only.
 */
final class BlasCache {
    static final String PROPERTY = "ane4j.blas.cache";
    static final String RECALIBRATE_PROPERTY = "ane4j.blas.recalibrate";
    static final String RECALIBRATE_ENV = "ANE4J_BLAS_RECALIBRATE";

    private final Path file;
    private final Properties values = new Properties();
    private String problem = "";

    BlasCache(Path file) {
        this.file = file;
        if (file == null || !Files.exists(file)) return;
        try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            values.load(r);
        } catch (IOException | RuntimeException e) {
            values.clear();
            problem = "cache " + file + " unreadable (" + e.getMessage() + "): measured again";
        }
    }

    static BlasCache standard() {
        String p = System.getProperty(PROPERTY);
        if (p != null && !p.isBlank()) return new BlasCache(Path.of(p));
        String xdg = System.getenv("XDG_CACHE_HOME");
        String home = System.getProperty("user.home");
        Path dir = xdg != null && !xdg.isBlank() ? Path.of(xdg) : home != null ? Path.of(home, ".cache") : null;
        return new BlasCache(dir == null ? null : dir.resolve("ane4j").resolve("blas.properties"));
    }

    static boolean recalibrate() {
        return Boolean.parseBoolean(System.getProperty(RECALIBRATE_PROPERTY, ""))
                || "1".equals(System.getenv(RECALIBRATE_ENV)) || "true".equalsIgnoreCase(System.getenv(RECALIBRATE_ENV));
    }

    Path file() { return file; }

    /** Why the file could not be read ("" if it could or did not exist). */
    String problem() { return problem; }

    synchronized Optional<String> get(String key) { return Optional.ofNullable(values.getProperty(key)); }

    synchronized void put(String key, String value) {
        values.setProperty(key, value);
        save();
    }

    synchronized void remove(String key) {
        if (values.remove(key) != null) save();
    }

    private void save() {
        if (file == null) return;
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Path tmp = Files.createTempFile(file.toAbsolutePath().getParent(), "blas", ".tmp");
            try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
                values.store(w, "ane4j.blas: what was measured on this machine; delete this file to measure again");
            }
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            if (problem.isEmpty()) problem = "cache " + file + " not written (" + e.getMessage() + ")";
        }
    }

    /** Keys may only hold characters a properties file keeps as they are. */
    static String key(String... parts) {
        return String.join(".", parts).replaceAll("[^A-Za-z0-9._-]+", "_");
    }
}
