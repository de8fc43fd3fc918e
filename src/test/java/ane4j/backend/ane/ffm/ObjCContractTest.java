package ane4j.backend.ane.ffm;

import ane4j.backend.AneException;

import ane4j.backend.ane.MilDialect;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static ane4j.backend.ane.ffm.ObjC.ID;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.*;

/** The runtime layer against the fake: handles, Foundation values, pools, ownership, IOSurfaces, device info. */
class ObjCContractTest {
    FakeObjc fake;
    ObjC objc;

    @BeforeEach
    void setUp() {
        fake = FakeObjc.get();
        objc = ObjC.get();
    }

    @AfterEach
    void noViolations() {
        assertEquals(List.of(), fake.errors(), "contract violations seen by the fake");
        assertEquals(0, fake.poolDepth(), "every pool popped");
    }

    private List<FakeObjc.Entry> sends(String selector) {
        return fake.log().stream().filter(e -> e.kind().equals("send") && e.selector().equals(selector)).toList();
    }

    @Test
    void msgSendHandlesAreCachedPerExactPrototype() {
        FunctionDescriptor a = FunctionDescriptor.of(ID, ID, ID, JAVA_INT);
        FunctionDescriptor b = FunctionDescriptor.of(JAVA_BYTE, ID, ID, JAVA_INT, ID, ID);
        assertSame(objc.msgSend(a), objc.msgSend(FunctionDescriptor.of(ID, ID, ID, JAVA_INT)));
        assertNotSame(objc.msgSend(a), objc.msgSend(b));
        assertEquals(a.toMethodType(), objc.msgSend(a).type());
        assertFalse(objc.msgSend(b).isVarargsCollector());
    }

    @Test
    void classesAndSelectorsAreCachedAndMissingClassIsNamed() {
        MemorySegment cls = objc.cls("_ANEInMemoryModel");
        MemorySegment sel = objc.sel("compileWithQoS:options:error:");
        fake.reset();
        assertEquals(cls, objc.cls("_ANEInMemoryModel"));
        assertEquals(sel, objc.sel("compileWithQoS:options:error:"));
        assertEquals(List.of(), fake.log(), "cached: no second objc_getClass or sel_registerName");
        AneException e = assertThrows(AneException.class, () -> objc.cls("_ANENoSuchClass"));
        assertTrue(e.getMessage().startsWith("[objc_getClass] class _ANENoSuchClass not found"), e.getMessage());
    }

    @Test
    void foundationValuesRoundTripWithTheirExactConstructors() {
        try (AutoreleasePool pool = objc.pool()) {
            assertEquals("héllo wörld", Foundation.toJava(Foundation.string("héllo wörld")));
            Foundation.data(new byte[] {1, 2, 3});
            Foundation.number(-7);
            Foundation.unsignedNumber(1L << 40);
            Map<MemorySegment, MemorySegment> dict = new LinkedHashMap<>();
            dict.put(Foundation.string("offset"), Foundation.number(0));
            Foundation.dictionary(dict);
            Foundation.array(List.of(Foundation.number(4), Foundation.number(5)));
            assertTrue(fake.liveObjects() > 0);
        }
        assertEquals(List.of("char*(\"héllo wörld\")"), sends("stringWithUTF8String:").get(0).args());
        assertEquals("NSData(len=3)", sends("dataWithBytes:length:").get(0).result());
        assertEquals(List.of("ptr", "u64:3"), sends("dataWithBytes:length:").get(0).args());
        assertEquals("NSNumber(-7)", sends("numberWithInt:").get(0).result());
        assertEquals("NSNumber(1099511627776)", sends("numberWithUnsignedLongLong:").get(0).result());
        assertEquals("NSDictionary{NSString(\"offset\")=NSNumber(0)}", sends("dictionaryWithObjects:forKeys:count:").get(0).result());
        assertEquals("NSArray[NSNumber(4),NSNumber(5)]", sends("arrayWithObjects:count:").get(0).result());
        assertEquals(0, fake.liveObjects(), "all +0 objects released by the pool: " + fake.liveDescription());
    }

    @Test
    void retainKeepsAnObjectPastItsPoolAndReleaseFreesIt() {
        MemorySegment kept;
        try (AutoreleasePool pool = objc.pool()) {
            kept = objc.retain(Foundation.string("kept"));
            Foundation.string("dropped");
        }
        assertEquals(1, fake.liveObjects(), fake.liveDescription());
        try (AutoreleasePool pool = objc.pool()) {
            assertEquals("kept", Foundation.toJava(kept));
        }
        objc.release(kept);
        assertEquals(0, fake.liveObjects(), fake.liveDescription());
    }

    @Test
    void callWithErrorTurnsNoIntoTheNSErrorText() {
        try (AutoreleasePool pool = objc.pool()) {
            objc.callWithError("fine:error:", err -> (byte) 1);
            objc.callWithError("alsoFine:error:", err -> (byte) 2);   // any non-zero BOOL is YES
            fake.setFailCompile("described failure");
            AneInMemoryModel model = AneInMemoryModel.inMemoryModelWithDescriptor(
                    AneInMemoryModelDescriptor.modelWithMILText(Foundation.data(new byte[] {'m'}), Foundation.emptyDictionary()));
            AneException e = assertThrows(AneException.class, () -> model.compileWithQoS(21, Foundation.emptyDictionary()));
            assertEquals("[compileWithQoS:options:error:] described failure", e.getMessage());
            AneException without = assertThrows(AneException.class, () -> objc.callWithError("y:error:", err -> (byte) 0));
            assertEquals("[y:error:] failed without an NSError", without.getMessage());
        }
        FakeObjc.Entry compile = sends("compileWithQoS:options:error:").get(0);
        assertEquals(List.of("u32:21", "NSDictionary{}", "NSError**"), compile.args());
        assertEquals("NO", compile.result());
        assertEquals(0, fake.liveObjects(), "the NSError and the model were autoreleased: " + fake.liveDescription());
    }

    @Test
    void ioSurfaceIsAOneRowByteBufferWithExactlyTheMaderixProperties() {
        MemorySegment surface;
        try (AutoreleasePool pool = objc.pool()) {
            surface = IOSurfaces.create(1000);
        }
        FakeObjc.Entry create = fake.log().stream().filter(e -> e.kind().equals("IOSurfaceCreate")).findFirst().orElseThrow();
        assertEquals(List.of("NSDictionary{NSString(\"IOSurfaceWidth\")=NSNumber(1000),NSString(\"IOSurfaceHeight\")=NSNumber(1),"
                + "NSString(\"IOSurfaceBytesPerElement\")=NSNumber(1),NSString(\"IOSurfaceBytesPerRow\")=NSNumber(1000),"
                + "NSString(\"IOSurfaceAllocSize\")=NSNumber(1000),NSString(\"IOSurfacePixelFormat\")=NSNumber(0)}"), create.args());
        assertEquals(1000, IOSurfaces.allocSize(surface));
        IOSurfaces.lock(surface, IOSurfaces.LOCK_READ_WRITE);
        MemorySegment base = IOSurfaces.baseAddress(surface);
        assertEquals(1000, base.byteSize());
        base.set(JAVA_INT, 996, 0x12345678);
        IOSurfaces.unlock(surface, IOSurfaces.LOCK_READ_WRITE);
        IOSurfaces.lock(surface, IOSurfaces.LOCK_READ_ONLY);
        assertEquals(0x12345678, IOSurfaces.baseAddress(surface).get(JAVA_INT, 996));
        IOSurfaces.unlock(surface, IOSurfaces.LOCK_READ_ONLY);
        List<String> locks = fake.log().stream().filter(e -> e.kind().equals("IOSurfaceLock") || e.kind().equals("IOSurfaceUnlock"))
                .map(e -> e.kind() + " " + e.args()).toList();
        assertEquals(List.of("IOSurfaceLock [u32:0]", "IOSurfaceUnlock [u32:0]", "IOSurfaceLock [u32:1]", "IOSurfaceUnlock [u32:1]"), locks);
        assertEquals(1, fake.liveObjects(), "the +1 surface outlives the pool");
        IOSurfaces.release(surface);
        assertEquals(0, fake.liveObjects(), fake.liveDescription());
    }

    @Test
    void deviceInfoMapsTheSubtypeToChipAndDialect() {
        String saved = System.clearProperty(MilDialect.PROPERTY);
        try {
            fake.setAneSubType("h13g");
            DeviceInfo m1 = DeviceInfo.read();
            assertEquals(new DeviceInfo("h13g", "M1", System.getProperty("os.version")), m1);
            assertEquals(MilDialect.PROGRAM_1_3_IOS18, MilDialect.forSubType(m1.aneSubType()), "ios18 first, ios16 only after a failed compile");
            fake.setAneSubType("h16g");
            assertEquals("M4", DeviceInfo.read().chipFamily());
            assertEquals(MilDialect.PROGRAM_1_3_IOS18, MilDialect.forSubType(DeviceInfo.read().aneSubType()));
            System.setProperty(MilDialect.PROPERTY, "1.0");
            assertEquals(MilDialect.PROGRAM_1_0_IOS16, MilDialect.forSubType(DeviceInfo.read().aneSubType()));
        } finally {
            if (saved == null) System.clearProperty(MilDialect.PROPERTY); else System.setProperty(MilDialect.PROPERTY, saved);
        }
        assertEquals("M2", DeviceInfo.chipFamily("h14"));
        assertEquals("M3", DeviceInfo.chipFamily("H15G"));
        assertEquals("M5", DeviceInfo.chipFamily("h17"));
        assertEquals("unknown (h99)", DeviceInfo.chipFamily("h99"));
        assertEquals(0, fake.liveObjects(), fake.liveDescription());
    }
}
