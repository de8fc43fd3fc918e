package ane4j.backend.ane.ffm;

import ane4j.backend.AneException;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static ane4j.backend.ane.ffm.ObjC.ID;

/** The private class {@code _ANERequest} (docs/ane-facts.md §2.2 step 7). */
public final class AneRequest {
    // id (id, SEL, NSArray *inputs, NSArray *inputIndices, NSArray *outputs, NSArray *outputIndices,
    //     id weightsBuffer, id perfStats, NSNumber *procedureIndex) — 9 arguments, all pointers
    private static final FunctionDescriptor REQUEST_WITH_INPUTS =
            FunctionDescriptor.of(ID, ID, ID, ID, ID, ID, ID, ID, ID, ID);

    private AneRequest() {}

    /**
     * {@code +[_ANERequest requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:]},
     * +0. Surfaces are {@code _ANEIOSurfaceObject}s bound at indices 0..n-1 in list order; weightsBuffer and
     * perfStats are nil; procedureIndex is the object {@code @0}, not an int (docs/ane-facts.md §2.2).
     */
    public static MemorySegment requestWithInputs(List<MemorySegment> inputs, List<MemorySegment> outputs) {
        ObjC objc = ObjC.get();
        MemorySegment request;
        try {
            request = (MemorySegment) objc.msgSend(REQUEST_WITH_INPUTS).invokeExact(
                    objc.cls("_ANERequest"),
                    objc.sel("requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:"),
                    Foundation.array(inputs), indices(inputs.size()),
                    Foundation.array(outputs), indices(outputs.size()),
                    MemorySegment.NULL, MemorySegment.NULL, Foundation.number(0));
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
        if (request.equals(MemorySegment.NULL)) throw new AneException("[requestWithInputs:...] returned nil");
        return request;
    }

    private static MemorySegment indices(int n) {
        List<MemorySegment> numbers = new ArrayList<>(n);
        for (int i = 0; i < n; i++) numbers.add(Foundation.number(i));
        return Foundation.array(numbers);
    }
}
