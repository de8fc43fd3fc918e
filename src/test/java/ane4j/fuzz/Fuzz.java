package ane4j.fuzz;

import static org.junit.jupiter.api.Assertions.*;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The byte-level mutations and the checks every reader's fuzz test shares: each mutated file is read once; the reader must
 * return or throw its own one-line, tagged exception type, allocate no more heap than a small multiple of the file's
 * length, and finish quickly. Seeds are fixed, so a failure names a case that reproduces.
 */
public final class Fuzz {
    private Fuzz() {}

    /** Length fields worth planting: zero, one, negative, around 2^31, 2^32 and 2^63, and near the file length. */
    static long hugeValue(SplittableRandom r, long fileLength) {
        long[] v = {0, 1, -1, 0x7FFFFFFFL, 0x80000000L, 0xFFFFFFFFL, 0x100000000L, Long.MAX_VALUE, Long.MIN_VALUE, 1L << 40,
                fileLength, fileLength + 1, fileLength - 1, fileLength * 2, 1L << 20, 65536, 65535};
        return v[r.nextInt(v.length)];
    }

    /** One to a few mutations: bit flips, byte sets, truncation, splices (a copied or deleted range), huge u32/u64 fields. */
    public static byte[] mutate(byte[] base, SplittableRandom r, int hotPrefix) {
        byte[] b = base.clone();
        int rounds = 1 + (r.nextInt(3) == 0 ? r.nextInt(4) : 0);
        for (int k = 0; k < rounds; k++) {
            if (b.length == 0) return b;
            // half the mutations land in the header-ish prefix, where the length fields are
            int at = r.nextBoolean() ? r.nextInt(Math.min(b.length, Math.max(1, hotPrefix))) : r.nextInt(b.length);
            switch (r.nextInt(8)) {
                case 0 -> b[at] ^= (byte) (1 << r.nextInt(8));
                case 1 -> b[at] = (byte) r.nextInt(256);
                case 2 -> b = Arrays.copyOf(b, r.nextInt(b.length));
                case 3 -> { // delete a range
                    int len = Math.min(b.length - at, 1 + r.nextInt(64));
                    byte[] c = new byte[b.length - len];
                    System.arraycopy(b, 0, c, 0, at);
                    System.arraycopy(b, at + len, c, at, b.length - at - len);
                    b = c;
                }
                case 4 -> { // splice: insert a copy of another range
                    int from = r.nextInt(b.length), len = Math.min(b.length - from, 1 + r.nextInt(64));
                    byte[] c = new byte[b.length + len];
                    System.arraycopy(b, 0, c, 0, at);
                    System.arraycopy(b, from, c, at, len);
                    System.arraycopy(b, at, c, at + len, b.length - at);
                    b = c;
                }
                case 5 -> { if (b.length >= 4) ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(Math.min(at & ~3, b.length - 4), (int) hugeValue(r, b.length)); }
                case 6 -> { if (b.length >= 8) ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putLong(Math.min(at & ~7, b.length - 8), hugeValue(r, b.length)); }
                default -> { // overwrite a range with ASCII digits or punctuation (text headers)
                    byte[] junk = "9999999999,-1:[]{}()\"'L ".getBytes();
                    int len = Math.min(b.length - at, 1 + r.nextInt(8));
                    for (int i = 0; i < len; i++) b[at + i] = junk[r.nextInt(junk.length)];
                }
            }
        }
        return b;
    }

    /** What one reader does with one file; returns normally or throws. */
    public interface Reader { void read(Path file) throws Exception; }

    /** maxAllocPerByte over files of at least 1 KB; writeNanos is the time spent writing the mutated files. */
    public record Outcome(int accepted, int refused, long maxNanos, double maxAllocPerByte, long maxAllocBytes, long writeNanos) {}

    private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    /**
     * Runs {@code cases} mutations of the bases through {@code reader}. Every exception must be one of {@code allowed},
     * start with a match of the regex {@code tag} (e.g. {@code \\[npy\\] }) and be one line; heap allocated per case at most {@code allocFactor} × the file length + 1 MB.
     */
    public static Outcome run(Path file, List<byte[]> bases, int cases, long seed, int hotPrefix, Reader reader, String tag, long allocFactor,
                       List<Class<? extends Throwable>> allowed) throws Exception {
        SplittableRandom r = new SplittableRandom(seed);
        int accepted = 0, refused = 0;
        long maxNanos = 0;
        double maxAlloc = 0;
        long writeNanos = 0, maxAllocBytes = 0;
        for (int n = 0; n < cases; n++) {
            byte[] bytes = mutate(bases.get(r.nextInt(bases.size())), r, hotPrefix);
            long w0 = System.nanoTime();
            try (var ch = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE)) {
                ch.truncate(bytes.length);
                ch.write(ByteBuffer.wrap(bytes), 0);
            }
            writeNanos += System.nanoTime() - w0;
            long a0 = THREADS.getCurrentThreadAllocatedBytes(), t0 = System.nanoTime();
            try {
                reader.read(file);
                accepted++;
            } catch (Throwable e) {
                String m = e.getMessage();
                if (allowed.stream().noneMatch(c -> c == e.getClass()) || m == null || !java.util.regex.Pattern.compile(tag).matcher(m).lookingAt() || m.contains("\n"))
                    fail("case " + n + " (seed " + seed + ", " + bytes.length + " bytes): " + e, e);
                refused++;
            }
            long nanos = System.nanoTime() - t0, alloc = THREADS.getCurrentThreadAllocatedBytes() - a0;
            maxNanos = Math.max(maxNanos, nanos);
            if (bytes.length >= 1024) maxAlloc = Math.max(maxAlloc, (double) alloc / bytes.length);
            maxAllocBytes = Math.max(maxAllocBytes, alloc);
            assertTrue(alloc <= allocFactor * bytes.length + (1 << 20), "case " + n + ": " + alloc + " bytes allocated for a file of " + bytes.length);
            assertTrue(nanos < 5_000_000_000L, "case " + n + " took " + nanos / 1_000_000 + " ms"); // generous: CI and this VM are shared and busy
        }
        assertEquals(cases, accepted + refused);
        return new Outcome(accepted, refused, maxNanos, maxAlloc, maxAllocBytes, writeNanos);
    }
}
