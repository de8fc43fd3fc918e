package ane4j.blas;

import org.junit.jupiter.api.Test;

import java.io.File;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class PeakResidentMemoryTest {

    /** Run in a small child JVM (whose peak is its current size): the peak before and after touching 256 MB off-heap. */
    public static void main(String[] args) {
        long before = PeakResidentMemory.bytes();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(256L << 20, 4096);
            s.fill((byte) 1);
            System.out.println(before + " " + PeakResidentMemory.bytes());
        }
    }

    @Test
    void getrusageSeesAnAllocationTouched() throws Exception {
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        // through a shell that forks (`; exit $?` keeps it from exec'ing in place): Linux carries the peak of the process
        // that calls execve into the new program's ru_maxrss, and this JVM's children are spawned from its own image
        Process p = new ProcessBuilder("/bin/sh", "-c", "\"$0\" \"$@\"; exit $?", java, "-Xmx64m", "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                PeakResidentMemoryTest.class.getName()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        String[] v = out.lines().reduce((a, b) -> b).orElseThrow().split(" ");
        long before = Long.parseLong(v[0]), after = Long.parseLong(v[1]);
        assertTrue(before > 8L << 20, "a JVM's peak RSS is tens of MB at least: " + before);
        assertTrue(after >= before + (200L << 20), before + " -> " + after + " after touching 256 MB");
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
