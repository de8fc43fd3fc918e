package ane4j.train;

import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.TensorType;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * numpy {@code .npy} files (format 1.0–3.0, numpy's {@code lib/format.py}) for fp16 ({@code <f2}), fp32 ({@code <f4}) and
 * int32 ({@code <i4}), little-endian C order.
 * <pre>
 *   magic \x93NUMPY, u8 major (1, 2, 3), u8 minor (0)
 *   header length: u16 LE (1.0) or u32 LE (2.0, 3.0)
 *   header: a Python dict literal {'descr': '&lt;f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and '\n'
 *           (latin-1 in 1.0/2.0, UTF-8 in 3.0)
 *   data: the elements, exactly product(shape) × itemsize bytes
 * </pre>
 * Every field is checked against the file length before anything is allocated; data is mapped and copied, so files over
 * 2 GiB read and write.
 */
public final class Npy {
    private Npy() {}

    private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
    /** numpy refuses headers over 10000 bytes by default ({@code max_header_size}); a little room for hand-made files. */
    static final int MAX_HEADER = 1 << 16;

    /** "cannot read FILE: no such file" and the like. */
    private static IllegalArgumentException cannotRead(Path file, IOException e) {
        String why = e instanceof java.nio.file.NoSuchFileException ? "no such file"
                : e instanceof java.nio.file.AccessDeniedException ? "permission denied"
                : e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
        return new IllegalArgumentException("[npy] cannot read " + file + ": " + why, e);
    }

    /** The shape a .npy file's header declares (its data is not read). */
    public static long[] shape(Path file) {
        String special = ane4j.model.InputFile.notRegular(file);
        if (special != null) throw new IllegalArgumentException("[npy] " + special);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer head = ByteBuffer.allocate((int) Math.min(ch.size(), 12 + MAX_HEADER)).order(ByteOrder.LITTLE_ENDIAN);
            while (head.hasRemaining() && ch.read(head, head.position()) > 0) { }
            return header(head.flip(), ch.size(), file).shape();
        } catch (IOException e) {
            throw cannotRead(file, e);
        }
    }

    /** The element type a .npy file's header declares, as numpy writes it ({@code <f4}, {@code <i8} …; its data is not read). */
    public static String descr(Path file) {
        String special = ane4j.model.InputFile.notRegular(file);
        if (special != null) throw new IllegalArgumentException("[npy] " + special);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer head = ByteBuffer.allocate((int) Math.min(ch.size(), 12 + MAX_HEADER)).order(ByteOrder.LITTLE_ENDIAN);
            while (head.hasRemaining() && ch.read(head, head.position()) > 0) { }
            return header(head.flip(), ch.size(), file).descr().replace("=", "<").replace("|", "<");
        } catch (IOException e) {
            throw cannotRead(file, e);
        }
    }

    /** The values of a file of {@code shape} in fp32 ({@code <f4}) or fp16 ({@code <f2}), as floats. */
    public static float[] readFloats(Path file, int[] shape, String name) {
        String special = ane4j.model.InputFile.notRegular(file);
        if (special != null) throw new IllegalArgumentException("[npy] " + special);
        String d;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer head = ByteBuffer.allocate((int) Math.min(ch.size(), 12 + MAX_HEADER)).order(ByteOrder.LITTLE_ENDIAN);
            while (head.hasRemaining() && ch.read(head, head.position()) > 0) { }
            d = header(head.flip(), ch.size(), file).descr().replace("=", "<");
        } catch (IOException e) {
            throw cannotRead(file, e);
        }
        return read(file, TensorType.of(d.equals("<f2") ? DType.FP16 : DType.FP32, shape), name).toFloatArray();
    }

    static String descr(DType t) {
        return switch (t) {
            case FP16 -> "<f2";
            case FP32 -> "<f4";
            case INT32 -> "<i4";
            default -> throw new IllegalArgumentException("[npy] " + t + " cannot be written as .npy (fp16, fp32, int32)");
        };
    }

    /** A parsed header: element type string, order, shape, and where the data starts. */
    record Header(String descr, boolean fortranOrder, long[] shape, long dataStart) {}

    /** Reads {@code file} into a buffer of {@code expected}'s type (dtype and shape must match). */
    public static TensorBuffer read(Path file, TensorType expected, String name) {
        String special = ane4j.model.InputFile.notRegular(file);
        if (special != null) throw new IllegalArgumentException("[npy] " + special);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ); Arena arena = Arena.ofConfined()) {
            long size = ch.size();
            ByteBuffer head = ByteBuffer.allocate((int) Math.min(size, 12 + MAX_HEADER)).order(ByteOrder.LITTLE_ENDIAN);
            while (head.hasRemaining() && ch.read(head, head.position()) > 0) { }
            Header h = header(head.flip(), size, file);
            if (h.fortranOrder()) throw new IllegalArgumentException("[npy] " + file + " is in Fortran order; save it with np.save(f, np.ascontiguousarray(a))");
            String want = descr(expected.dtype());
            String got = h.descr().replace("=", "<").replace("|", "<");
            if (!got.equals(want))
                throw new IllegalArgumentException("[npy] " + file + " has dtype '" + h.descr() + "' but input '" + name + "' is " + expected.dtype() + " ('" + want
                        + "'); convert with a.astype(np." + npName(expected.dtype()) + ")");
            if (!Arrays.equals(h.shape(), Arrays.stream(expected.shape()).asLongStream().toArray()))
                throw new IllegalArgumentException("[npy] " + file + " has shape " + Arrays.toString(h.shape()) + " but input '" + name + "' is " + expected
                        + "; reshape it to " + Arrays.toString(expected.shape()));
            long bytes = expected.byteSize(), have = size - h.dataStart();
            if (have != bytes)
                throw new IllegalArgumentException("[npy] " + file + ": " + have + " data bytes after the header, shape " + Arrays.toString(h.shape()) + " of '"
                        + h.descr() + "' needs " + bytes + (have < bytes ? " (truncated file)" : " (trailing bytes: not written by np.save)"));
            TensorBuffer t = TensorBuffer.allocate(expected);
            if (bytes > 0) MemorySegment.copy(ch.map(FileChannel.MapMode.READ_ONLY, h.dataStart(), bytes, arena), 0, t.segment(), 0, bytes);
            return t;
        } catch (IOException e) {
            throw cannotRead(file, e);
        }
    }

    private static String npName(DType t) { return switch (t) { case FP16 -> "float16"; case FP32 -> "float32"; default -> "int32"; }; }

    /** Parses the magic, version, header length and header dict of a file of {@code size} bytes whose first bytes are {@code b}. */
    static Header header(ByteBuffer b, long size, Path file) {
        if (b.limit() < 10 || !Arrays.equals(Arrays.copyOf(b.array(), 6), MAGIC))
            throw new IllegalArgumentException("[npy] " + file + " is not a .npy file (no \\x93NUMPY magic in its first 6 bytes); write it with np.save");
        int major = b.get(6) & 0xFF, minor = b.get(7) & 0xFF;
        if (major < 1 || major > 3 || minor != 0)
            throw new IllegalArgumentException("[npy] " + file + ": format version " + major + "." + minor + " is unknown (numpy writes 1.0, 2.0 and 3.0); re-save it with np.save");
        int start = major == 1 ? 10 : 12;
        if (b.limit() < start) throw new IllegalArgumentException("[npy] " + file + ": " + size + " bytes end inside the " + start + "-byte preamble (truncated file)");
        long hlen = major == 1 ? Short.toUnsignedInt(b.getShort(8)) : Integer.toUnsignedLong(b.getInt(8));
        if (hlen > MAX_HEADER)
            throw new IllegalArgumentException("[npy] " + file + ": header length " + hlen + " is over " + MAX_HEADER + " bytes (corrupt file?); re-save it with np.save");
        if (start + hlen > size)
            throw new IllegalArgumentException("[npy] " + file + ": header length " + hlen + " runs past the end of the file (" + size + " bytes; truncated)");
        byte[] raw = Arrays.copyOfRange(b.array(), start, (int) (start + hlen));
        String text;
        if (major == 3) {
            var in = ByteBuffer.wrap(raw);
            var out = java.nio.CharBuffer.allocate(raw.length);
            var r = StandardCharsets.UTF_8.newDecoder().decode(in, out, true);
            if (r.isError()) throw new IllegalArgumentException("[npy] " + file + ": header byte " + (start + in.position()) + " is not UTF-8 (format 3.0 headers are UTF-8)");
            text = out.flip().toString();
        } else text = new String(raw, StandardCharsets.ISO_8859_1);
        Map<String, Object> dict = new DictReader(text, file, start).dict();
        if (!(dict.get("descr") instanceof String d)) throw new IllegalArgumentException("[npy] " + file + ": header has no 'descr' string (the dtype); re-save it with np.save");
        if (!(dict.get("fortran_order") instanceof Boolean fo)) throw new IllegalArgumentException("[npy] " + file + ": header has no 'fortran_order' True/False; re-save it with np.save");
        if (!(dict.get("shape") instanceof long[] shape)) throw new IllegalArgumentException("[npy] " + file + ": header has no 'shape' tuple; re-save it with np.save");
        for (String k : dict.keySet())
            if (!k.equals("descr") && !k.equals("fortran_order") && !k.equals("shape"))
                throw new IllegalArgumentException("[npy] " + file + ": header key '" + k + "' is not one of descr, fortran_order, shape; re-save it with np.save");
        return new Header(d, fo, shape, start + hlen);
    }

    /** The header's Python literal: {@code {'key': 'str' | True | False | (int, …), …}} with optional trailing commas. */
    private static final class DictReader {
        private final String s;
        private final Path file;
        private final int base;
        private int i;

        DictReader(String s, Path file, int base) {
            this.s = s;
            this.file = file;
            this.base = base;
        }

        private IllegalArgumentException err(String what) {
            String found = i >= s.length() ? "the end of the header" : "'" + s.substring(i, Math.min(s.length(), i + 12)).replaceAll("\\p{Cntrl}", "?") + "'";
            return new IllegalArgumentException("[npy] " + file + ": header byte " + (base + i) + ": expected " + what + ", found " + found + "; re-save it with np.save");
        }

        private void space() { while (i < s.length() && (s.charAt(i) == ' ' || s.charAt(i) == '\t' || s.charAt(i) == '\n' || s.charAt(i) == '\r')) i++; }

        private boolean eat(char c) {
            space();
            if (i < s.length() && s.charAt(i) == c) { i++; return true; }
            return false;
        }

        Map<String, Object> dict() {
            if (!eat('{')) throw err("'{' opening the header dict");
            Map<String, Object> m = new LinkedHashMap<>();
            while (!eat('}')) {
                String k = string();
                if (m.containsKey(k)) throw err("each key once ('" + k + "' repeats)");
                if (!eat(':')) throw err("':' after '" + k + "'");
                m.put(k, value());
                if (!eat(',')) { if (!eat('}')) throw err("',' or '}'"); break; }
            }
            space();
            if (i != s.length()) throw err("only padding after the dict");
            return m;
        }

        private String string() {
            space();
            if (i >= s.length() || (s.charAt(i) != '\'' && s.charAt(i) != '"')) throw err("a quoted key or string");
            char q = s.charAt(i++);
            int end = s.indexOf(q, i);
            if (end < 0) throw err("the closing quote");
            String v = s.substring(i, end);
            for (int k = 0; k < v.length(); k++) if (Character.isISOControl(v.charAt(k))) { i += k; throw err("a printable string"); }
            i = end + 1;
            return v;
        }

        private Object value() {
            space();
            if (s.startsWith("True", i)) { i += 4; return Boolean.TRUE; }
            if (s.startsWith("False", i)) { i += 5; return Boolean.FALSE; }
            if (i < s.length() && s.charAt(i) == '(') {
                i++;
                List<Long> dims = new ArrayList<>();
                while (!eat(')')) {
                    space();
                    int from = i;
                    while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') i++;
                    if (from == i) throw err("a non-negative dimension");
                    if (i - from > 10) { i = from; throw err("a dimension below 2^31"); }
                    long d = Long.parseLong(s.substring(from, i));
                    if (d > Integer.MAX_VALUE) { i = from; throw err("a dimension below 2^31"); }
                    dims.add(d);
                    if (dims.size() > 32) throw err("at most 32 dimensions (numpy's limit)");
                    if (!eat(',')) { if (!eat(')')) throw err("',' or ')' in the shape"); break; }
                }
                return dims.stream().mapToLong(Long::longValue).toArray();
            }
            return string();
        }
    }

    /** Writes a buffer as a version 1.0 .npy file, streaming the data (any size). */
    public static void write(Path file, TensorBuffer buffer) {
        TensorBuffer t = buffer.packed();
        StringBuilder shape = new StringBuilder();
        for (int d : t.shape()) shape.append(d).append(", ");
        String s = t.shape().length == 1 ? shape.toString().strip() : shape.length() > 0 ? shape.substring(0, shape.length() - 2) : "";
        String dict = "{'descr': '" + descr(t.dtype()) + "', 'fortran_order': False, 'shape': (" + s + "), }";
        int total = 10 + dict.length() + 1;
        int pad = (64 - total % 64) % 64;
        String header = dict + " ".repeat(pad) + "\n";
        ByteBuffer h = ByteBuffer.allocate(10 + header.length()).order(ByteOrder.LITTLE_ENDIAN);
        h.put(MAGIC).put((byte) 1).put((byte) 0).putShort((short) header.length()).put(header.getBytes(StandardCharsets.ISO_8859_1)).flip();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING)) {
            while (h.hasRemaining()) ch.write(h);
            MemorySegment data = t.segment().asSlice(0, t.type().byteSize());
            for (long off = 0; off < data.byteSize(); off += 1 << 30) {
                ByteBuffer chunk = data.asSlice(off, Math.min(1L << 30, data.byteSize() - off)).asByteBuffer();
                while (chunk.hasRemaining()) ch.write(chunk);
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("[npy] cannot write " + file + ": " + (e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName()));
        }
    }
}
