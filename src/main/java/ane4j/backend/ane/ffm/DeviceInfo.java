package ane4j.backend.ane.ffm;

import java.lang.foreign.MemorySegment;
import java.util.Locale;

/**
 * What the ANE reports about itself, and the host OS.
 *
 * @param aneSubType {@code +[_ANEDeviceInfo aneSubType]}'s description, e.g. "h16g" (M4, maderix README)
 * @param chipFamily the Apple silicon family for that subtype, e.g. "M4"
 * @param osVersion  {@code os.version} of the JVM (the macOS version, e.g. "15.3")
 */
public record DeviceInfo(String aneSubType, String chipFamily, String osVersion) {

    /** Asks the framework; needs the ANE runtime to be loaded. */
    public static DeviceInfo read() {
        ObjC objc = ObjC.get();
        String subType;
        try (AutoreleasePool pool = objc.pool()) {
            // class method; returns an object whose description is the family (docs/ane-facts.md §2.2), +0
            MemorySegment value = objc.sendId(objc.cls("_ANEDeviceInfo"), "aneSubType");
            subType = Foundation.toJava(value);
        }
        return new DeviceInfo(subType, chipFamily(subType), System.getProperty("os.version"));
    }

    /**
     * The chip family of an ANE subtype: h13 M1, h14 M2, h15 M3, h16 M4, h17 M5 (docs/anchors.md §1.1; the
     * M5's name is in conflict there: H16 per maderix training/m5result.md, h17 on M5 Max per PR #50). A trailing
     * "g" marks the Pro/Max/Ultra variants.
     */
    public static String chipFamily(String aneSubType) {
        if (aneSubType == null || aneSubType.isBlank()) return "unknown";
        String s = aneSubType.toLowerCase(Locale.ROOT);
        if (s.startsWith("h13")) return "M1";
        if (s.startsWith("h14")) return "M2";
        if (s.startsWith("h15")) return "M3";
        if (s.startsWith("h16")) return "M4";
        if (s.startsWith("h17")) return "M5";
        return "unknown (" + aneSubType + ")";
    }
}
