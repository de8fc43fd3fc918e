package ane4j.run;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.function.Consumer;

/**
 * A run folder held by one process: an OS file lock on {@code run.lock} (released by the OS on any death, SIGKILL
 * included), with the holder's pid and command written into the file so a second process can be told who has it.
 * Holding it, the run may clean up what a dead run left: partial {@code *.tmp} files.
 */
public final class RunFolder implements AutoCloseable {
    public static final String LOCK_FILE = "run.lock";

    private final Path dir;
    private final FileChannel channel;
    private final FileLock lock;

    private RunFolder(Path dir, FileChannel channel, FileLock lock) {
        this.dir = dir;
        this.channel = channel;
        this.lock = lock;
    }

    /** Locks {@code dir} (creating it) for this process. @throws IllegalStateException naming the holder when it is taken */
    public static RunFolder lock(Path dir) { return lock(dir, command()); }

    /** {@link #lock(Path)} with {@code command} as the holder's description. */
    public static RunFolder lock(Path dir, String command) {
        Path file = dir.resolve(LOCK_FILE);
        FileChannel ch;
        try {
            Files.createDirectories(dir);
            ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw new UncheckedIOException("[run] cannot use " + dir + " as a run folder: " + reason(e) + " (opening its " + LOCK_FILE + ")", e);
        }
        try {
            FileLock l;
            try {
                l = ch.tryLock();
            } catch (OverlappingFileLockException e) {
                l = null;   // this JVM holds it already (another Trainer or supervisor on the same folder)
            }
            if (l == null) {
                String holder = holder(ch);
                ch.close();
                throw new IllegalStateException("[run] " + dir + " is in use by " + (holder.isEmpty() ? "another process" : holder)
                        + "; wait for that run to end (or stop it), or use another --run-dir");
            }
            String text = "pid = " + ProcessHandle.current().pid() + "\ncommand = " + command + "\nsince = " + Instant.now().truncatedTo(ChronoUnit.SECONDS) + "\n";
            ch.truncate(0);
            ch.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)), 0);
            ch.force(false);
            return new RunFolder(dir, ch, l);
        } catch (IOException e) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // reporting the first error
            }
            throw new UncheckedIOException("[run] cannot lock " + file + ": " + reason(e), e);
        }
    }

    /** "process 1234 (ane4j train --steps 200 …, since 2026-…)" from the lock file's text. */
    private static String holder(FileChannel ch) throws IOException {
        ByteBuffer b = ByteBuffer.allocate((int) Math.min(4096, ch.size()));
        ch.read(b, 0);
        String pid = "", command = "", since = "";
        for (String line : new String(b.array(), 0, b.position(), StandardCharsets.UTF_8).split("\n")) {
            if (line.startsWith("pid = ")) pid = line.substring(6);
            else if (line.startsWith("command = ")) command = line.substring(10);
            else if (line.startsWith("since = ")) since = line.substring(8);
        }
        if (pid.isEmpty()) return "";
        return "process " + pid + " (" + command + (since.isEmpty() ? "" : ", since " + since) + ")";
    }

    /** How this process was started: {@code ane4j train --steps 200 …} for the CLI, else the main class and arguments. */
    static String command() {
        String c = System.getProperty("sun.java.command", "");
        if (c.startsWith("ane4j.cli.Main ")) return "ane4j " + c.substring("ane4j.cli.Main ".length());
        return c.isEmpty() ? ProcessHandle.current().info().command().orElse("java") : c;
    }

    public Path dir() { return dir; }

    /**
     * The identity (device and inode, {@code fileKey}) of a run folder and of its run.lock, taken when a run starts. A
     * run compares it before each metrics line and checkpoint: when the folder or its lock was deleted, moved or
     * replaced under the running run, the run stops instead of recreating a partial folder that a second run could
     * lock (the 2026-12-05 reliability report, F34: `rm -rf RUN` mid-run left metrics.jsonl with the later steps only,
     * run.json and run.lock gone, exit 0 in silence).
     */
    public record Identity(Path dir, Object dirKey, Object lockKey) {
        /** The identity of {@code dir} now, or null when the file system has no file keys (then nothing is checked). */
        public static Identity of(Path dir) {
            Object d = key(dir), l = key(dir.resolve(LOCK_FILE));
            return d == null ? null : new Identity(dir, d, l);
        }

        /** Null while {@code dir} and its run.lock are the ones this identity was taken of, else what happened, in words. */
        public String changed() {
            Object d = key(dir);
            if (d == null) return dir + " is gone (deleted or moved)";
            if (!d.equals(dirKey)) return dir + " is no longer the folder this run started in (it was replaced)";
            if (lockKey != null) {
                Object l = key(dir.resolve(LOCK_FILE));
                if (l == null) return "its " + LOCK_FILE + " is gone (deleted), so another run could take the folder";
                if (!l.equals(lockKey)) return "its " + LOCK_FILE + " was replaced, so another run could take the folder";
            }
            return null;
        }

        /** Throws the one-line error when {@link #changed()}. */
        public void check() {
            String what = changed();
            if (what != null)
                throw new IllegalStateException("[run] " + what + "; stopping this run: nothing more is written there, what was"
                        + " written is left as it is. Resume from what remains with --resume, or start a new run");
        }

        private static Object key(Path p) {
            try {
                return Files.readAttributes(p, java.nio.file.attribute.BasicFileAttributes.class, java.nio.file.LinkOption.NOFOLLOW_LINKS).fileKey();
            } catch (IOException e) {
                return null;
            }
        }
    }

    /**
     * Removes partial files a dead run left ({@code checkpoints/*.tmp}, {@code *.tmp} in the folder); returns how many.
     * Only the holder of the lock may call this: a live run's temporary files are its checkpoint in progress.
     */
    public static int removeTempFiles(Path dir, Consumer<String> log) {
        int n = 0;
        for (Path d : List.of(dir, dir.resolve("checkpoints"))) {
            if (!Files.isDirectory(d)) continue;
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(d, "*.tmp")) {
                for (Path p : ds) {
                    long size = Files.size(p);
                    Files.deleteIfExists(p);
                    log.accept("[run] removed " + p + " (" + size + " bytes), a partial file left by an earlier run");
                    n++;
                }
            } catch (IOException e) {
                throw new UncheckedIOException("[run] cannot remove partial files in " + d + ": " + reason(e), e);
            }
        }
        return n;
    }

    /**
     * Moves the checkpoints and metrics.jsonl of {@code dir} into a new {@code set-aside-<time>} folder inside it
     * (nothing is deleted); returns that folder, or null when there was nothing to move.
     */
    public static Path setAside(Path dir) {
        Path checkpoints = dir.resolve("checkpoints"), metrics = dir.resolve("metrics.jsonl");
        boolean any;
        try (var s = Files.isDirectory(checkpoints) ? Files.list(checkpoints) : java.util.stream.Stream.<Path>empty()) {
            any = s.findAny().isPresent() || Files.exists(metrics);
        } catch (IOException e) {
            throw new UncheckedIOException("[run] cannot list " + checkpoints + ": " + reason(e), e);
        }
        if (!any) return null;
        String stamp = java.time.LocalDateTime.now().format(java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
        Path aside = dir.resolve("set-aside-" + stamp);
        for (int i = 2; Files.exists(aside); i++) aside = dir.resolve("set-aside-" + stamp + "-" + i);
        try {
            Files.createDirectories(aside);
            if (Files.exists(checkpoints)) Files.move(checkpoints, aside.resolve("checkpoints"));
            if (Files.exists(metrics)) Files.move(metrics, aside.resolve("metrics.jsonl"));
        } catch (IOException e) {
            throw new UncheckedIOException("[run] cannot move the earlier run into " + aside + ": " + reason(e), e);
        }
        return aside;
    }

    /**
     * Renames a checkpoint that could not be read to {@code <name>.unreadable}, so that a new checkpoint of the same
     * step never overwrites it and pruning never deletes it; returns the new name.
     */
    public static Path keepUnreadable(Path checkpoint) {
        Path to = checkpoint.resolveSibling(checkpoint.getFileName() + ".unreadable");
        for (int i = 2; Files.exists(to); i++) to = checkpoint.resolveSibling(checkpoint.getFileName() + ".unreadable-" + i);
        try {
            Files.move(checkpoint, to);
        } catch (IOException e) {
            throw new UncheckedIOException("[checkpoint] cannot rename the unreadable " + checkpoint + " out of the way: " + reason(e), e);
        }
        return to;
    }

    /** Releases the lock (the file stays: deleting it would let two processes lock two different files). */
    @Override
    public void close() {
        try {
            if (channel.isOpen()) {
                channel.truncate(0);
                lock.release();
                channel.close();
            }
        } catch (IOException ignored) {
            // closing the channel releases the lock; the OS releases it at exit in any case
        }
    }

    /**
     * Writes {@code text} to {@code file} through {@code <file>.tmp} renamed over it (atomically where the file system
     * can), so a reader sees the old file or the new one, never half of one; the temp file is removed on failure.
     */
    static void writeAtomically(Path file, String text) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        try {
            Files.writeString(tmp, text);
            try {
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException e) {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // the next start removes it
            }
            throw e;
        }
    }

    /** An I/O error's reason without repeating the path (AccessDeniedException's message is only the path). */
    public static String reason(IOException e) {
        if (e instanceof NoSuchFileException) return "no such file or directory";
        if (e instanceof AccessDeniedException) return "permission denied";
        if (e instanceof FileSystemException f) {
            if (f.getReason() != null) return f.getReason();
            return f.getClass().getSimpleName().replace("Exception", "");
        }
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }
}
