package ane4j.backend.ane;

/** {@link TrainingStagingOnFakeTest} under the fake's macOS 27 profile (fakeobjc.c "OS profiles", H1-H4). */
class TrainingStagingOnFakeMacos27Test extends TrainingStagingOnFakeTest {
    @Override int macos() { return 27; }
}
