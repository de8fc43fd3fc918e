package ane4j.train;

import ane4j.run.MetricsLog;
import ane4j.run.StepMetrics;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import ane4j.model.ModelConfig;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Thousands of mutated checkpoints and metrics.jsonl files (bit flips, truncations, splices, and edits of the state
 * text with the checksum fixed up so the decoder behind it is reached): the readers answer with their own one-line
 * errors only (CheckpointFormatException; a skipped-line warning), allocate no more than the file justifies, and
 * take bounded time for each input.
 */
class RunFilesFuzzTest {
    @TempDir Path dir;

    private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final long INPUT_MILLIS = 500;

    private static long allocated() { return THREADS.getThreadAllocatedBytes(Thread.currentThread().threadId()); }

    private byte[] validCheckpoint() throws Exception {
        ModelConfig c = ModelConfig.llama("fuzz", 16, 32, 1, 2, 32, 8);
        int n = (int) c.parameterCount();
        Random r = new Random(1);
        float[] p = new float[n], m = new float[n], v = new float[n];
        for (int i = 0; i < n; i++) { p[i] = r.nextFloat(); m[i] = r.nextFloat(); v[i] = r.nextFloat(); }
        TrainState st = new TrainState(c, "abc123", 20, 20, 12345L, 512f, 3, 4.5f);
        Path f = Checkpoint.save(dir.resolve("valid"), new Checkpoint.Contents(st, p, m, v), 3);
        assertEquals(20, Checkpoint.load(f).state().step());
        return Files.readAllBytes(f);
    }

    /** The STATE section's text, and the file rebuilt around another text (length and CRC fixed up). */
    private static String stateText(byte[] file) {
        ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        int len = (int) b.getLong(20);
        return new String(file, 32, len, StandardCharsets.UTF_8);
    }

    private static byte[] withState(byte[] file, byte[] state) {
        ByteBuffer in = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        int oldLen = (int) in.getLong(20);
        CRC32 crc = new CRC32();
        crc.update(state);
        ByteBuffer out = ByteBuffer.allocate(file.length - oldLen + state.length).order(ByteOrder.LITTLE_ENDIAN);
        out.put(file, 0, 16).putInt(1).putLong(state.length).putInt((int) crc.getValue()).put(state);
        out.put(file, 32 + oldLen, file.length - 32 - oldLen);
        return out.array();
    }

    private static final String[] VALUES = {"", "-1", "0", "99999999999999999999", "2147483648", "NaN", "1e9", "-0", "abc", "1.5", "\u0000", "٣", "9223372036854775807"};

    private static byte[] mutateState(byte[] file, Random r) {
        List<String> lines = new ArrayList<>(Arrays.asList(stateText(file).split("\n", -1)));
        int ops = 1 + r.nextInt(3);
        for (int k = 0; k < ops && !lines.isEmpty(); k++) {
            int i = r.nextInt(lines.size());
            String line = lines.get(i);
            switch (r.nextInt(6)) {
                case 0 -> lines.remove(i);
                case 1 -> lines.add(r.nextInt(lines.size() + 1), line);
                case 2 -> lines.set(i, line.contains(" = ") ? line.substring(0, line.indexOf(" = ") + 3) + VALUES[r.nextInt(VALUES.length)] : line + " = 1");
                case 3 -> lines.set(i, line.isEmpty() ? "x" : line.substring(0, r.nextInt(line.length())));
                case 4 -> lines.set(i, "[model]");
                default -> {
                    char[] ch = line.toCharArray();
                    if (ch.length > 0) ch[r.nextInt(ch.length)] = (char) r.nextInt(128);
                    lines.set(i, new String(ch));
                }
            }
        }
        byte[] text = String.join("\n", lines).getBytes(StandardCharsets.UTF_8);
        if (r.nextInt(10) == 0) text[r.nextInt(Math.max(1, text.length))] = (byte) (0x80 | r.nextInt(128));   // broken UTF-8
        return withState(file, text);
    }

    private static byte[] mutate(byte[] valid, Random r) {
        byte[] b = valid.clone();
        switch (r.nextInt(6)) {
            case 0 -> { for (int k = 1 + r.nextInt(8); k > 0; k--) b[r.nextInt(b.length)] ^= (byte) (1 << r.nextInt(8)); }
            case 1 -> b = Arrays.copyOf(b, r.nextInt(b.length));
            case 2 -> {   // splice: a chunk copied over another place
                int len = 1 + r.nextInt(256), from = r.nextInt(b.length - len), to = r.nextInt(b.length - len);
                System.arraycopy(valid, from, b, to, len);
            }
            case 3 -> b = mutateState(b, r);
            case 4 -> {   // a header field (count, a section's tag or length) set to an extreme or random value
                ByteBuffer h = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
                int field = r.nextInt(4);
                long[] extremes = {-1, 0, Integer.MAX_VALUE, Long.MAX_VALUE, b.length, 1L << 40, r.nextInt(1000)};
                long x = extremes[r.nextInt(extremes.length)];
                if (field == 0) h.putInt(12, (int) x);
                else if (field == 1) h.putInt(16, (int) x);
                else if (field == 2) h.putLong(20, x);
                else h.putInt(8, (int) x);
            }
            default -> {   // an insertion of random bytes
                byte[] junk = new byte[1 + r.nextInt(64)];
                r.nextBytes(junk);
                int at = r.nextInt(b.length);
                byte[] out = new byte[b.length + junk.length];
                System.arraycopy(b, 0, out, 0, at);
                System.arraycopy(junk, 0, out, at, junk.length);
                System.arraycopy(b, at, out, at + junk.length, b.length - at);
                b = out;
            }
        }
        return b;
    }

    @Test
    void checkpointReaderGivesOnlyItsOwnErrors() throws Exception {
        byte[] valid = validCheckpoint();
        Path f = dir.resolve("ckpt-00000020.ane4j");
        Random r = new Random(18);
        int refused = 0, accepted = 0;
        long t0 = System.nanoTime();
        for (int i = 0; i < 2500; i++) {
            byte[] input = mutate(valid, r);
            Files.write(f, input);
            long a0 = allocated(), s0 = System.nanoTime();
            try {
                Checkpoint.Contents c = Checkpoint.load(f);
                assertEquals(c.state().config().parameterCount(), c.params().length, "accepted input " + i + " is consistent");
                accepted++;
            } catch (CheckpointFormatException e) {
                assertTrue(e.getMessage().startsWith("[checkpoint] " + f + ": "), e.getMessage());
                assertEquals(1, e.getMessage().lines().count(), e.getMessage());
                refused++;
            } catch (Throwable e) {
                fail("input " + i + " (" + input.length + " bytes): " + e, e);
            }
            long bytes = allocated() - a0, ms = (System.nanoTime() - s0) / 1_000_000;
            assertTrue(bytes < 4L * input.length + (1 << 20), "input " + i + ": " + bytes + " bytes allocated for a file of " + input.length);
            assertTrue(ms < INPUT_MILLIS, "input " + i + " took " + ms + " ms");
        }
        assertTrue(refused > 2000, "refused " + refused + ", accepted " + accepted);
        System.out.printf("checkpoint fuzz: 2500 inputs, %d refused, %d accepted, %.1f s%n", refused, accepted, (System.nanoTime() - t0) / 1e9);
    }

    private static String validMetrics(int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++)
            sb.append(new StepMetrics(i, n, 6f - i * 0.01f, 3e-3f, 512f, i % 7 == 0 ? Float.NaN : 0.5f, true, i % 9 == 0, 41.2, 1500.3,
                    Map.of("forward", 12.5, "backward", 20.25)).json()).append('\n');
        return sb.toString();
    }

    private static final String[] HOSTILE = {"[".repeat(100_000), "{\"step\":" + "9".repeat(50_000) + "}", "{\"step\":1e400}", "{\"step\":-3}",
            "{\"step\":\"7\"}", "{\"type\":\"other\",\"x\":1}", "{\"type\":\"other\",\"step\":4}", "\"just a string\"", "{\"step\":5,\"loss\":\"abc\"}",
            "{\"step\":5,\"loss\":1.2.3}", "\u0000\u0001\u0002", "{\"step\":3,\"step\":4}", "{\"step\":2, \"t_x\": {\"deep\": [1,2,3]}}", "{\"step\":0.5}"};

    @Test
    void metricsReaderSkipsBadLinesOnly() throws Exception {
        byte[] valid = validMetrics(40).getBytes(StandardCharsets.UTF_8);
        Path f = dir.resolve("metrics.jsonl");
        Random r = new Random(13);
        long t0 = System.nanoTime();
        int warned = 0;
        for (int i = 0; i < 2000; i++) {
            byte[] input;
            if (i % 10 == 0) {
                String[] lines = new String(valid, StandardCharsets.UTF_8).split("\n");
                lines[r.nextInt(lines.length)] = HOSTILE[r.nextInt(HOSTILE.length)];
                input = (String.join("\n", lines) + "\n").getBytes(StandardCharsets.UTF_8);
            } else {
                input = mutate(valid, r, true);
            }
            Files.write(f, input);
            List<String> warnings = new ArrayList<>();
            long a0 = allocated(), s0 = System.nanoTime();
            List<StepMetrics> read;
            try {
                read = MetricsLog.read(f, 40, warnings::add);
            } catch (Throwable e) {
                fail("input " + i + ": " + e, e);
                return;
            }
            long bytes = allocated() - a0, ms = (System.nanoTime() - s0) / 1_000_000;
            assertTrue(bytes < 16L * input.length + (1 << 20), "input " + i + ": " + bytes + " bytes allocated for " + input.length);
            assertTrue(ms < INPUT_MILLIS, "input " + i + " took " + ms + " ms");
            long lines = new String(input, StandardCharsets.UTF_8).lines().filter(l -> !l.isBlank()).count();
            assertTrue(read.size() + warnings.size() <= lines, "at most one result per line");
            for (String w : warnings) {
                assertTrue(w.matches("\\[metrics] " + java.util.regex.Pattern.quote(f.toString()) + " line \\d+: .*; line skipped"), w);
                assertTrue(w.length() < 600, w);
            }
            for (int k = 1; k < read.size(); k++) assertTrue(read.get(k).step() > read.get(k - 1).step(), "in step order, once each");
            if (!warnings.isEmpty()) warned++;
        }
        assertTrue(warned > 1000, "warned for " + warned);
        System.out.printf("metrics fuzz: 2000 inputs, %d with skipped lines, %.1f s%n", warned, (System.nanoTime() - t0) / 1e9);
    }

    /** Text mutations: bit flips, truncation, line splices. */
    private static byte[] mutate(byte[] valid, Random r, boolean text) {
        byte[] b = valid.clone();
        switch (r.nextInt(4)) {
            case 0 -> { for (int k = 1 + r.nextInt(4); k > 0; k--) b[r.nextInt(b.length)] ^= (byte) (1 << r.nextInt(8)); }
            case 1 -> b = Arrays.copyOf(b, r.nextInt(b.length));
            case 2 -> {
                int len = 1 + r.nextInt(200), from = r.nextInt(b.length - len), to = r.nextInt(b.length - len);
                System.arraycopy(valid, from, b, to, len);
            }
            default -> {   // a line cut into another one's middle
                String s = new String(valid, StandardCharsets.UTF_8);
                int at = r.nextInt(s.length()), cut = r.nextInt(s.length());
                b = (s.substring(0, at) + s.substring(cut)).getBytes(StandardCharsets.UTF_8);
            }
        }
        return b;
    }
}
