package ane4j.bench;

import ane4j.blas.Blas;
import ane4j.blas.PeakResidentMemory;
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

    /**
     * The Python whose numpy/PyTorch the benchmarks compare with: {@code ANE4J_PYTHON}, else Debian's
     * {@code /usr/bin/python3} on Linux (where apt puts numpy and torch, whatever python3 PATH finds first), else
     * {@code python3} from PATH (macOS: Homebrew's or python.org's, not the Command Line Tools' shim).
     */
    public static String python() {
        String env = System.getenv("ANE4J_PYTHON");
        if (env != null && !env.isBlank()) return env;
        boolean mac = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("mac");
        return !mac && Files.isExecutable(Path.of("/usr/bin/python3")) ? "/usr/bin/python3" : "python3";
    }

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

    /** Peak resident set size in bytes: VmHWM of /proc/self/status, else getrusage's ru_maxrss (macOS); −1 if neither. */
    public static long peakRssBytes() {
        long proc = procStatus("VmHWM:");
        return proc >= 0 ? proc : PeakResidentMemory.bytes();
    }

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
