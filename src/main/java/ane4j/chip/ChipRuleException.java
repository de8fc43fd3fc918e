package ane4j.chip;

import ane4j.mil.MilException;

import java.util.List;

/** A program breaks an {@link Severity#ERROR} rule of the chip it is compiled for; the message is one line. */
public final class ChipRuleException extends MilException {
    private final List<Violation> errors;

    ChipRuleException(String message, List<Violation> errors) {
        super(message);
        this.errors = List.copyOf(errors);
    }

    /** Every error-severity violation, first one first. */
    public List<Violation> errors() { return errors; }
}
