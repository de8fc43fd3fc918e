package ane4j.mil;

/** MIL opsets (iOS versions). An op belongs to the opset that introduced it (coremltools {@code ops/defs/iOS*}). */
public enum Opset {
    IOS15, IOS16, IOS17, IOS18;

    public String milName() { return name().toLowerCase(java.util.Locale.ROOT); }

    public static Opset fromMilName(String s) {
        for (Opset o : values()) if (o.milName().equals(s)) return o;
        return null;
    }
}
