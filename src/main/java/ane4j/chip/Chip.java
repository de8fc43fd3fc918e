package ane4j.chip;

import java.util.Locale;
import java.util.Optional;

/**
 * Apple silicon families as their ANE compiler targets group them: M1 = H13 (A13 tier), M2 = H14 (A14), M3 = H15 (A15),
 * M4 = H16 and M5 = H17 (both the A16 tier). The mapping is ANEForge's ({@code aneforge/_targets.py}, {@code _ARCH_FAMILY}
 * and {@code _BRAND_FAMILY}: M1 and M5 measured through their compiled bundle names, M2–M4 by Apple's H(generation+12)
 * ladder); the sub-type strings are what {@code +[_ANEDeviceInfo aneSubType]} returns ("h16g" on M4, maderix README;
 * "h17" on M5 Max, maderix PR #50; maderix {@code training/m5result.md} reports H16 on an M5, which lands in the same
 * A16 tier, so the rules do not depend on that conflict).
 */
public enum Chip {
    M1("h13"), M2("h14"), M3("h15"), M4("h16"), M5("h17");

    private final String subTypePrefix;

    Chip(String subTypePrefix) { this.subTypePrefix = subTypePrefix; }

    /** The ANE sub-type prefix, e.g. {@code h15} for M3. */
    public String subTypePrefix() { return subTypePrefix; }

    /** M4 and M5: ANEForge's A16 tier (65536-wide axes, no slice clamp). */
    public boolean isA16Tier() { return this == M4 || this == M5; }

    /** The family of an {@code aneSubType} string ("h13", "h13g", "h16g", "h17s" …); empty when unknown or null. */
    public static Optional<Chip> fromSubType(String aneSubType) {
        if (aneSubType == null) return Optional.empty();
        String s = aneSubType.strip().toLowerCase(Locale.ROOT);
        for (Chip c : values()) if (s.startsWith(c.subTypePrefix)) return Optional.of(c);
        return Optional.empty();
    }

    /** {@code m1}…{@code m5} (any case), or a sub-type such as {@code h15g}. */
    public static Chip parse(String text) {
        String t = text == null ? "" : text.strip().toUpperCase(Locale.ROOT);
        for (Chip c : values()) if (c.name().equals(t)) return c;
        return fromSubType(text).orElseThrow(() -> new IllegalArgumentException(
                "[chip] unknown chip '" + text + "'; use m1, m2, m3, m4 or m5 (or an ANE sub-type such as h15g)"));
    }

    @Override public String toString() { return name(); }
}
