package ane4j.cli;

import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.TensorType;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** numpy {@code .npy} files (format 1.0–3.0) for fp16 ({@code <f2}), fp32 ({@code <f4}) and int32 ({@code <i4}), little-endian C order. */
public final class Npy {
    private Npy() {}

    private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
    private static final Pattern DESCR = Pattern.compile("'descr'\\s*:\\s*'([^']*)'");
    private static final Pattern FORTRAN = Pattern.compile("'fortran_order'\\s*:\\s*(True|False)");
    private static final Pattern SHAPE = Pattern.compile("'shape'\\s*:\\s*\\(([^)]*)\\)");

    static String descr(DType t) {
        return switch (t) {
            case FP16 -> "<f2";
            case FP32 -> "<f4";
            case INT32 -> "<i4";
            default -> throw new CliException("[npy] " + t + " cannot be written as .npy (fp16, fp32, int32)");
        };
    }

    /** Reads {@code file} into a buffer of {@code expected}'s type (dtype and shape must match). */
    public static TensorBuffer read(Path file, TensorType expected, String name) {
        byte[] all;
        try {
            all = Files.readAllBytes(file);
        } catch (IOException e) {
            throw CliException.cannotRead(file, e);
        }
        if (all.length < 10 || !java.util.Arrays.equals(all, 0, 6, MAGIC, 0, 6)) throw new CliException("[npy] " + file + " is not a .npy file (no \\x93NUMPY magic)");
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        int major = all[6];
        int hlen = major == 1 ? Short.toUnsignedInt(b.getShort(8)) : b.getInt(8);
        int start = major == 1 ? 10 : 12;
        if (start + hlen > all.length) throw new CliException("[npy] " + file + ": truncated header");
        String header = new String(all, start, hlen, StandardCharsets.ISO_8859_1);
        Matcher d = DESCR.matcher(header), fo = FORTRAN.matcher(header), sh = SHAPE.matcher(header);
        if (!d.find() || !fo.find() || !sh.find()) throw new CliException("[npy] " + file + ": malformed header " + header.strip());
        if (fo.group(1).equals("True")) throw new CliException("[npy] " + file + " is in Fortran order; save it with np.ascontiguousarray(a) first");
        String want = descr(expected.dtype());
        String got = d.group(1).replace("=", "<").replace("|", "<");
        if (!got.equals(want))
            throw new CliException("[npy] " + file + " has dtype '" + d.group(1) + "' but input '" + name + "' is " + expected.dtype() + " ('" + want + "'); convert with a.astype(np." + npName(expected.dtype()) + ")");
        List<Integer> dims = new ArrayList<>();
        for (String s : sh.group(1).split(",")) if (!s.isBlank()) dims.add(Integer.parseInt(s.strip()));
        int[] shape = dims.stream().mapToInt(Integer::intValue).toArray();
        if (!java.util.Arrays.equals(shape, expected.shape()))
            throw new CliException("[npy] " + file + " has shape " + java.util.Arrays.toString(shape) + " but input '" + name + "' is " + expected + "; reshape it to " + java.util.Arrays.toString(expected.shape()));
        long bytes = expected.byteSize();
        if (start + hlen + bytes > all.length) throw new CliException("[npy] " + file + ": data is truncated (" + (all.length - start - hlen) + " of " + bytes + " bytes)");
        TensorBuffer t = TensorBuffer.allocate(expected);
        MemorySegment.copy(MemorySegment.ofArray(all), start + hlen, t.segment(), 0, bytes);
        return t;
    }

    private static String npName(DType t) { return switch (t) { case FP16 -> "float16"; case FP32 -> "float32"; default -> "int32"; }; }

    /** Writes a buffer as a version 1.0 .npy file. */
    public static void write(Path file, TensorBuffer t) {
        StringBuilder shape = new StringBuilder();
        for (int d : t.shape()) shape.append(d).append(", ");
        String s = t.shape().length == 1 ? shape.toString().strip() : shape.length() > 0 ? shape.substring(0, shape.length() - 2) : "";
        String dict = "{'descr': '" + descr(t.dtype()) + "', 'fortran_order': False, 'shape': (" + s + "), }";
        int total = 10 + dict.length() + 1;
        int pad = (64 - total % 64) % 64;
        String header = dict + " ".repeat(pad) + "\n";
        ByteBuffer h = ByteBuffer.allocate(10 + header.length()).order(ByteOrder.LITTLE_ENDIAN);
        h.put(MAGIC).put((byte) 1).put((byte) 0).putShort((short) header.length()).put(header.getBytes(StandardCharsets.ISO_8859_1));
        byte[] data = t.segment().asSlice(0, t.type().byteSize()).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        try {
            Files.write(file, concat(h.array(), data));
        } catch (IOException e) {
            throw new CliException("[npy] cannot write " + file + ": " + e.getMessage());
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] r = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }
}
