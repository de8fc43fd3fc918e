package ane4j.backend.ane.ffm;

import ane4j.backend.AneException;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;

import static ane4j.backend.ane.ffm.ObjC.ID;

/** The private class {@code _ANEInMemoryModelDescriptor} (docs/ane-facts.md §2.2 step 1). */
public final class AneInMemoryModelDescriptor {
    // id (id self, SEL _cmd, NSData *milText, NSDictionary *weights, id optionsPlist)
    private static final FunctionDescriptor MODEL_WITH_MIL_TEXT = FunctionDescriptor.of(ID, ID, ID, ID, ID, ID);

    private AneInMemoryModelDescriptor() {}

    /**
     * {@code +[_ANEInMemoryModelDescriptor modelWithMILText:weights:optionsPlist:]}, +0. The MIL text must be
     * NSData (UTF-8), not NSString, and a weight-free program passes an empty dictionary, not nil
     * (docs/ane-facts.md §2.3; docs/anchors.md §1.3, ORION #9/#11). optionsPlist is nil, as in every maderix caller.
     */
    public static MemorySegment modelWithMILText(MemorySegment milData, MemorySegment weights) {
        ObjC objc = ObjC.get();
        MemorySegment descriptor;
        try {
            descriptor = (MemorySegment) objc.msgSend(MODEL_WITH_MIL_TEXT).invokeExact(
                    objc.cls("_ANEInMemoryModelDescriptor"), objc.sel("modelWithMILText:weights:optionsPlist:"),
                    milData, weights, MemorySegment.NULL);
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
        if (descriptor.equals(MemorySegment.NULL))
            throw new AneException("[modelWithMILText:weights:optionsPlist:] returned nil: the framework rejected the MIL text or weights");
        return descriptor;
    }
}
