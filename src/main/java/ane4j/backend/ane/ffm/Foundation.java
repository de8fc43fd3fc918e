package ane4j.backend.ane.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;

import static ane4j.backend.ane.ffm.ObjC.ID;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Foundation values built from Java values, and back. Every result is +0 (autoreleased by its convenience
 * constructor): call these inside an {@link AutoreleasePool} and {@link ObjC#retain retain} what is kept.
 * {@code NSUInteger} is 64-bit on every Mac this runs on (LP64), so lengths and counts are {@code JAVA_LONG}.
 */
public final class Foundation {
    private static final FunctionDescriptor ID_ID_SEL_PTR = FunctionDescriptor.of(ID, ID, ID, ID);
    private static final FunctionDescriptor ID_ID_SEL_PTR_ULONG = FunctionDescriptor.of(ID, ID, ID, ID, JAVA_LONG);
    private static final FunctionDescriptor ID_ID_SEL_INT = FunctionDescriptor.of(ID, ID, ID, JAVA_INT);
    private static final FunctionDescriptor ID_ID_SEL_ULONG = FunctionDescriptor.of(ID, ID, ID, JAVA_LONG);
    private static final FunctionDescriptor ID_ID_SEL_PTR_PTR_ULONG = FunctionDescriptor.of(ID, ID, ID, ID, ID, JAVA_LONG);
    private static final FunctionDescriptor ID_VOID = FunctionDescriptor.of(ID);

    private Foundation() {}

    /** {@code [NSString stringWithUTF8String:]}, +0. */
    public static MemorySegment string(String value) {
        ObjC objc = ObjC.get();
        try (Arena arena = Arena.ofConfined()) {
            return (MemorySegment) objc.msgSend(ID_ID_SEL_PTR).invokeExact(
                    objc.cls("NSString"), objc.sel("stringWithUTF8String:"), arena.allocateFrom(value));
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }

    /** {@code [NSData dataWithBytes:length:]} (copies), +0. */
    public static MemorySegment data(byte[] bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment copy = arena.allocate(Math.max(1, bytes.length));
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, copy, 0, bytes.length);
            return data(copy.asSlice(0, bytes.length));
        }
    }

    /** {@code [NSData dataWithBytes:length:]} over native memory (copies), +0. */
    public static MemorySegment data(MemorySegment bytes) {
        ObjC objc = ObjC.get();
        try {
            return (MemorySegment) objc.msgSend(ID_ID_SEL_PTR_ULONG).invokeExact(
                    objc.cls("NSData"), objc.sel("dataWithBytes:length:"), bytes, bytes.byteSize());
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }

    /** {@code [NSNumber numberWithInt:]}, +0. */
    public static MemorySegment number(int value) {
        ObjC objc = ObjC.get();
        try {
            return (MemorySegment) objc.msgSend(ID_ID_SEL_INT).invokeExact(
                    objc.cls("NSNumber"), objc.sel("numberWithInt:"), value);
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }

    /** {@code [NSNumber numberWithUnsignedLongLong:]}, +0; for sizes. */
    public static MemorySegment unsignedNumber(long value) {
        if (value < 0) throw new IllegalArgumentException("[ane.ffm] unsigned number " + value + " is negative");
        ObjC objc = ObjC.get();
        try {
            return (MemorySegment) objc.msgSend(ID_ID_SEL_ULONG).invokeExact(
                    objc.cls("NSNumber"), objc.sel("numberWithUnsignedLongLong:"), value);
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }

    /** {@code [NSArray arrayWithObjects:count:]}, +0; the array retains its elements. */
    public static MemorySegment array(List<MemorySegment> objects) {
        ObjC objc = ObjC.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ids = idArray(arena, objects);
            return (MemorySegment) objc.msgSend(ID_ID_SEL_PTR_ULONG).invokeExact(
                    objc.cls("NSArray"), objc.sel("arrayWithObjects:count:"), ids, (long) objects.size());
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }

    /** {@code [NSDictionary dictionaryWithObjects:forKeys:count:]} in the map's iteration order, +0. */
    public static MemorySegment dictionary(Map<MemorySegment, MemorySegment> entries) {
        ObjC objc = ObjC.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment keys = idArray(arena, List.copyOf(entries.keySet()));
            MemorySegment values = idArray(arena, List.copyOf(entries.values()));
            return (MemorySegment) objc.msgSend(ID_ID_SEL_PTR_PTR_ULONG).invokeExact(
                    objc.cls("NSDictionary"), objc.sel("dictionaryWithObjects:forKeys:count:"),
                    values, keys, (long) entries.size());
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }

    /** An empty NSDictionary ({@code @{}}), +0. The ANE calls take {@code @{}} where maderix writes it, never nil. */
    public static MemorySegment emptyDictionary() {
        return dictionary(Map.of());
    }

    /** An NSString (or any object, through {@code description}) as a Java string; nil gives null. */
    public static String toJava(MemorySegment object) {
        if (object.equals(MemorySegment.NULL)) return null;
        ObjC objc = ObjC.get();
        return objc.utf8(objc.sendId(object, "description"));
    }

    /** {@code NSTemporaryDirectory()}: the per-user temp dir the in-memory compiler also uses (with a trailing slash). */
    public static String temporaryDirectory() {
        ObjC objc = ObjC.get();
        try {
            MemorySegment dir = (MemorySegment) objc.downcall("NSTemporaryDirectory", ID_VOID).invokeExact();
            return objc.utf8(dir);
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }

    private static MemorySegment idArray(Arena arena, List<MemorySegment> objects) {
        MemorySegment ids = arena.allocate(ID, Math.max(1, objects.size()));
        for (int i = 0; i < objects.size(); i++) ids.setAtIndex(ID, i, objects.get(i));
        return ids;
    }
}
