package ane4j.bench;

import ane4j.blas.Blas;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** What a benchmark ran on: CPU model, cores, OS, JDK, BLAS; and the process's memory high-water marks. */
public final class Machine {
    private Machine() {}

    /** CPU model: /proc/cpuinfo "model name" on Linux, sysctl machdep.cpu.brand_string on macOS, else os.arch. */
    public static String cpuModel() { return Blas.cpuModel(); }

    /** The figures that go into every benchmark's JSON. */
    public static Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("cpu", cpuModel());
        m.put("cores", Runtime.getRuntime().availableProcessors());
        m.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
        m.put("jdk", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        m.put("blas", Blas.get().description());
        m.put("maxHeapBytes", Runtime.getRuntime().maxMemory());
        m.put("loadAverage", Math.round(ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage() * 100) / 100.0);
        return m;
    }

    /** Peak resident set size (VmHWM of /proc/self/status) in bytes, or −1 where there is no /proc. */
    public static long peakRssBytes() { return procStatus("VmHWM:"); }

    /** Current resident set size (VmRSS) in bytes, or −1. */
    public static long rssBytes() { return procStatus("VmRSS:"); }

    private static long procStatus(String key) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status")))
                if (line.startsWith(key)) return Long.parseLong(line.substring(key.length()).strip().split("\\s+")[0]) * 1024;
        } catch (IOException | RuntimeException ignored) {
            // no /proc (macOS): unknown
        }
        return -1;
    }

    /** Sum of the peak usage of the heap memory pools since the JVM started (or the last reset). */
    public static long peakHeapBytes() {
        long sum = 0;
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans())
            if (p.getType() == MemoryType.HEAP && p.getPeakUsage() != null) sum += p.getPeakUsage().getUsed();
        return sum;
    }

    /** Resets the heap pools' peak usage (so a benchmark measures its own). */
    public static void resetPeakHeap() {
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) if (p.getType() == MemoryType.HEAP) p.resetPeakUsage();
    }
}
