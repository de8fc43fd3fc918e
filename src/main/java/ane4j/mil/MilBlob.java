package ane4j.mil;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * MILBlob storage v2, the weight-file format of CoreML and of the ANE's in-memory compiler
 * (coremltools {@code mlmodel/src/MILBlob/Blob/StorageFormat.hpp}; docs/ane-facts.md §4.4):
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

    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** What a BLOBFILE literal says of its blob: the metadata offset, the element type and the byte size of its tensor type. */
    public record Declared(long metadataOffset, DType dtype, long byteSize) {}

    /**
     * Reads the blobs a program's BLOBFILE literals name from a (mapped) weight file, trusting what the ANE compiler
     * evidently trusts — the BLOBFILE offset, the sentinel there and the literal's tensor type — and reading the header
     * fields maderix's builders write sloppily with a one-line warning naming the field instead of a refusal: programs
     * with those files compiled and ran on M3/M4 (issue 12 point 8; ane_int8_bench.m's report is from an M4, docs/ane-facts.md §4.4).
     * The fields, as read in maderix/ANE's source (commit d91c984):
     * <ul>
     *   <li>count 1 for several blobs: {@code training/ane_mil_gen.h} (fused QKV, FFN-up), {@code inmem_peak.m}, {@code ane_int8_bench.m};
     *   <li>data offset 0 and a hard-coded sizeInBytes (byte 10 = 0x08, 524288; 0x10, 1048576): {@code inmem_peak.m}, {@code ane_int8_bench.m};
     *   <li>mil_dtype 1 (fp16) on int8 data: {@code ane_int8_bench.m}.
     * </ul>
     * Refused, as corruption, with one line: no MILBlob v2 header, an offset outside the file, no sentinel at the offset, an
     * unknown mil_dtype, data that does not fit the file, a blob over 2 GiB.
     */
    public static Map<Long, Entry> readDeclared(MemorySegment file, String name, Collection<Declared> blobs, Consumer<String> warn) {
        long size = file.byteSize();
        if (size < HEADER_SIZE)
            throw new MilException("[blob] " + name + ": " + size + " bytes is shorter than the 64-byte MILBlob header (truncated or not a weight file); re-export the weights");
        int version = file.get(U32, 4);
        if (version != VERSION) throw new MilException("[blob] " + name + ": MILBlob version " + version + ", expected 2 (not a CoreML weight file?); re-export the weights");
        Map<Long, Entry> out = new LinkedHashMap<>();
        for (Declared d : blobs) {
            if (out.containsKey(d.metadataOffset())) {
                Entry e = out.get(d.metadataOffset());
                if (e.dtype() != d.dtype() || e.data().length != d.byteSize())
                    throw new MilException("[blob] " + name + ": two BLOBFILE literals read the blob at offset " + d.metadataOffset() + " as different types (" + e.dtype() + " of "
                            + e.data().length + " bytes and " + d.dtype() + " of " + d.byteSize() + "); give each its own blob");
                continue;
            }
            out.put(d.metadataOffset(), declaredAt(file, name, d, warn));
        }
        long count = Integer.toUnsignedLong(file.get(U32, 0));
        if (count < out.size())
            warn.accept("[blob] " + name + ": header count " + count + " but the program reads " + out.size() + " blobs from it (maderix's ane_mil_gen.h and benchmarks write 1); "
                    + "reading each blob at its BLOBFILE offset");
        return out;
    }

    private static Entry declaredAt(MemorySegment file, String name, Declared d, Consumer<String> warn) {
        long size = file.byteSize(), m = d.metadataOffset();
        String at = "[blob] " + name + ": blob at offset " + m;
        if (m < HEADER_SIZE || m > size - METADATA_SIZE)
            throw new MilException("[blob] " + name + ": BLOBFILE offset " + m + " is outside the file (" + size + " bytes; metadata starts at 64); fix the offset or re-export the weights");
        int sentinel = file.get(U32, m);
        if (sentinel != SENTINEL)
            throw new MilException(String.format("%s: no 0xDEADBEEF sentinel (found 0x%08X); the BLOBFILE offset must point at a blob's metadata", at, sentinel));
        int code = file.get(U32, m + 4);
        DType stored = DType.fromBlobCode(code);
        if (stored == null) throw new MilException(at + ": unsupported mil_dtype " + code + " (1 fp16, 2 fp32, 3 uint8, 4 int8, …); re-export the weights");
        if (stored != d.dtype())
            warn.accept(at + ": mil_dtype " + code + " (" + stored.milName() + ") but the literal declares " + d.dtype().milName()
                    + (stored == DType.FP16 && d.dtype() == DType.INT8 ? " (maderix's ane_int8_bench.m writes the fp16 code on int8 data)" : "") + "; reading " + d.dtype().milName());
        if (d.byteSize() > Integer.MAX_VALUE - 8)
            throw new MilException(at + ": the literal declares " + d.byteSize() + " bytes; a single weight over 2 GiB is not supported, split the constant");
        long sizeField = file.get(U64, m + 8), dataField = file.get(U64, m + 16);
        long data = m + METADATA_SIZE;
        if (dataField == 0)
            warn.accept(at + ": data offset 0 (maderix's inmem_peak.m and ane_int8_bench.m leave it 0); reading the data right after the metadata, at " + data);
        else if (dataField >= data && dataField <= size) data = dataField;
        else
            throw new MilException(at + ": data offset " + Long.toUnsignedString(dataField) + " is " + (dataField < data ? "inside the blob's own metadata or before it" : "past the end of the file (" + size + " bytes)")
                    + "; re-export the weights");
        if (d.byteSize() > size - data)
            throw new MilException(at + ": the literal's " + d.byteSize() + " bytes at offset " + data + " run past the end of the file (" + size + " bytes; truncated?); re-export the weights");
        if (sizeField != d.byteSize())
            warn.accept(at + ": sizeInBytes " + Long.toUnsignedString(sizeField) + " but the literal declares " + d.byteSize() + " bytes"
                    + (dataField == 0 ? " (maderix's benchmarks hard-code this field)" : "") + "; reading " + d.byteSize());
        byte[] bytes = new byte[(int) d.byteSize()];
        MemorySegment.copy(file, ValueLayout.JAVA_BYTE, data, bytes, 0, bytes.length);
        return new Entry(d.dtype(), bytes, m);
    }
}
