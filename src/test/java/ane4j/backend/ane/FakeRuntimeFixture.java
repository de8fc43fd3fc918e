package ane4j.backend.ane;

import ane4j.backend.ane.ffm.FakeObjc;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

/**
 * Base of the tests that run the ANE path on the fake runtime with the reference interpreter as its evaluate
 * ({@link FakeRuntime#withReferenceEvaluate}): before each test, the fake compiles into the test's {@link #tmp}.
 * Subclasses close {@link #ane} and check the fake in their own {@code @AfterEach}.
 */
abstract class FakeRuntimeFixture {
    FakeObjc fake;
    RefOnFake ane;
    @TempDir Path tmp;

    @BeforeEach
    void installFake() {
        ane = FakeRuntime.withReferenceEvaluate(tmp);
        fake = ane.fake();
    }
}
