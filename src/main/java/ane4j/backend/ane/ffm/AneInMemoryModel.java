package ane4j.backend.ane.ffm;

import ane4j.backend.AneException;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;

import static ane4j.backend.ane.ffm.ObjC.BOOL;
import static ane4j.backend.ane.ffm.ObjC.ID;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The private class {@code _ANEInMemoryModel} (docs/ane-facts.md §2.2 steps 2–5, 8, 9): one Java method per
 * selector. The wrapper does not own the object; {@code AneProgram} retains and releases it.
 * Every method taking {@code error:} must run inside an autorelease pool.
 */
public final class AneInMemoryModel {
    /** The QoS every maderix call passes: 21 = {@code QOS_CLASS_DEFAULT} (0x15). QoS 0–63 all work (maderix/ANE training/m5result.md). */
    public static final int QOS_DEFAULT = 21;

    // id (id, SEL, id descriptor)
    private static final FunctionDescriptor WITH_DESCRIPTOR = FunctionDescriptor.of(ID, ID, ID, ID);
    // BOOL (id, SEL, unsigned int qos, NSDictionary *options, NSError **error)
    private static final FunctionDescriptor QOS_OPTIONS_ERROR = FunctionDescriptor.of(BOOL, ID, ID, JAVA_INT, ID, ID);
    // BOOL (id, SEL, unsigned int qos, NSDictionary *options, _ANERequest *request, NSError **error)
    private static final FunctionDescriptor EVALUATE = FunctionDescriptor.of(BOOL, ID, ID, JAVA_INT, ID, ID, ID);
    // BOOL (id, SEL, unsigned int qos, NSError **error)
    private static final FunctionDescriptor QOS_ERROR = FunctionDescriptor.of(BOOL, ID, ID, JAVA_INT, ID);
    // NSUInteger (id, SEL)
    private static final FunctionDescriptor UINTEGER = FunctionDescriptor.of(JAVA_LONG, ID, ID);

    private final ObjC objc;
    private final MemorySegment id;

    private AneInMemoryModel(ObjC objc, MemorySegment id) {
        this.objc = objc;
        this.id = id;
    }

    /** The underlying {@code id}. */
    public MemorySegment id() { return id; }

    /** {@code +[_ANEInMemoryModel inMemoryModelWithDescriptor:]}; the result is +0. */
    public static AneInMemoryModel inMemoryModelWithDescriptor(MemorySegment descriptor) {
        ObjC objc = ObjC.get();
        MemorySegment model;
        try {
            model = (MemorySegment) objc.msgSend(WITH_DESCRIPTOR).invokeExact(
                    objc.cls("_ANEInMemoryModel"), objc.sel("inMemoryModelWithDescriptor:"), descriptor);
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
        if (model.equals(MemorySegment.NULL))
            throw new AneException("[inMemoryModelWithDescriptor:] returned nil");
        return new AneInMemoryModel(objc, model);
    }

    /**
     * {@code -hexStringIdentifier}, as the framework returns it (null for nil). Apple's descriptor builds it as
     * {@code "%@_%@_%@"} of three upper-case SHA-256 digests (MIL text, weight blobs, options plist; decompiled
     * {@code _ANEInMemoryModelDescriptor}, docs/ane-audit.md F1), so it is not a hex string;
     * maderix ({@code training_dynamic/io.h:105}), Orion ({@code core/ane_runtime.m:74}) and Espresso use it unchecked as
     * a directory name. The caller validates it as a path component only.
     */
    public String hexStringIdentifier() {
        return objc.utf8(objc.sendId(id, "hexStringIdentifier"));
    }

    // BOOL (id, SEL) and void (id, SEL)
    private static final FunctionDescriptor BOOL_OF_NOTHING = FunctionDescriptor.of(BOOL, ID, ID);
    private static final FunctionDescriptor VOID_OF_NOTHING = FunctionDescriptor.ofVoid(ID, ID);

    /**
     * {@code -compiledModelExists}: whether the aned daemon has this identifier's compiled program
     * ({@code [sharedConnection compiledModelExistsMatchingHash:hexStringIdentifier]}, decompiled {@code _ANEInMemoryModel}, docs/ane-audit.md F2;
     * called as {@code BOOL(*)(id,SEL)} by the public cache probe ane_cache_probe2.m).
     */
    public boolean compiledModelExists() {
        try {
            return (byte) objc.msgSend(BOOL_OF_NOTHING).invokeExact(id, objc.sel("compiledModelExists")) != 0;
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }

    /** {@code -purgeCompiledModel}: drops the daemon's compiled program for this identifier (same decompiles). */
    public void purgeCompiledModel() {
        try {
            objc.msgSend(VOID_OF_NOTHING).invokeExact(id, objc.sel("purgeCompiledModel"));
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }

    /** {@code -compileWithQoS:options:error:}; throws with Apple's message on NO. */
    public void compileWithQoS(int qos, MemorySegment options) {
        objc.callWithError("compileWithQoS:options:error:", err -> (byte) objc.msgSend(QOS_OPTIONS_ERROR)
                .invokeExact(id, objc.sel("compileWithQoS:options:error:"), qos, options, err));
    }

    /** {@code -loadWithQoS:options:error:}. */
    public void loadWithQoS(int qos, MemorySegment options) {
        objc.callWithError("loadWithQoS:options:error:", err -> (byte) objc.msgSend(QOS_OPTIONS_ERROR)
                .invokeExact(id, objc.sel("loadWithQoS:options:error:"), qos, options, err));
    }

    /** {@code -evaluateWithQoS:options:request:error:}. */
    public void evaluateWithQoS(int qos, MemorySegment options, MemorySegment request) {
        objc.callWithError("evaluateWithQoS:options:request:error:", err -> (byte) objc.msgSend(EVALUATE)
                .invokeExact(id, objc.sel("evaluateWithQoS:options:request:error:"), qos, options, request, err));
    }

    /** {@code -unloadWithQoS:error:}. */
    public void unloadWithQoS(int qos) {
        objc.callWithError("unloadWithQoS:error:", err -> (byte) objc.msgSend(QOS_ERROR)
                .invokeExact(id, objc.sel("unloadWithQoS:error:"), qos, err));
    }

    /** {@code -state} (NSUInteger; inmem_basic.m prints it, values undocumented). */
    public long state() {
        try {
            return (long) objc.msgSend(UINTEGER).invokeExact(id, objc.sel("state"));
        } catch (Throwable t) {
            throw ObjC.rethrow(t);
        }
    }
}
