package ane4j.backend.ane;

/** {@link LoraOnFakeTest} under the fake's macOS 27 profile (fakeobjc.c "OS profiles", H1-H4). */
class LoraOnFakeMacos27Test extends LoraOnFakeTest {
    @Override int macos() { return 27; }
}
