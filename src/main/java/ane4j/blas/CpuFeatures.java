package ane4j.blas;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;

/**
 * The CPU as the operating system reports it: its model and the instruction-set flags of {@code /proc/cpuinfo}
 * (x86 {@code flags}, arm64 {@code Features}). Linux lists a flag only where the kernel also saves that register
 * state, so a listed {@code avx512f} is usable. Elsewhere (macOS, where Accelerate is used) only the model is known.
 */
record CpuFeatures(String arch, String model, Set<String> flags) {

    /** Instruction-set levels of the x86-64 sgemm kernels, lowest first. */
    enum X86Level { SSE, AVX, AVX2, AVX512 }

    static CpuFeatures current() {
        String arch = System.getProperty("os.arch", "");
        String model = "";
        Set<String> flags = new TreeSet<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                int colon = line.indexOf(':');
                if (colon < 0) continue;
                String key = line.substring(0, colon).strip(), value = line.substring(colon + 1).strip();
                if (model.isEmpty() && (key.equals("model name") || key.equals("Hardware") || key.equals("CPU part"))) model = value;
                if (flags.isEmpty() && (key.equals("flags") || key.equals("Features")))
                    flags.addAll(Arrays.asList(value.toLowerCase(Locale.ROOT).split("\\s+")));
            }
        } catch (IOException | RuntimeException e) {
            // no /proc (macOS) or unreadable: features unknown, nothing is forced
        }
        // macOS: the chip's name, so that an M1's calibration is never reused on an M4 (a shared home, Migration Assistant)
        if (model.isEmpty() && System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("mac")) model = sysctl("machdep.cpu.brand_string");
        return new CpuFeatures(arch, model, Set.copyOf(flags));
    }

    /** {@code sysctl -n name}, or "" if that fails. */
    static String sysctl(String name) {
        try {
            Process p = new ProcessBuilder("sysctl", "-n", name).redirectErrorStream(true).start();
            String s = new String(p.getInputStream().readAllBytes()).strip();
            return p.waitFor() == 0 ? s : "";
        } catch (IOException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    boolean x86() { return arch.equals("amd64") || arch.equals("x86_64"); }

    /** The highest level whose flags are all listed (the set OpenBLAS's own checks test: AVX-512 F, BW, VL, DQ, CD). */
    X86Level x86Level() {
        if (flags.containsAll(Set.of("avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd", "avx2", "fma"))) return X86Level.AVX512;
        if (flags.containsAll(Set.of("avx2", "fma"))) return X86Level.AVX2;
        if (flags.contains("avx")) return X86Level.AVX;
        return X86Level.SSE;
    }

    /** A short stable key for the cache: model, architecture and a hash of the flags. */
    String key() {
        return (arch + " " + model + " " + Integer.toHexString(String.join(" ", new TreeSet<>(flags)).hashCode()))
                .replaceAll("[^A-Za-z0-9._-]+", "_");
    }
}
