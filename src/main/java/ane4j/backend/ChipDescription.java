package ane4j.backend;

import ane4j.chip.Chip;

/**
 * The chip a backend runs on (the ANE) or emulates (the reference backend's {@code -Dane4j.ref.chip}), as
 * {@link Backend#describeChip()} reports it.
 *
 * @param family the family whose chip rules and fp16 cliffs apply (the loss-scale cap follows it); null: none or unknown
 * @param text   the line run.txt and run.json record, e.g. {@code M4 (h16g)} or {@code M3 (emulated by the reference backend)}
 */
public record ChipDescription(Chip family, String text) {
    public ChipDescription {
        if (text == null) throw new IllegalArgumentException("[backend] a chip description needs its text");
    }

    /** A backend that says nothing of its chip (a test double, the marker for "no ANE"). */
    public static final ChipDescription UNKNOWN = new ChipDescription(null, "unknown");
}
