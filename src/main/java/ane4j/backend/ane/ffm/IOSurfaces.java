package ane4j.backend.ane.ffm;

import ane4j.backend.AneException;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;

import static ane4j.backend.ane.ffm.ObjC.ID;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The IOSurface C API: the ANE's input and output buffers. A surface here is a 1-row byte buffer holding a
 * dense {@code [1,C,H,W]} tensor (docs/ane-facts.md §3). {@code IOSurfaceRef} is a CF type: {@link #create} is +1
 * (Create rule) and is balanced by {@link #release} ({@code CFRelease}).
 */
public final class IOSurfaces {
    /** {@code kIOSurfaceLockReadOnly} (IOSurfaceTypes.h): a read lock, no seed bump. */
    public static final int LOCK_READ_ONLY = 0x1;
    /** A read-write lock: options 0, as maderix locks for writes (docs/ane-facts.md §3). */
    public static final int LOCK_READ_WRITE = 0;

    // IOSurfaceRef IOSurfaceCreate(CFDictionaryRef properties)
    private static final FunctionDescriptor CREATE = FunctionDescriptor.of(ID, ID);
    // IOReturn IOSurfaceLock/Unlock(IOSurfaceRef, IOSurfaceLockOptions (uint32_t), uint32_t *seed); IOReturn is int
    private static final FunctionDescriptor LOCK = FunctionDescriptor.of(JAVA_INT, ID, JAVA_INT, ID);
    // void *IOSurfaceGetBaseAddress(IOSurfaceRef)
    private static final FunctionDescriptor BASE = FunctionDescriptor.of(ID, ID);
    // size_t IOSurfaceGetAllocSize(IOSurfaceRef)
    private static final FunctionDescriptor SIZE = FunctionDescriptor.of(JAVA_LONG, ID);
    // void CFRelease(CFTypeRef)
    private static final FunctionDescriptor CF_RELEASE = FunctionDescriptor.ofVoid(ID);

    private IOSurfaces() {}

    /**
     * {@code IOSurfaceCreate} with exactly the property dictionary every maderix kernel uses (docs/ane-facts.md §3):
     * width = bytes, height 1, bytes per element 1, bytes per row = bytes, alloc size = bytes, pixel format 0.
     * Returns a +1 {@code IOSurfaceRef}. Call inside an autorelease pool (the dictionary is +0).
     */
    public static MemorySegment create(long bytes) {
        if (bytes <= 0) throw new IllegalArgumentException("[IOSurfaceCreate] size " + bytes + " must be positive");
        ObjC objc = ObjC.get();
        Map<MemorySegment, MemorySegment> props = new LinkedHashMap<>();
        props.put(objc.pointerGlobal("kIOSurfaceWidth"), Foundation.unsignedNumber(bytes));
        props.put(objc.pointerGlobal("kIOSurfaceHeight"), Foundation.number(1));
        props.put(objc.pointerGlobal("kIOSurfaceBytesPerElement"), Foundation.number(1));
        props.put(objc.pointerGlobal("kIOSurfaceBytesPerRow"), Foundation.unsignedNumber(bytes));
        props.put(objc.pointerGlobal("kIOSurfaceAllocSize"), Foundation.unsignedNumber(bytes));
        props.put(objc.pointerGlobal("kIOSurfacePixelFormat"), Foundation.number(0));
        // NSDictionary is toll-free bridged to CFDictionaryRef
        MemorySegment dictionary = Foundation.dictionary(props);
        MemorySegment surface;
        try {
            surface = (MemorySegment) objc.downcall("IOSurfaceCreate", CREATE).invokeExact(dictionary);
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
        if (surface.equals(MemorySegment.NULL))
            throw new AneException("[IOSurfaceCreate] returned NULL for " + bytes + " bytes");
        return surface;
    }

    /** {@code IOSurfaceLock(surface, options, NULL)}; options {@link #LOCK_READ_WRITE} or {@link #LOCK_READ_ONLY}. */
    public static void lock(MemorySegment surface, int options) {
        check("IOSurfaceLock", call("IOSurfaceLock", surface, options));
    }

    /** {@code IOSurfaceUnlock(surface, options, NULL)} with the options the lock used. */
    public static void unlock(MemorySegment surface, int options) {
        check("IOSurfaceUnlock", call("IOSurfaceUnlock", surface, options));
    }

    /** {@code IOSurfaceGetAllocSize}. */
    public static long allocSize(MemorySegment surface) {
        try {
            return (long) ObjC.get().downcall("IOSurfaceGetAllocSize", SIZE).invokeExact(surface);
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }

    /**
     * {@code IOSurfaceGetBaseAddress}, sized to the alloc size. The memory is valid while the surface is
     * alive; CPU reads and writes belong between {@link #lock} and {@link #unlock}.
     */
    public static MemorySegment baseAddress(MemorySegment surface) {
        MemorySegment base;
        try {
            base = (MemorySegment) ObjC.get().downcall("IOSurfaceGetBaseAddress", BASE).invokeExact(surface);
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
        if (base.equals(MemorySegment.NULL)) throw new AneException("[IOSurfaceGetBaseAddress] returned NULL");
        return base.reinterpret(allocSize(surface));
    }

    /** {@code CFRelease}: balances {@link #create}. */
    public static void release(MemorySegment surface) {
        try {
            ObjC.get().downcall("CFRelease", CF_RELEASE).invokeExact(surface);
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }

    private static int call(String name, MemorySegment surface, int options) {
        try {
            return (int) ObjC.get().downcall(name, LOCK).invokeExact(surface, options, MemorySegment.NULL);
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }

    private static void check(String name, int ioReturn) {
        if (ioReturn != 0) throw new AneException("[" + name + "] failed with IOReturn 0x" + Integer.toHexString(ioReturn));
    }
}
