package ane4j.mil;

/** Reads MIL text in either dialect (being written; see the parser task). */
public final class MilParser {
    private MilParser() {}

    public static Program parse(String text) {
        throw new UnsupportedOperationException("[mil] the MIL parser is not written yet");
    }
}
