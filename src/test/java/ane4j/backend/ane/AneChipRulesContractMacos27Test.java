package ane4j.backend.ane;

/** {@link AneChipRulesContractTest} under the fake's macOS 27 profile (fakeobjc.c "OS profiles", H1-H4). */
class AneChipRulesContractMacos27Test extends AneChipRulesContractTest {
    @Override int macos() { return 27; }
}
