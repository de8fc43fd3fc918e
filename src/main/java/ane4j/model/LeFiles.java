package ane4j.model;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/** Little-endian file helpers shared by the model file formats: a read-only mapping and a buffered writer. */
final class LeFiles {
    private LeFiles() {}

    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** A whole file mapped read-only; close it to unmap. */
    record Mapped(Arena arena, MemorySegment segment) implements AutoCloseable {
        long size() { return segment.byteSize(); }

        @Override
        public void close() { arena.close(); }
    }

    /** "no such file" / "permission denied" / the I/O message: the reason part of a one-line error. */
    static String reason(IOException e) {
        if (e instanceof java.nio.file.NoSuchFileException) return "no such file";
        if (e instanceof java.nio.file.AccessDeniedException) return "permission denied";
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }

    static Mapped map(Path file, String tag) {
        if (Files.isDirectory(file)) throw new ModelFormatException("[" + tag + "] " + file + " is a folder, not a file; name the file inside it");
        InputFile.requireRegular(file, tag);
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            MemorySegment seg = size == 0 ? MemorySegment.ofArray(new byte[0]) : ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            return new Mapped(arena, seg);
        } catch (IOException e) {
            arena.close();
            throw new ModelFormatException("[" + tag + "] cannot read " + file + ": " + reason(e), e);
        }
    }

    /** Copies {@code n} little-endian floats from byte offset {@code from} into {@code dst[dstIndex…]}. */
    static void readFloats(MemorySegment seg, long from, float[] dst, int dstIndex, int n) {
        MemorySegment.copy(seg, FLOAT, from, dst, dstIndex, n);
    }

    /**
     * A buffered little-endian writer into a temporary file next to the target, moved into place on
     * {@link #commit()} so a failed write never leaves a truncated file under the final name.
     */
    static final class Writer implements AutoCloseable {
        private final Path target, temp;
        private final FileChannel ch;
        private final ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
        private final String tag;
        private boolean committed;

        Writer(Path target, String tag) {
            this.target = target;
            this.tag = tag;
            try {
                Path dir = target.toAbsolutePath().getParent();
                if (dir != null) Files.createDirectories(dir);
                // the temp file is created as any file (the user's umask sets its mode, and so the target's after the
                // rename: Files.createTempFile would force 0600); CREATE_NEW never opens an existing file or a planted link
                Path t;
                FileChannel c;
                for (int attempt = 0; ; attempt++) {
                    t = dir.resolve(target.getFileName() + "." + Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong() >>> 1) + ".tmp");
                    try {
                        c = FileChannel.open(t, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                        break;
                    } catch (java.nio.file.FileAlreadyExistsException e) {
                        if (attempt == 9) throw e;
                    }
                }
                this.temp = t;
                this.ch = c;
            } catch (IOException e) {
                throw new ModelFormatException("[" + tag + "] cannot write " + target + ": " + e, e);
            }
        }

        private void room(int bytes) {
            if (buf.remaining() < bytes) flush();
        }

        private void flush() {
            buf.flip();
            try {
                while (buf.hasRemaining()) ch.write(buf);
            } catch (IOException e) {
                throw new ModelFormatException("[" + tag + "] cannot write " + target + ": " + e, e);
            }
            buf.clear();
        }

        Writer i32(int v) { room(4); buf.putInt(v); return this; }

        Writer i64(long v) { room(8); buf.putLong(v); return this; }

        Writer f32(float v) { room(4); buf.putFloat(v); return this; }

        Writer u16(int v) { room(2); buf.putShort((short) v); return this; }

        Writer bytes(byte[] b) {
            for (int i = 0; i < b.length; ) {
                room(1);
                int n = Math.min(buf.remaining(), b.length - i);
                buf.put(b, i, n);
                i += n;
            }
            return this;
        }

        Writer floats(float[] a, int from, int n) {
            for (int i = from; i < from + n; i++) {
                room(4);
                buf.putFloat(a[i]);
            }
            return this;
        }

        void commit() {
            flush();
            try {
                ch.force(true);
                ch.close();
                Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                committed = true;
            } catch (IOException e) {
                throw new ModelFormatException("[" + tag + "] cannot write " + target + ": " + e, e);
            }
        }

        @Override
        public void close() {
            if (committed) return;
            try {
                ch.close();
                Files.deleteIfExists(temp);
            } catch (IOException ignored) {
                // best effort cleanup of the temp file after an earlier failure, which is what propagates
            }
        }
    }
}
