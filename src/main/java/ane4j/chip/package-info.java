/**
 * The known ANE constraints per Apple silicon family, as code: {@link ane4j.chip.Rule} is the table (limits for M1–M5,
 * severity per chip, the source each was measured in), {@link ane4j.chip.Chip} the families (from an ANE sub-type such as
 * {@code h16g}), {@link ane4j.chip.ChipRules} the check of a MIL program ({@link ane4j.chip.Violation}s with line:col
 * when the program came from text; {@link ane4j.chip.ChipRules#requireCompatible} throws the one-line
 * {@link ane4j.chip.ChipRuleException} both backends use). Used by {@code ane4j mil check --chip}, the ANE backend
 * before every compile, the reference backend's {@code -Dane4j.ref.chip} emulation and {@code doctor}. Depends on
 * {@code mil} only. Nothing in it has been run on Apple hardware by this project.
 */
package ane4j.chip;
