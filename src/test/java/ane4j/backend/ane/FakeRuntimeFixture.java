package ane4j.backend.ane;

import ane4j.backend.MacOs;
import ane4j.backend.ane.ffm.FakeObjc;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

/**
 * Base of the tests that run the ANE path on the fake runtime with the reference interpreter as its evaluate
 * ({@link FakeRuntime#withReferenceEvaluate}): before each test, the fake compiles into the test's {@link #tmp}.
 * Subclasses close {@link #ane} and check the fake in their own {@code @AfterEach}.
 * <p>
 * {@link #macos()} picks the OS profile: the fake's rules (fakeobjc.c, "OS profiles") and the release ane4j believes it
 * runs on ({@value MacOs#PROPERTY}). 26 by default; the {@code *Macos27Test} subclasses run the same tests under 27.
 */
abstract class FakeRuntimeFixture {
    FakeObjc fake;
    RefOnFake ane;
    @TempDir Path tmp;

    /** The macOS major release the fake and ane4j emulate. */
    int macos() { return 26; }

    @BeforeEach
    void installFake() {
        ane = FakeRuntime.withReferenceEvaluate(tmp);
        fake = ane.fake();
        fake.setMacos(macos());
        System.setProperty(MacOs.PROPERTY, macos() + ".0");
    }

    @AfterEach
    void forgetOs() { System.clearProperty(MacOs.PROPERTY); }
}
