package ane4j.mil;

import java.util.Locale;

/** MIL element types, with their MIL spelling, byte width and MILBlob v2 dtype code (0 when not storable in a blob). */
public enum DType {
    FP16("fp16", 2, 1),
    FP32("fp32", 4, 2),
    UINT8("uint8", 1, 3),
    INT8("int8", 1, 4),
    INT16("int16", 2, 6),
    INT32("int32", 4, 14),
    BOOL("bool", 1, 0),
    STRING("string", 0, 0),
    UINT64("uint64", 8, 0);

    private final String milName;
    private final int byteSize;
    private final int blobCode;

    DType(String milName, int byteSize, int blobCode) {
        this.milName = milName;
        this.byteSize = byteSize;
        this.blobCode = blobCode;
    }

    /** The spelling in MIL text: {@code fp16}, {@code int32}, ... */
    public String milName() { return milName; }

    /** Bytes per element in a dense buffer (0 for string). */
    public int byteSize() { return byteSize; }

    /** The {@code mil_dtype} code of coremltools' MILBlob {@code BlobDataType}, 0 when blobs cannot hold this type. */
    public int blobCode() { return blobCode; }

    public boolean isFloat() { return this == FP16 || this == FP32; }

    public boolean isInteger() { return this == UINT8 || this == INT8 || this == INT16 || this == INT32 || this == UINT64; }

    /** The type named {@code name} in MIL text, or null. */
    public static DType fromMilName(String name) {
        for (DType t : values()) if (t.milName.equals(name)) return t;
        return null;
    }

    /** The type with MILBlob code {@code code}, or null. */
    public static DType fromBlobCode(int code) {
        for (DType t : values()) if (t.blobCode != 0 && t.blobCode == code) return t;
        return null;
    }

    @Override
    public String toString() { return milName.toLowerCase(Locale.ROOT); }
}
