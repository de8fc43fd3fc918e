package ane4j.backend.ane;

import ane4j.backend.ane.ffm.FakeObjc;
import java.nio.file.Path;

/**
 * A {@code -javaagent} for worker JVMs in tests: before {@code WorkerMain} starts, it installs the fake Objective-C
 * runtime (its library override), makes the fake's evaluate run the reference interpreter ({@link RefOnFake}) and,
 * when {@value #THROW_PROPERTY} is set, makes a framework selector raise an Objective-C exception a given number of times.
 */
public final class FakeWorkerAgent {
    /** Where the fake's {@code NSTemporaryDirectory()} points (the compiled model folders). */
    public static final String TMP_PROPERTY = "ane4j.test.fakeTmp";
    /** {@code selector|name|reason|times}: the next {@code times} sends of {@code selector} raise. */
    public static final String THROW_PROPERTY = "ane4j.test.fakeThrow";

    private static RefOnFake ref;   // lives as long as the worker

    private FakeWorkerAgent() {}

    public static void premain(String args) {
        ref = FakeRuntime.withReferenceEvaluate(Path.of(System.getProperty(TMP_PROPERTY)));
        FakeObjc fake = ref.fake();
        String t = System.getProperty(THROW_PROPERTY);
        if (t != null) {
            String[] f = t.split("\\|", -1);
            fake.setThrow(f[0], f[1], f[2]);
            fake.setThrowTimes(Integer.parseInt(f[3]));
        }
    }
}
