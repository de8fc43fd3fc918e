package ane4j.blas;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The process's peak resident set size from the C library's {@code getrusage(RUSAGE_SELF)}: the figure benchmarks
 * report where there is no {@code /proc} (macOS). Here because {@code blas} is, with {@code backend.ane.ffm}, the one
 * package that binds C (it already calls libc's {@code setenv}).
 *
 * <p>{@code struct rusage} on LP64 Linux and macOS: two {@code struct timeval} of 16 bytes, then {@code long ru_maxrss}
 * at offset 32, in KiB on Linux and in bytes on macOS (getrusage(2) of each; 144 bytes in all).
 */
@SuppressWarnings("restricted")
public final class PeakResidentMemory {
    private PeakResidentMemory() {}

    private static final int RUSAGE_SELF = 0;
    private static final long RU_MAXRSS_OFFSET = 32, RUSAGE_SIZE = 144;

    /** Peak RSS in bytes, or −1 where getrusage is not there or fails. */
    public static long bytes() {
        try (Arena arena = Arena.ofConfined()) {
            Linker linker = Linker.nativeLinker();
            MemorySegment fn = linker.defaultLookup().find("getrusage").orElse(null);
            if (fn == null) return -1;
            MemorySegment usage = arena.allocate(RUSAGE_SIZE, 8);
            int rc = (int) linker.downcallHandle(fn, FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS)).invokeExact(RUSAGE_SELF, usage);
            if (rc != 0) return -1;
            long maxrss = usage.get(JAVA_LONG, RU_MAXRSS_OFFSET);
            boolean mac = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("mac");
            return mac ? maxrss : maxrss * 1024;
        } catch (Throwable t) {
            return -1;
        }
    }
}
