package ane4j.backend.ane;

import ane4j.backend.ane.ffm.FakeObjc;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The fake runtime as the ANE tests set it up: {@link FakeObjc} built, loaded and compiling into a test's directory,
 * optionally with {@link RefOnFake} as its evaluate, and the checks each test ends with.
 */
final class FakeRuntime {
    private FakeRuntime() {}

    /** The fake, its compiles writing {@code <dir>/<hex>/}; skips the test without a C compiler. */
    static FakeObjc compilingInto(Path dir) {
        FakeObjc fake = FakeObjc.get();
        fake.setTmpdir(dir);
        return fake;
    }

    /** The fake compiling into {@code dir}, its evaluate running the reference interpreter on what it compiled. */
    static RefOnFake withReferenceEvaluate(Path dir) {
        return new RefOnFake(compilingInto(dir), dir);
    }

    /** The evaluate hook did not throw and the fake saw no contract violation. */
    static void assertNoViolations(FakeObjc fake) {
        assertNull(fake.hookFailure(), () -> "evaluate hook failed: " + fake.hookFailure());
        assertEquals(List.of(), fake.errors(), "contract violations seen by the fake");
    }

    /** {@link #assertNoViolations}, and every autorelease pool was popped. */
    static void assertNoViolationsAndPoolsPopped(FakeObjc fake) {
        assertNoViolations(fake);
        assertEquals(0, fake.poolDepth(), "every autorelease pool popped");
    }
}
