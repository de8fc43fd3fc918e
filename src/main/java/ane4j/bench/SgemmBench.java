package ane4j.bench;

import ane4j.blas.Blas;
import ane4j.blas.Layout;
import ane4j.blas.Sgemm;
import ane4j.blas.Transpose;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Random;

/**
 * Square row-major sgemm GFLOPS (2·n³ / median time) for OpenBLAS via FFM, OpenBLAS via FFM on {@code float[]}, and the
 * pure-Java fallback, next to numpy's {@code np.matmul} (same machine, same run, same sizes, timed in a
 * {@code /usr/bin/python3 -c} child per size so that both see the same load). A second table times small products on
 * {@code float[]} through the critical (heap-access) downcall against copying to native memory.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp target/classes ane4j.bench.SgemmBench
 *      [--sizes 256,512,1024,2048,4096] [--reps 7] [--java-max 4096] [--scalar] [--python /usr/bin/python3]
 * </pre>
 */
public final class SgemmBench {
    private SgemmBench() {}

    static final String NUMPY = """
            import sys, time, numpy as np
            n, reps = int(sys.argv[1]), int(sys.argv[2])
            rng = np.random.default_rng(0)
            a = rng.random((n, n), dtype=np.float32); b = rng.random((n, n), dtype=np.float32)
            c = np.empty((n, n), dtype=np.float32)
            np.matmul(a, b, out=c)
            ts = []
            for _ in range(reps):
                t = time.perf_counter(); np.matmul(a, b, out=c); ts.append(time.perf_counter() - t)
            ts.sort()
            print(ts[len(ts) // 2])
            """;

    public static void main(String[] args) throws Exception {
        int[] sizes = {256, 512, 1024, 2048, 4096};
        int maxReps = 7, javaMax = 4096;
        boolean scalar = false;
        String python = "/usr/bin/python3";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--sizes" -> sizes = Arrays.stream(args[++i].split(",")).mapToInt(Integer::parseInt).toArray();
                case "--reps" -> maxReps = Integer.parseInt(args[++i]);
                case "--java-max" -> javaMax = Integer.parseInt(args[++i]);
                case "--scalar" -> scalar = true;
                case "--python" -> python = args[++i];
                default -> {
                    System.err.println("[bench] unknown argument " + args[i]
                            + "; use --sizes a,b,c --reps N --java-max N --scalar --python PATH");
                    System.exit(2);
                }
            }
        }
        Optional<Sgemm> openBlas = Blas.openBlas();
        Sgemm java = Blas.java();
        System.out.println("native : " + openBlas.map(Sgemm::description).orElse("none"));
        System.out.println("java   : " + java.description());
        System.out.println("env    : OPENBLAS_CORETYPE=" + System.getenv("OPENBLAS_CORETYPE")
                + " OPENBLAS_NUM_THREADS=" + System.getenv("OPENBLAS_NUM_THREADS")
                + " cores=" + Runtime.getRuntime().availableProcessors());
        System.out.println();
        System.out.printf(Locale.ROOT, "%6s %12s %12s %7s %12s %7s %12s %7s%s%n", "n", "numpy GF/s", "ffm GF/s",
                "ffm/np", "ffm[] GF/s", "[]/np", "java GF/s", "java/np", scalar ? "  scalar GF/s" : "");
        for (int n : sizes) {
            int reps = repsFor(n, maxReps);
            double np = gflops(n, numpy(python, n, reps));
            double ffm = openBlas.map(s -> gflops(n, timeSegments(s, n, reps))).orElse(Double.NaN);
            double ffmHeap = openBlas.map(s -> gflops(n, timeArrays(s, n, reps))).orElse(Double.NaN);
            double jv = n <= javaMax ? gflops(n, timeSegments(java, n, Math.min(reps, 3))) : Double.NaN;
            String sc = scalar && n <= javaMax
                    ? String.format(Locale.ROOT, " %12.1f", gflops(n, timeSegments(Blas.javaScalar(), n, Math.min(reps, 3)))) : "";
            System.out.printf(Locale.ROOT, "%6d %12.1f %12.1f %6.0f%% %12.1f %6.0f%% %12.1f %6.0f%%%s%n",
                    n, np, ffm, 100 * ffm / np, ffmHeap, 100 * ffmHeap / np, jv, 100 * jv / np, sc);
        }
        if (openBlas.isPresent()) smallHeapTable(openBlas.get());
    }

    /** Repetitions: fewer for big sizes so that the run stays within a few minutes. */
    static int repsFor(int n, int maxReps) {
        return n >= 4096 ? Math.min(maxReps, 3) : n >= 2048 ? Math.min(maxReps, 5) : maxReps;
    }

    static double gflops(int n, double seconds) { return 2.0 * n * n * n / seconds / 1e9; }

    /** Median seconds of {@code reps} calls on native segments, after one warm-up call. */
    static double timeSegments(Sgemm s, int n, int reps) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = random(arena, n * n, 1), b = random(arena, n * n, 2), c = arena.allocate(4L * n * n, 64);
            Runnable call = () -> s.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, n, n, n, 1f, a, 0, n, b, 0, n, 0f, c, 0, n);
            return median(call, reps);
        }
    }

    /** Median seconds on {@code float[]} operands (the heap path: critical downcall or copy, see NativeSgemm). */
    static double timeArrays(Sgemm s, int n, int reps) {
        float[] a = randomArray(n * n, 1), b = randomArray(n * n, 2), c = new float[n * n];
        return median(() -> s.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, n, n, n, 1f, a, 0, n, b, 0, n, 0f, c, 0, n), reps);
    }

    /** Small products on float[]: the critical downcall (what Sgemm does here) against an explicit copy. */
    static void smallHeapTable(Sgemm s) {
        System.out.println();
        System.out.printf(Locale.ROOT, "%6s %14s %14s %14s%n", "n", "native µs", "float[] µs", "copy µs");
        for (int n : new int[]{8, 16, 32, 64, 128}) {
            int reps = 2001;
            float[] a = randomArray(n * n, 1), b = randomArray(n * n, 2), c = new float[n * n];
            double heap = median(() -> s.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, n, n, n, 1f, a, 0, n, b, 0, n, 0f, c, 0, n), reps);
            double copy = median(() -> {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment na = arena.allocateFrom(ValueLayout.JAVA_FLOAT, a), nb = arena.allocateFrom(ValueLayout.JAVA_FLOAT, b);
                    MemorySegment nc = arena.allocate(4L * n * n, 64);
                    s.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, n, n, n, 1f, na, 0, n, nb, 0, n, 0f, nc, 0, n);
                    MemorySegment.copy(nc, ValueLayout.JAVA_FLOAT, 0, c, 0, n * n);
                }
            }, reps);
            double nat;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment na = random(arena, n * n, 1), nb = random(arena, n * n, 2), nc = arena.allocate(4L * n * n, 64);
                nat = median(() -> s.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, n, n, n, 1f, na, 0, n, nb, 0, n, 0f, nc, 0, n), reps);
            }
            System.out.printf(Locale.ROOT, "%6d %14.2f %14.2f %14.2f%n", n, nat * 1e6, heap * 1e6, copy * 1e6);
        }
    }

    static double median(Runnable call, int reps) {
        // warm-up: at least 2 calls and 1 s, so that C2 has compiled the Java kernels and the tiny sizes
        long warmEnd = System.nanoTime() + 1_000_000_000L;
        for (int i = 0; i < 2 || System.nanoTime() < warmEnd; i++) call.run();
        double[] t = new double[reps];
        for (int i = 0; i < reps; i++) {
            long t0 = System.nanoTime();
            call.run();
            t[i] = (System.nanoTime() - t0) / 1e9;
        }
        Arrays.sort(t);
        return t[reps / 2];
    }

    /** Runs numpy's matmul in a child process and returns its median seconds. */
    static double numpy(String python, int n, int reps) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(python, "-c", NUMPY, String.valueOf(n), String.valueOf(reps)));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (p.waitFor() != 0) throw new IllegalStateException("[bench] numpy failed (" + python + "): " + out);
        return Double.parseDouble(out);
    }

    static MemorySegment random(Arena arena, int count, long seed) {
        return arena.allocateFrom(ValueLayout.JAVA_FLOAT, randomArray(count, seed));
    }

    static float[] randomArray(int count, long seed) {
        Random r = new Random(seed);
        float[] x = new float[count];
        for (int i = 0; i < count; i++) x[i] = r.nextFloat() * 2 - 1;
        return x;
    }
}
