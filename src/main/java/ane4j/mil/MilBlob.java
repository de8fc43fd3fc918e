package ane4j.mil;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * MILBlob storage v2, the weight-file format of CoreML and of the ANE's in-memory compiler
 * (coremltools {@code mlmodel/src/MILBlob/Blob/StorageFormat.hpp}; ane-facts.md §4.4):
 * <pre>
 *   file header, 64 bytes:   u32 count, u32 version = 2, 56 reserved zero bytes
 *   per blob, 64-byte aligned:
 *     metadata, 64 bytes:    u32 sentinel 0xDEADBEEF, u32 mil_dtype, u64 sizeInBytes, u64 data offset (absolute),
 *                            u64 padding_size_in_bits, 4 × u64 reserved (zero)
 *     data:                  sizeInBytes bytes at the data offset (metadata offset + 64)
 * </pre>
 * A BLOBFILE literal's {@code offset} points at the blob's metadata, so the first blob is at 64 and its data at 128.
 */
public final class MilBlob {
    private MilBlob() {}

    public static final int HEADER_SIZE = 64;
    public static final int METADATA_SIZE = 64;
    public static final int ALIGNMENT = 64;
    public static final int VERSION = 2;
    public static final int SENTINEL = 0xDEADBEEF;

    /** One blob: element type, raw little-endian data, and where its metadata sits in the file. */
    public record Entry(DType dtype, byte[] data, long metadataOffset) {
        public long count() { return data.length / dtype.byteSize(); }
    }

    static long align(long n) { return (n + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT; }

    /** Metadata offsets of blobs with these data sizes, in file order (what BLOBFILE offsets must say). */
    public static long[] offsets(long... dataSizes) {
        long[] out = new long[dataSizes.length];
        long pos = HEADER_SIZE;
        for (int i = 0; i < dataSizes.length; i++) {
            out[i] = pos;
            pos = align(pos + METADATA_SIZE + dataSizes[i]);
        }
        return out;
    }

    /** Encodes blobs (dtype, little-endian data) into one file; returned entries carry their metadata offsets. */
    public static byte[] write(List<DType> dtypes, List<byte[]> datas) {
        long[] sizes = datas.stream().mapToLong(d -> d.length).toArray();
        long[] offs = offsets(sizes);
        long total = datas.isEmpty() ? HEADER_SIZE : align(offs[offs.length - 1] + METADATA_SIZE + sizes[sizes.length - 1]);
        if (total > Integer.MAX_VALUE - 8) throw new MilException("[blob] weight file of " + total + " bytes exceeds 2 GiB; split it into several files");
        ByteBuffer b = ByteBuffer.allocate((int) total).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, datas.size()).putInt(4, VERSION);
        for (int i = 0; i < datas.size(); i++) {
            DType t = dtypes.get(i);
            if (t.blobCode() == 0) throw new MilException("[blob] " + t + " cannot be stored in a MILBlob file");
            if (sizes[i] % t.byteSize() != 0) throw new MilException("[blob] " + sizes[i] + " bytes is not a whole number of " + t + " elements");
            int m = (int) offs[i];
            b.putInt(m, SENTINEL).putInt(m + 4, t.blobCode()).putLong(m + 8, sizes[i]).putLong(m + 16, m + METADATA_SIZE);
            b.put(m + METADATA_SIZE, datas.get(i));
        }
        return b.array();
    }

    /**
     * Decodes a weight file, checking every field against the file size before trusting it.
     * @param name used in error messages (a path)
     */
    public static List<Entry> read(byte[] file, String name) {
        if (file.length < HEADER_SIZE)
            throw new MilException("[blob] " + name + ": " + file.length + " bytes is shorter than the 64-byte MILBlob header (truncated or not a weight file)");
        ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        long count = Integer.toUnsignedLong(b.getInt(0));
        int version = b.getInt(4);
        if (version != VERSION) throw new MilException("[blob] " + name + ": MILBlob version " + version + ", expected 2 (not a CoreML weight file?)");
        if (count > (file.length - HEADER_SIZE) / METADATA_SIZE)
            throw new MilException("[blob] " + name + ": header says " + count + " blobs but the file has room for at most " + (file.length - HEADER_SIZE) / METADATA_SIZE + " (truncated or corrupt)");
        List<Entry> out = new ArrayList<>();
        long pos = HEADER_SIZE;
        for (int i = 0; i < count; i++) {
            if (pos + METADATA_SIZE > file.length) throw new MilException("[blob] " + name + ": blob " + i + " metadata at " + pos + " is past the end of the file (" + file.length + " bytes; truncated)");
            out.add(entryAt(b, pos, name));
            Entry e = out.get(i);
            pos = align(pos + METADATA_SIZE + e.data().length);
        }
        return out;
    }

    /** Decodes the single blob whose metadata is at {@code metadataOffset} (what a BLOBFILE offset names). */
    public static Entry readAt(byte[] file, long metadataOffset, String name) {
        if (file.length < HEADER_SIZE || ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN).getInt(4) != VERSION)
            throw new MilException("[blob] " + name + ": not a MILBlob v2 file");
        if (metadataOffset < HEADER_SIZE || metadataOffset + METADATA_SIZE > file.length)
            throw new MilException("[blob] " + name + ": offset " + metadataOffset + " is outside the file (" + file.length + " bytes)");
        return entryAt(ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN), metadataOffset, name);
    }

    private static Entry entryAt(ByteBuffer b, long pos, String name) {
        int m = (int) pos;
        int sentinel = b.getInt(m);
        if (sentinel != SENTINEL)
            throw new MilException(String.format("[blob] %s: no 0xDEADBEEF sentinel at offset %d (found 0x%08X); the BLOBFILE offset must point at a blob's metadata", name, pos, sentinel));
        int code = b.getInt(m + 4);
        DType t = DType.fromBlobCode(code);
        if (t == null) throw new MilException("[blob] " + name + ": unsupported mil_dtype " + code + " at offset " + pos);
        long size = b.getLong(m + 8), data = b.getLong(m + 16);
        if (size < 0 || data < pos + METADATA_SIZE || data > b.capacity() || size > b.capacity() - data)
            throw new MilException("[blob] " + name + ": blob at " + pos + " claims " + size + " bytes at offset " + data + ", beyond the file's " + b.capacity() + " bytes (truncated or corrupt)");
        if (size % t.byteSize() != 0) throw new MilException("[blob] " + name + ": blob at " + pos + " has " + size + " bytes, not a whole number of " + t);
        byte[] out = new byte[(int) size];
        b.get((int) data, out);
        return new Entry(t, out, pos);
    }
}
