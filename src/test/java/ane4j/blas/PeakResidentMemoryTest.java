package ane4j.blas;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class PeakResidentMemoryTest {

    @Test
    void getrusageSeesAnAllocationTouched() {
        long before = PeakResidentMemory.bytes();
        assertTrue(before > 16L << 20, "a JVM's peak RSS is tens of MB at least: " + before);
        byte[] touched = new byte[256 << 20];
        for (int i = 0; i < touched.length; i += 4096) touched[i] = 1;
        long after = PeakResidentMemory.bytes();
        assertTrue(after >= before + (200L << 20), before + " -> " + after + " after touching 256 MB");
        assertTrue(touched[4096] == 1);
    }

    /** Where /proc exists, the two sources agree (both are the kernel's hiwater_rss, KiB-exact). */
    @Test
    void agreesWithProcWhereThereIsProc() throws Exception {
        Path status = Path.of("/proc/self/status");
        assumeTrue(Files.isReadable(status), "no /proc (macOS): nothing to compare with");
        long proc = Files.readAllLines(status).stream().filter(l -> l.startsWith("VmHWM:"))
                .mapToLong(l -> Long.parseLong(l.substring(6).strip().split("\\s+")[0]) * 1024).findFirst().orElseThrow();
        long rusage = PeakResidentMemory.bytes();
        assertTrue(Math.abs(rusage - proc) <= (8L << 20), "getrusage " + rusage + " vs VmHWM " + proc);
    }
}
