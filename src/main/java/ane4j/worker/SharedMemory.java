package ane4j.worker;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * The user's side of the shared tensors: one file per region, mapped read-write in the user's JVM and (by path) in the
 * worker. Files live in {@code /dev/shm} when it has room (memory, no disk writes), else in {@code java.io.tmpdir}, in a
 * directory per supervisor that is deleted on close. {@code ANE4J_SHARED_DIR} names another place: macOS has no
 * {@code /dev/shm}, and its temp dir is on the SSD, whose file cache may write the shared pages back (a RAM disk:
 * {@code diskutil erasevolume APFS ane4j $(hdiutil attach -nomount ram://4194304)}, then ANE4J_SHARED_DIR=/Volumes/ane4j). A region is found again from any segment inside it, so views of a
 * shared buffer are passed without a copy too.
 */
final class SharedMemory implements AutoCloseable {
    /** One shared file and its mapping in this JVM. */
    record Region(long id, Path path, long size, Arena arena, MemorySegment segment) {
        long base() { return segment.address(); }
    }

    private static final long SHM_HEADROOM = 256L << 20;
    private final Path dir, fallbackDir;
    private final TreeMap<Long, Region> byAddress = new TreeMap<>();
    private final AtomicLong ids = new AtomicLong();

    private static final java.util.regex.Pattern NAME = java.util.regex.Pattern.compile("ane4j-(\\d{1,19})-[0-9a-f]{1,16}");

    SharedMemory(Path preferred) {
        String name = "ane4j-" + ProcessHandle.current().pid() + "-" + Long.toHexString(System.nanoTime());
        try {
            Path tmp = tmpDir();
            Path base = preferred != null ? preferred : defaultBase(System.getenv(SHARED_DIR_ENV), tmp);
            this.dir = Files.createDirectories(base.resolve(name));
            this.fallbackDir = base.equals(tmp) ? dir : tmp.resolve(name);
        } catch (IOException e) {
            String where = e instanceof java.nio.file.FileSystemException f && f.getFile() != null ? " " + f.getFile() : "";
            throw new UncheckedIOException("[worker] cannot create the shared tensor directory" + where + ": " + ane4j.run.RunFolder.reason(e), e);
        }
    }

    private static final Path SHM = Path.of("/dev/shm");
    static final String SHARED_DIR_ENV = "ANE4J_SHARED_DIR";

    /** {@code ANE4J_SHARED_DIR} when set, else /dev/shm where it is writable, else the temp dir. */
    static Path defaultBase(String env, Path tmp) {
        if (env != null && !env.isBlank()) {
            Path p = Path.of(env);
            if (!Files.isDirectory(p) || !Files.isWritable(p))
                throw new UncheckedIOException("[worker] " + SHARED_DIR_ENV + "=" + env + " is not a writable directory; create it or unset the variable",
                        new IOException(env));
            return p;
        }
        return Files.isDirectory(SHM) && Files.isWritable(SHM) ? SHM : tmp;
    }

    private static Path tmpDir() { return Path.of(System.getProperty("java.io.tmpdir")); }

    /**
     * Removes the shared tensor folders ({@code ane4j-<pid>-<id>}) of processes that are gone (SIGKILLed launchers and
     * kernels never ran their cleanup) from {@code /dev/shm}, {@code java.io.tmpdir}, {@code ANE4J_SHARED_DIR} (where
     * the folders go when it is set) and {@code extra}. A folder whose pid is alive is never touched (a reused pid keeps
     * a dead one's folder until that process ends too). Any ane4j start on the machine sweeps these places, so a dead
     * process's folder goes to whichever starts first. Returns the folders removed.
     */
    static List<Path> removeStale(Path extra, java.util.function.Consumer<String> log) {
        List<Path> removed = new ArrayList<>();
        java.util.Set<Path> bases = new java.util.LinkedHashSet<>(List.of(SHM, tmpDir()));
        String env = System.getenv(SHARED_DIR_ENV);
        if (env != null && !env.isBlank()) bases.add(Path.of(env));
        if (extra != null) bases.add(extra);
        for (Path base : bases) {
            if (!Files.isDirectory(base)) continue;
            try (java.nio.file.DirectoryStream<Path> ds = Files.newDirectoryStream(base, "ane4j-*")) {
                for (Path d : ds) {
                    java.util.regex.Matcher m = NAME.matcher(d.getFileName().toString());
                    if (!m.matches() || !Files.isDirectory(d, java.nio.file.LinkOption.NOFOLLOW_LINKS)) continue;
                    long pid;
                    try {
                        pid = Long.parseLong(m.group(1));
                    } catch (NumberFormatException e) {
                        continue;
                    }
                    if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) continue;
                    long bytes = deleteTree(d);
                    removed.add(d);
                    log.accept(String.format(java.util.Locale.ROOT, "[worker] removed %s (%.1f MB of shared tensors of process %d, which is gone)", d, bytes / 1e6, pid));
                }
            } catch (IOException e) {
                // another process removing the same folder, or a base we may not list: left for the next start
            }
        }
        return removed;
    }

    /** Deletes a folder tree without following links; returns the bytes of the files deleted. */
    private static long deleteTree(Path d) throws IOException {
        long bytes = 0;
        try (Stream<Path> s = Files.walk(d)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                if (Files.isRegularFile(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) bytes += Files.size(p);
                Files.deleteIfExists(p);
            }
        }
        return bytes;
    }

    Path dir() { return dir; }

    /** A zeroed region of {@code bytes} bytes (at least 1). */
    Region allocate(long bytes) {
        long size = Math.max(1, bytes);
        long id = ids.incrementAndGet();
        Path d = dir;
        try {
            if (dir.getFileSystem().provider().getFileStore(dir).getUsableSpace() < size + SHM_HEADROOM) d = Files.createDirectories(fallbackDir);
        } catch (IOException ignored) {
            // keep the preferred directory; mapping reports the real problem
        }
        Path file = d.resolve("t" + id + ".bin");
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(1), size - 1);   // sets the length; the rest reads as zeros
            Region r = new Region(id, file, size, arena, ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena));
            synchronized (byAddress) { byAddress.put(r.base(), r); }
            return r;
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("[worker] cannot create a shared tensor file of " + size + " bytes in " + d + ": " + ane4j.run.RunFolder.reason(e), e);
        }
    }

    /** The region holding all of {@code seg}, or null when it is not shared memory of this supervisor. */
    Region find(MemorySegment seg) {
        if (!seg.isNative()) return null;
        synchronized (byAddress) {
            Map.Entry<Long, Region> e = byAddress.floorEntry(seg.address());
            if (e == null) return null;
            Region r = e.getValue();
            return seg.address() + seg.byteSize() <= r.base() + r.size() ? r : null;
        }
    }

    void free(Region r) {
        synchronized (byAddress) {
            if (byAddress.remove(r.base()) == null) return;
        }
        r.arena().close();
        try {
            Files.deleteIfExists(r.path());
        } catch (IOException ignored) {
            // the directory goes on close
        }
    }

    @Override
    public void close() {
        for (Region r : regions()) free(r);
        for (Path d : new Path[] {dir, fallbackDir}) {
            if (!Files.exists(d)) continue;
            try {
                deleteTree(d);
            } catch (IOException ignored) {
                // best effort: leftover files are in a directory named after this process
            }
        }
    }

    private java.util.List<Region> regions() {
        synchronized (byAddress) { return new ArrayList<>(byAddress.values()); }
    }
}
