package ane4j.backend.ane.ffm;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static ane4j.backend.ane.ffm.ObjC.ID;

/**
 * Tests only: an {@code _ANERequest} with a perfStats object, which ane4j itself never builds ({@link AneRequest} passes
 * nil), for PerfStatsMacos27Test (the fake's H2 rule). Here because native call descriptors stay in this package.
 */
public final class PerfStatsRequests {
    private PerfStatsRequests() {}

    /** One input and one output surface at index 0, weightsBuffer nil, the given perfStats, procedureIndex @0. */
    public static MemorySegment withPerfStats(MemorySegment input, MemorySegment output, MemorySegment perfStats) {
        ObjC objc = ObjC.get();
        try {
            return (MemorySegment) objc.msgSend(FunctionDescriptor.of(ID, ID, ID, ID, ID, ID, ID, ID, ID, ID)).invokeExact(
                    objc.cls("_ANERequest"),
                    objc.sel("requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:"),
                    Foundation.array(List.of(AneIOSurfaceObject.objectWithIOSurface(input))), Foundation.array(List.of(Foundation.number(0))),
                    Foundation.array(List.of(AneIOSurfaceObject.objectWithIOSurface(output))), Foundation.array(List.of(Foundation.number(0))),
                    MemorySegment.NULL, perfStats, Foundation.number(0));
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }
}
