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

    /** The value a process of this machine decided: cached and usable, or just measured (replacing {@code discarded}). */
    record Decision(String value, boolean measured, String discarded) {}

    /**
     * The cached value of {@code key} if it is usable, else {@code measure}'s, saved. Under a lock on the file, which is
     * read again first: processes that start together (a worker beside its notebook) measure once and agree, and no
     * process's save drops another's keys. Without a usable file the value is measured for this process alone.
     */
    synchronized Decision decide(String key, java.util.function.Predicate<String> usable, java.util.function.Supplier<String> measure) {
        try (FileLockHolder lock = FileLockHolder.acquire(file)) {
            reload();
            String old = BlasCache.recalibrate() ? null : values.getProperty(key);
            if (old != null && usable.test(old)) return new Decision(old, false, null);
            String v = measure.get();
            values.setProperty(key, v);
            save();
            return new Decision(v, true, old);
        }
    }

    private void reload() {
        if (file == null || !Files.exists(file) || !problem.isEmpty()) return;
        Properties now = new Properties();
        try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            now.load(r);
            values.putAll(now);
        } catch (IOException | RuntimeException e) {
            // kept what was read at start
        }
    }

    /** How long a process waits for another's calibration before it measures on its own. */
    static volatile java.time.Duration LOCK_WAIT = java.time.Duration.ofSeconds(30);   // shorter in a test

    /** An exclusive lock on {@code FILE.lock} beside the cache, or nothing where it cannot be had (or not within {@link #LOCK_WAIT}). */
    private record FileLockHolder(java.nio.channels.FileChannel channel) implements AutoCloseable {
        static FileLockHolder acquire(Path file) {
            if (file == null) return new FileLockHolder(null);
            try {
                Path lock = file.resolveSibling(file.getFileName() + ".lock");
                Files.createDirectories(lock.toAbsolutePath().getParent());
                var ch = java.nio.channels.FileChannel.open(lock, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE);
                try {
                    // bounded: a holder that is stopped mid-measurement (Ctrl-Z, a debugger) must not hold every other
                    // ane4j start on the machine; after LOCK_WAIT this process goes on without the lock (it measures alone)
                    long until = System.nanoTime() + LOCK_WAIT.toNanos();
                    while (ch.tryLock() == null) {
                        if (System.nanoTime() > until) {
                            ch.close();
                            return new FileLockHolder(null);
                        }
                        Thread.sleep(50);
                    }
                } catch (IOException | RuntimeException | InterruptedException e) {
                    ch.close();
                    if (e instanceof InterruptedException) Thread.currentThread().interrupt();
                    return new FileLockHolder(null);
                }
                return new FileLockHolder(ch);
            } catch (IOException | RuntimeException e) {
                return new FileLockHolder(null);
            }
        }

        @Override public void close() {
            if (channel == null) return;
            try {
                channel.close();   // releases the lock
            } catch (IOException e) {
                // released when the process exits
            }
        }
    }

    synchronized void put(String key, String value) {
        try (FileLockHolder lock = FileLockHolder.acquire(file)) {
            reload();
            values.setProperty(key, value);
            save();
        }
    }

    synchronized void remove(String key) {
        try (FileLockHolder lock = FileLockHolder.acquire(file)) {
            reload();
            if (values.remove(key) != null) save();
        }
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
