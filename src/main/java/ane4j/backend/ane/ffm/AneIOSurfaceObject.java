package ane4j.backend.ane.ffm;

import ane4j.backend.AneException;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;

import static ane4j.backend.ane.ffm.ObjC.ID;

/** The private class {@code _ANEIOSurfaceObject} (docs/ane-facts.md §2.2 step 6). */
public final class AneIOSurfaceObject {
    // id (id, SEL, IOSurfaceRef)
    private static final FunctionDescriptor OBJECT_WITH_IOSURFACE = FunctionDescriptor.of(ID, ID, ID, ID);

    private AneIOSurfaceObject() {}

    /** {@code +[_ANEIOSurfaceObject objectWithIOSurface:]}, +0; the wrapper keeps the surface alive while it lives. */
    public static MemorySegment objectWithIOSurface(MemorySegment surface) {
        ObjC objc = ObjC.get();
        MemorySegment wrapper;
        try {
            wrapper = (MemorySegment) objc.msgSend(OBJECT_WITH_IOSURFACE).invokeExact(
                    objc.cls("_ANEIOSurfaceObject"), objc.sel("objectWithIOSurface:"), surface);
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
        if (wrapper.equals(MemorySegment.NULL)) throw new AneException("[objectWithIOSurface:] returned nil");
        return wrapper;
    }
}
