package ane4j.blas;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A process that holds the calibration lock and never lets go (stopped with Ctrl-Z mid-measurement, in a debugger)
 * does not hold every other start on the machine: after {@link BlasCache#LOCK_WAIT} a process measures on its own.
 * The holder here is another process with a POSIX lock on the same lock file (Python's fcntl.lockf, as the JVM's).
 */
@Tag("process")
class CalibrationLockWaitTest {
    @TempDir Path dir;

    @Test
    void aLockHeldForeverDelaysADecisionOnlyByTheWait() throws Exception {
        Path cache = dir.resolve("blas.properties"), lock = dir.resolve("blas.properties.lock");
        Process holder;
        try {
            holder = new ProcessBuilder("python3", "-c", "import fcntl, sys, time\nf = open(sys.argv[1], 'w')\nfcntl.lockf(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)",
                    lock.toString()).redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
            assumeTrue(false, "no python3 to hold the lock: " + e.getMessage());
            return;
        }
        Duration before = BlasCache.LOCK_WAIT;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8))) {
            String first = r.readLine();
            assumeTrue("locked".equals(first), "python3 could not hold the lock: " + first);
            BlasCache.LOCK_WAIT = Duration.ofMillis(800);
            long t0 = System.nanoTime();
            BlasCache.Decision d = new BlasCache(cache).decide("k", v -> true, () -> "measured here");
            double s = (System.nanoTime() - t0) / 1e9;
            assertEquals("measured here", d.value());
            assertTrue(d.measured());
            assertTrue(s >= 0.7 && s < 20, s + " s: it waited for the lock, then went on");
        } finally {
            BlasCache.LOCK_WAIT = before;
            holder.destroyForcibly();
        }
    }
}
