package ane4j.train;

import ane4j.run.RunFolder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.zip.CRC32;

/**
 * ane4j's checkpoint file (docs/DESIGN.md §5), little-endian:
 * <pre>
 *   magic "ANE4JCKP" (8 bytes), u32 format version, u32 section count
 *   per section: u32 tag, u64 length, u32 CRC-32 of the payload, payload
 *     1 STATE  : UTF-8 "key=value" lines (model config, step, AdamW step, RNG state, data position, loss-scale state…)
 *     2 PARAMS : f32 weights in the flat parameter layout
 *     3 ADAM_M : f32 first moments      4 ADAM_V : f32 second moments
 *     5 LORA   : f32 adapters (LoRA runs only; the moments are then the adapters', PARAMS the frozen base)
 * </pre>
 * Sections of any size (qwen3-0.6b's are 2.38 GB each) are streamed through a small buffer on write and read, the CRC
 * computed on the way; no section is ever held as one byte array. Written to a temporary file, fsynced, then renamed
 * into place, so a crash never leaves a half-written checkpoint under a checkpoint name; {@link #loadNewest} skips
 * corrupt or truncated files with a warning.
 */
public final class Checkpoint {
    public static final int VERSION = 1;
    private static final byte[] MAGIC = "ANE4JCKP".getBytes(StandardCharsets.US_ASCII);
    private static final int TAG_STATE = 1, TAG_PARAMS = 2, TAG_M = 3, TAG_V = 4, TAG_LORA = 5;
    private static final int MAX_STATE_BYTES = 1 << 20;
    private static final String PREFIX = "ckpt-", SUFFIX = ".ane4j";
    private static final int CHUNK = 4 << 20;   // bytes streamed per write/read call
    private static final ValueLayout.OfFloat LE_FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;

    /** What a checkpoint holds: the run state as ordered key/value pairs and the three parameter-sized arrays. */
    public record Contents(TrainState state, float[] params, float[] m, float[] v, float[] lora) {
        public Contents(TrainState state, float[] params, float[] m, float[] v) { this(state, params, m, v, null); }
    }

    private Checkpoint() {}

    /** {@code dir/ckpt-00000430.ane4j} */
    public static Path pathFor(Path dir, long step) { return dir.resolve(String.format("%s%08d%s", PREFIX, step, SUFFIX)); }

    /** Writes atomically and keeps the newest {@code keep} checkpoints in {@code dir}; returns the file. */
    public static Path save(Path dir, Contents c, int keep) {
        Path target = pathFor(dir, c.state().step());
        Path tmp = dir.resolve(target.getFileName() + ".tmp");
        try {
            Files.createDirectories(dir);
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
                ByteBuffer head = le(16).put(MAGIC).putInt(VERSION).putInt(c.lora() == null ? 4 : 5).flip();
                writeFully(ch, head);
                writeSection(ch, TAG_STATE, c.state().encode().getBytes(StandardCharsets.UTF_8));
                writeFloats(ch, TAG_PARAMS, MemorySegment.ofArray(c.params()));
                writeFloats(ch, TAG_M, MemorySegment.ofArray(c.m()));
                writeFloats(ch, TAG_V, MemorySegment.ofArray(c.v()));
                if (c.lora() != null) writeFloats(ch, TAG_LORA, MemorySegment.ofArray(c.lora()));
                ch.force(true);
            }
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
            }
            fsyncDirectory(dir);
            prune(dir, keep);
            return target;
        } catch (IOException e) {
            // a partial file must not keep a full disk full; the older checkpoints are untouched
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // the next start removes it (RunFolder.removeTempFiles)
            }
            throw new UncheckedIOException("[checkpoint] cannot write " + pathFor(dir, c.state().step()).getFileName() + " to " + dir + ": "
                    + RunFolder.reason(e) + "; the older checkpoints are intact", e);
        }
    }

    /** Reads and verifies one checkpoint. @throws CheckpointFormatException naming the file and the problem */
    public static Contents load(Path file) { return load(file, null); }

    /**
     * Reads and verifies one checkpoint into {@code reuse}'s arrays where their length is the checkpoint's (a resume of a
     * large model then holds one copy of it, not two), else into new arrays. A checkpoint that fails leaves those arrays
     * partly overwritten: the caller loads another one into them or gives up.
     */
    public static Contents load(Path file, Contents reuse) { return read(file, reuse, true); }

    /**
     * The state, weights and LoRA adapters of one checkpoint, verified, without the AdamW moments (their sections are
     * skipped, not read: export, generate and a notebook's weights need a third of the memory and time; m and v are null).
     */
    public static Contents loadWeights(Path file) { return read(file, null, false); }

    private static Contents read(Path file, Contents reuse, boolean moments) {
        String special = ane4j.model.InputFile.notRegular(file);
        if (special != null) throw new CheckpointFormatException(special);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            ByteBuffer head = readFully(ch, 16, file, "header");
            byte[] magic = new byte[8];
            head.get(magic);
            if (!java.util.Arrays.equals(magic, MAGIC)) throw new CheckpointFormatException(file + ": not an ane4j checkpoint (bad magic)");
            int version = head.getInt(), sections = head.getInt();
            if (version != VERSION)
                throw new CheckpointFormatException(file + ": checkpoint format version " + version + ", this ane4j reads version " + VERSION + "; retrain or convert it with the ane4j that wrote it");
            if (sections != 4 && sections != 5) throw new CheckpointFormatException(file + ": " + sections + " sections, expected 4 (5 with LoRA adapters)");
            TrainState state = null;
            float[] params = null, m = null, v = null, lora = null;
            long mFloats = -1, vFloats = -1;
            for (int i = 0; i < sections; i++) {
                ByteBuffer sh = readFully(ch, 16, file, "section header");
                int tag = sh.getInt();
                long len = sh.getLong();
                int crc = sh.getInt();
                if (len < 0 || len > size - ch.position()) throw new CheckpointFormatException(file + ": section " + tag + " claims " + len + " bytes but the file ends first (truncated)");
                switch (tag) {
                    case TAG_STATE -> {
                        if (len > MAX_STATE_BYTES) throw new CheckpointFormatException(file + ": state section of " + len + " bytes is too large (corrupt)");
                        ByteBuffer payload = readFully(ch, (int) len, file, "section " + tag);
                        CRC32 c = new CRC32();
                        c.update(payload.duplicate());
                        if ((int) c.getValue() != crc) throw new CheckpointFormatException(file + ": section " + tag + " fails its checksum (corrupt)");
                        state = TrainState.decode(StandardCharsets.UTF_8.decode(payload).toString(), file);
                    }
                    case TAG_PARAMS -> params = readFloats(ch, tag, len, crc, reuse == null ? null : reuse.params(), file);
                    case TAG_M, TAG_V -> {
                        if (len % 4 != 0) throw new CheckpointFormatException(file + ": a float section of " + len + " bytes (not a multiple of 4)");
                        if (tag == TAG_M) mFloats = len / 4;
                        else vFloats = len / 4;
                        if (!moments) ch.position(ch.position() + len);
                        else if (tag == TAG_M) m = readFloats(ch, tag, len, crc, reuse == null ? null : reuse.m(), file);
                        else v = readFloats(ch, tag, len, crc, reuse == null ? null : reuse.v(), file);
                    }
                    case TAG_LORA -> lora = readFloats(ch, tag, len, crc, reuse == null ? null : reuse.lora(), file);
                    default -> throw new CheckpointFormatException(file + ": unknown section tag " + tag);
                }
            }
            if (state == null || params == null || mFloats < 0 || vFloats < 0) throw new CheckpointFormatException(file + ": a section is missing");
            int trained = lora != null ? lora.length : params.length;
            if (mFloats != trained || vFloats != trained) throw new CheckpointFormatException(file + ": moment sizes differ from the " + (lora != null ? "adapters" : "parameters"));
            if (state.parameterCount() != params.length)
                throw new CheckpointFormatException(file + ": " + params.length + " parameters, but its " + (state.config() != null ? "model config" : "graph layout")
                        + " has " + state.parameterCount());
            if (state.step() < 0 || state.adamStep() < 0)
                throw new CheckpointFormatException(file + ": step " + state.step() + (state.adamStep() < 0 ? ", AdamW step " + state.adamStep() : "")
                        + " is negative: the file is corrupt (its checksums match, so it was written so); resume from another checkpoint");
            String nonFinite = state.config() != null ? ane4j.model.NonFinite.check(params, new ane4j.model.ParameterLayout(state.config()), file.toString(), n -> n)
                    : graphNonFinite(params, state.graph(), file);
            if (nonFinite == null && lora != null) {
                int i = ane4j.model.NonFinite.first(lora, 0, lora.length);
                if (i >= 0) nonFinite = file + ": the LoRA adapters hold " + ane4j.model.NonFinite.name(lora[i]) + " at index " + i
                        + "; the file was saved from a run that diverged: resume from an earlier checkpoint";
            }
            if (nonFinite != null) throw new CheckpointFormatException(nonFinite);
            return new Contents(state, params, m, v, lora);
        } catch (NoSuchFileException e) {
            throw new CheckpointFormatException(file + ": no such file");
        } catch (IOException e) {
            throw new CheckpointFormatException(file + ": cannot read: " + RunFolder.reason(e));
        }
    }

    /** A graph run's {@link ane4j.model.NonFinite#check}: null, or the line naming the parameter and index. */
    private static String graphNonFinite(float[] params, GraphLayout graph, Path file) {
        int i = ane4j.model.NonFinite.first(params, 0, params.length);
        if (i < 0) return null;
        for (var v : graph.views())
            if (i < v.end())
                return file + ": parameter '" + v.name() + "' holds " + ane4j.model.NonFinite.name(params[i]) + " at index " + (i - v.offset())
                        + "; the file was saved from a run that diverged: resume from an earlier checkpoint";
        return file + ": holds " + ane4j.model.NonFinite.name(params[i]) + " at parameter " + i;
    }

    /**
     * A run that neither resumes nor starts over must not write into a folder with checkpoints: refused in one line,
     * before anything is touched (by the supervisor before it starts a worker, and by the trainer, in process or not).
     */
    public static void refuseUnresumed(ane4j.run.TrainOptions o) {
        if (o.resume() || o.restartFromScratch()) return;
        List<Path> old = list(o.runDir().resolve("checkpoints"));
        if (!old.isEmpty())
            throw new IllegalArgumentException("[train] " + o.runDir() + " already has checkpoints (newest " + old.getFirst().getFileName()
                    + "); pass --resume (resume = true) to continue that run, --restart-from-scratch (restartFromScratch = true) to set them aside "
                    + "and start over, or use another --run-dir (runDir)");
    }

    /** Checkpoints in {@code dir}, newest (highest step) first. */
    public static List<Path> list(Path dir) {
        List<Path> out = new ArrayList<>();
        if (!Files.isDirectory(dir)) return out;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, PREFIX + "*" + SUFFIX)) {
            for (Path p : ds) out.add(p);
        } catch (IOException e) {
            throw new UncheckedIOException("[checkpoint] cannot list " + dir, e);
        }
        out.sort(Comparator.comparing((Path p) -> p.getFileName().toString()).reversed());
        return out;
    }

    /**
     * The newest checkpoint that loads and verifies, or null when there is none; each skipped file is reported to
     * {@code warn} (one line naming the file and why).
     */
    public static Contents loadNewest(Path dir, java.util.function.Consumer<String> warn) { return warned(findNewest(dir), warn); }

    /** {@link #loadNewest} without the moments ({@link #loadWeights}). */
    public static Contents loadNewestWeights(Path dir, java.util.function.Consumer<String> warn) { return warned(findNewestWeights(dir), warn); }

    private static Contents warned(Found f, java.util.function.Consumer<String> warn) {
        for (String why : f.unreadable().values()) warn.accept("[checkpoint] skipping " + why + "; using the previous one");
        return f.contents();
    }

    /**
     * What a resume finds in a checkpoint folder: the newest checkpoint that loads and verifies (null when none does),
     * its file, and each newer file that failed with why (one line each, without the "[checkpoint]" tag).
     */
    public record Found(Contents contents, Path file, java.util.Map<Path, String> unreadable) {}

    public static Found findNewest(Path dir) { return findNewest(dir, null); }

    /** {@link #findNewest(Path)}, each candidate read into {@code reuse}'s arrays (see {@link #load(Path, Contents)}). */
    public static Found findNewest(Path dir, Contents reuse) { return newestOf(dir, p -> load(p, reuse)); }

    /** {@link #findNewest(Path)} with {@link #loadWeights}: the newest checkpoint whose state and weights verify, without moments. */
    public static Found findNewestWeights(Path dir) { return newestOf(dir, Checkpoint::loadWeights); }

    private static Found newestOf(Path dir, java.util.function.Function<Path, Contents> loader) {
        java.util.Map<Path, String> bad = new java.util.LinkedHashMap<>();
        for (Path p : list(dir)) {
            try {
                return new Found(loader.apply(p), p, bad);
            } catch (CheckpointFormatException e) {
                bad.put(p, e.getMessage().replaceFirst("^\\[checkpoint\\] ", ""));
            }
        }
        return new Found(null, null, bad);
    }

    private static void prune(Path dir, int keep) throws IOException {
        List<Path> all = list(dir);
        for (int i = Math.max(keep, 1); i < all.size(); i++) Files.deleteIfExists(all.get(i));
    }

    private static void fsyncDirectory(Path dir) {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException ignored) {
            // some platforms cannot open a directory for fsync; the file itself was forced
        }
    }

    private static void writeSection(FileChannel ch, int tag, byte[] payload) throws IOException {
        CRC32 c = new CRC32();
        c.update(payload);
        writeFully(ch, le(16).putInt(tag).putLong(payload.length).putInt((int) c.getValue()).flip());
        writeFully(ch, ByteBuffer.wrap(payload));
    }

    /** A section of little-endian f32 from {@code data} (any length), streamed; the header's CRC is filled in afterwards. */
    static void writeFloats(FileChannel ch, int tag, MemorySegment data) throws IOException {
        long len = data.byteSize(), headerAt = ch.position();
        writeFully(ch, le(16).putInt(tag).putLong(len).putInt(0).flip());
        CRC32 crc = new CRC32();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment bufSeg = arena.allocate(Math.clamp(len, 4, CHUNK));
            ByteBuffer buf = bufSeg.asByteBuffer();
            for (long at = 0; at < len; ) {
                int n = (int) Math.min(CHUNK, len - at);
                MemorySegment.copy(data, FLOAT, at, bufSeg, LE_FLOAT, 0, n / 4);   // native → little-endian
                buf.clear().limit(n);
                crc.update(buf.duplicate());
                writeFully(ch, buf);
                at += n;
            }
        }
        long end = ch.position();
        ByteBuffer c = le(4).putInt((int) crc.getValue()).flip();
        while (c.hasRemaining()) ch.write(c, headerAt + 12 + c.position());
        ch.position(end);
    }

    /**
     * A float section of {@code len} bytes streamed into {@code into} when it has {@code len / 4} floats, else into a new
     * array; checked against {@code crc} at its end.
     */
    private static float[] readFloats(FileChannel ch, int tag, long len, int crc, float[] into, Path file) throws IOException {
        if (len % 4 != 0) throw new CheckpointFormatException(file + ": a float section of " + len + " bytes (not a multiple of 4)");
        if (len / 4 > Integer.MAX_VALUE - 8)
            throw new CheckpointFormatException(file + ": section " + tag + " holds " + len / 4 + " floats, more than a Java array can (" + (Integer.MAX_VALUE - 8) + ")");
        float[] out = into != null && into.length == len / 4 ? into : new float[(int) (len / 4)];
        readFloats(ch, tag, len, crc, MemorySegment.ofArray(out), file);
        return out;
    }

    /** Streams {@code len} bytes of little-endian f32 from the channel's position into {@code dst}, checking the CRC at the end. */
    static void readFloats(FileChannel ch, int tag, long len, int crc, MemorySegment dst, Path file) throws IOException {
        CRC32 c = new CRC32();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment bufSeg = arena.allocate(Math.clamp(len, 4, CHUNK));
            ByteBuffer buf = bufSeg.asByteBuffer();
            for (long at = 0; at < len; ) {
                int n = (int) Math.min(CHUNK, len - at);
                buf.clear().limit(n);
                while (buf.hasRemaining()) if (ch.read(buf) < 0) throw new CheckpointFormatException(file + ": ends inside section " + tag + " (truncated)");
                buf.flip();
                c.update(buf);
                MemorySegment.copy(bufSeg, LE_FLOAT, 0, dst, FLOAT, at, n / 4);   // little-endian → native
                at += n;
            }
        }
        if ((int) c.getValue() != crc) throw new CheckpointFormatException(file + ": section " + tag + " fails its checksum (corrupt)");
    }

    private static ByteBuffer le(int n) { return ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN); }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException { while (b.hasRemaining()) ch.write(b); }

    private static ByteBuffer readFully(FileChannel ch, int n, Path file, String what) throws IOException {
        ByteBuffer b = le(n);
        while (b.hasRemaining()) if (ch.read(b) < 0) throw new CheckpointFormatException(file + ": ends inside the " + what + " (truncated)");
        return b.flip();
    }
}
