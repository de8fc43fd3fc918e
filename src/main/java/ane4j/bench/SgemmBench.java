package ane4j.bench;

import ane4j.programs.AcceptancePrograms;
import ane4j.model.Json;
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
 * pure-Java fallback, next to numpy's {@code np.matmul} (same machine, same run, same sizes), timed in a
 * {@code python3 -c} ({@link Machine#python()}) child that runs one product per request, so that the contestants alternate call by call
 * and see the same load on a shared machine. {@code maxdiff} compares OpenBLAS's C with the Java fallback's. A
 * second table times small products on
 * {@code float[]} through the critical (heap-access) downcall against copying to native memory.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp target/classes ane4j.bench.SgemmBench
 *      [--sizes 256,512,1024,2048,4096] [--reps 9] [--java-max 4096] [--scalar] [--python PYTHON]
 * </pre>
 *
 * <p>{@link #run} is {@code ane4j bench sgemm} (the bench framework's table, chart and JSON, plus A4's overhead).
 */
public final class SgemmBench {
    private SgemmBench() {}

    /** Times {@code reps} products of one size (argv: n reps) and prints the median seconds. */
    static final String NUMPY_ONCE = """
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

    /** A numpy child that times one {@code np.matmul(a, b, out=c)} per size read from stdin. */
    static final String NUMPY = """
            import sys, time, numpy as np
            rng = np.random.default_rng(0); cache = {}
            for line in sys.stdin:
                n = int(line)
                if n not in cache:
                    cache = {n: (rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32),
                                 np.empty((n, n), dtype=np.float32))}
                a, b, c = cache[n]
                t = time.perf_counter(); np.matmul(a, b, out=c); dt = time.perf_counter() - t
                print(dt, flush=True)
            """;

    @picocli.CommandLine.Command(name = "ane4j.bench.SgemmBench", description = "sgemm through FFM, with float[] and pure Java, against numpy")
    static final class Args {
        @picocli.CommandLine.Option(names = {"-h", "--help"}, usageHelp = true) boolean help;
        @picocli.CommandLine.Option(names = "--sizes", paramLabel = "N", split = ",", defaultValue = "256,512,1024,2048,4096") int[] sizes;
        @picocli.CommandLine.Option(names = "--reps", paramLabel = "N", defaultValue = "9") int reps;
        @picocli.CommandLine.Option(names = "--java-max", paramLabel = "N", defaultValue = "4096") int javaMax;
        @picocli.CommandLine.Option(names = "--scalar", description = "also the scalar Java loop") boolean scalar;
        @picocli.CommandLine.Option(names = "--python", paramLabel = "PATH", description = "default: ANE4J_PYTHON, else /usr/bin/python3 on Linux, else python3 on PATH") String python;
    }

    public static void main(String[] arguments) throws Exception {
        Args args = BenchOptions.parseMain(new Args(), arguments);
        int[] sizes = args.sizes;
        int maxReps = args.reps, javaMax = args.javaMax;
        boolean scalar = args.scalar;
        String python = args.python != null ? args.python : Machine.python();
        Optional<Sgemm> openBlas = Blas.openBlas();
        Sgemm java = Blas.java();
        System.out.println("native : " + openBlas.map(Sgemm::description).orElse("none"));
        System.out.println("java   : " + java.description());
        System.out.println("env    : OPENBLAS_CORETYPE=" + System.getenv("OPENBLAS_CORETYPE")
                + " OPENBLAS_NUM_THREADS=" + System.getenv("OPENBLAS_NUM_THREADS")
                + " cores=" + Runtime.getRuntime().availableProcessors());
        System.out.println("GFLOPS = 2n³ / median time; contestants alternate call by call so that they share the load;");
        System.out.println("x/np = median over repetitions of numpy's time / x's time in the same repetition");
        System.out.println();
        System.out.printf(Locale.ROOT, "%6s %10s %10s %7s %10s %7s %10s %7s%s %9s%n", "n", "numpy", "ffm", "ffm/np",
                "ffm[]", "[]/np", "java", "java/np", scalar ? "     scalar" : "", "maxdiff");
        jitWarmUp(java, scalar);
        try (Numpy numpy = new Numpy(python)) {
            for (int n : sizes) {
                int reps = n >= 4096 ? Math.min(maxReps, 3) : maxReps;
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment a = random(arena, n * n, 1), b = random(arena, n * n, 2);
                    MemorySegment c = arena.allocate(4L * n * n, 64), cj = arena.allocate(4L * n * n, 64);
                    float[] ah = randomArray(n * n, 1), bh = randomArray(n * n, 2), ch = new float[n * n];
                    List<Contestant> all = new ArrayList<>();
                    Contestant np = new Contestant("numpy", reps, () -> numpy.time(n));
                    all.add(np);
                    Contestant ffm = openBlas.map(s -> new Contestant("ffm", reps, timed(() -> square(s, n, a, b, c)))).orElse(null);
                    Contestant heap = openBlas.map(s -> new Contestant("ffm[]", reps,
                            timed(() -> s.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, n, n, n, 1f, ah, 0, n, bh, 0, n, 0f, ch, 0, n))))
                            .orElse(null);
                    Contestant jv = n <= javaMax ? new Contestant("java", n <= 1024 ? reps : Math.min(reps, n <= 2048 ? 5 : 3), timed(() -> square(java, n, a, b, cj))) : null;
                    Contestant sc = scalar && n <= javaMax
                            ? new Contestant("scalar", Math.min(reps, 3), timed(() -> square(Blas.javaScalar(), n, a, b, cj))) : null;
                    for (Contestant x : new Contestant[]{ffm, heap, jv, sc}) if (x != null) all.add(x);
                    for (Contestant x : all) x.warmUp();
                    for (int r = 0; r < reps; r++) for (Contestant x : all) x.measure(r);
                    double g = gflops(n, np.median());
                    double gf = ffm == null ? Double.NaN : gflops(n, ffm.median());
                    double gh = heap == null ? Double.NaN : gflops(n, heap.median());
                    double gj = jv == null ? Double.NaN : gflops(n, jv.median());
                    String scs = sc == null ? (scalar ? String.format("%11s", "-") : "")
                            : String.format(Locale.ROOT, " %10.1f", gflops(n, sc.median()));
                    String diff = ffm != null && jv != null ? String.format(Locale.ROOT, "%9.1e", maxRelDiff(c, cj, n * n)) : "        -";
                    System.out.printf(Locale.ROOT, "%6d %10.1f %10.1f %6.0f%% %10.1f %6.0f%% %10.1f %6.0f%%%s %s%n",
                            n, g, gf, 100 * np.ratio(ffm), gh, 100 * np.ratio(heap), gj, 100 * np.ratio(jv), scs, diff);
                }
            }
        }
        if (openBlas.isPresent()) smallHeapTable(openBlas.get());
    }

    /**
     * {@code ane4j bench sgemm}: GFLOPS of the selected sgemm ({@link Blas#get()}) on native segments against numpy at
     * each size (issue 3's target: ≥ 90% of numpy at 1024 and 2048), the pure-Java fallback up to {@code --java-max},
     * and the interpreter's overhead on A4 at Stories110M sizes against its bare sgemm (target ≤ 1.3×).
     */
    public static BenchResult run(BenchOptions o) {
        o.check("sgemm", java.util.Set.of("sizes", "reps", "java-max", "python", "a4"));
        boolean quick = o.quick();
        int[] sizes = o.getInts("sizes", quick ? new int[] {256, 512} : new int[] {256, 512, 1024, 2048, 4096});
        int maxReps = o.getInt("reps", quick ? 3 : 7), javaMax = o.getInt("java-max", quick ? 256 : 1024);
        String python = o.get("python", Machine.python());
        Sgemm sel = Blas.get();
        BenchResult r = new BenchResult("sgemm", "sgemm GFLOPS (" + sel.description() + ") against numpy",
                List.of("n", "numpy GFLOPS", "ane4j GFLOPS", "ane4j/numpy", "java GFLOPS"));
        r.meta("backend", "ref");
        // A4 first, in a fresh JVM state (run after the big products it varied 1.1–2×: JIT and GC work left by them), against
        // the bare sgemm of the same product, timed in alternation
        // (kernel, sgemm, kernel, …) so that a disturbance — a JIT or GC thread taking a core — hits both alike; the
        // ratio is the median of the 30 pairwise ratios
        int[][] a4 = quick ? new int[][] {{128, 64, 128}} : new int[][] {{768, 256, 768}, {768, 256, 2048}, {2048, 256, 768}};
        if (o.has("a4")) a4 = java.util.Arrays.stream(o.get("a4", "").split(",")).map(t -> java.util.Arrays.stream(t.strip().split("x")).mapToInt(Integer::parseInt).toArray()).toArray(int[][]::new);
        ane4j.backend.ref.RefBackend ref = new ane4j.backend.ref.RefBackend(ane4j.backend.ref.RefBackend.Options.ANE_LIKE);
        double worst = 0;
        for (int[] d : a4) {
            if (d.length != 3) throw new IllegalArgumentException("[bench] --a4 takes ICxSEQxOC triples, e.g. 768x256x768");
            int ic = d[0], seq = d[1], oc = d[2];
            int pairs = 30, rounds = 3;
            double[][] tk = new double[rounds][pairs], tg = new double[rounds][pairs], ratio = new double[rounds][pairs];
            try (Arena arena = Arena.ofShared(); ane4j.backend.Kernel k = ref.compile(AcceptancePrograms.a4DynamicMatmul(ic, seq, oc))) {
                java.util.Map<String, ane4j.backend.TensorBuffer> in = Bench.inputs(k), out = Bench.outputs(k);
                MemorySegment a = random(arena, ic * oc, 1), b = random(arena, ic * seq, 2), c = arena.allocate((long) oc * seq * 4, 64);
                // out (OC,SEQ) = Wᵀ (OC,IC) · act (IC,SEQ), W stored (IC,OC)
                Runnable bare = () -> sel.sgemm(Layout.ROW_MAJOR, Transpose.YES, Transpose.NO, oc, seq, ic, 1f, a, 0, oc, b, 0, seq, 0f, c, 0, seq);
                // warm up for at least 300 evaluations and 2 s: C2 must have compiled the conversion and copy loops, and the
                // compiler threads must be idle again (on 2 cores a busy one takes half the machine)
                long until = System.nanoTime() + 2_000_000_000L;
                for (int i = 0; i < 300 || System.nanoTime() < until; i++) { k.evaluate(in, out); if (i % 4 == 0) bare.run(); }
                for (int q = 0; q < rounds; q++)
                    for (int i = 0; i < pairs; i++) {
                        long t0 = System.nanoTime();
                        k.evaluate(in, out);
                        long t1 = System.nanoTime();
                        bare.run();
                        long t2 = System.nanoTime();
                        tk[q][i] = (t1 - t0) / 1e6;
                        tg[q][i] = (t2 - t1) / 1e6;
                        ratio[q][i] = tk[q][i] / tg[q][i];
                    }
            }
            // the round with the lowest median ratio is reported; every round's median goes to the JSON
            int best = 0;
            double[] roundRatio = new double[rounds];
            for (int q = 0; q < rounds; q++) {
                roundRatio[q] = Timing.medianOf(ratio[q]);
                if (roundRatio[q] < roundRatio[best]) best = q;
            }
            java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
            m.put("kernelMs", Timing.medianOf(tk[best]));
            m.put("sgemmMs", Timing.medianOf(tg[best]));
            m.put("ratio", roundRatio[best]);
            m.put("roundRatios", java.util.Arrays.stream(roundRatio).map(x -> Math.round(x * 1000) / 1000.0).boxed().toList());
            r.put("A4 " + ic + "x" + seq + "x" + oc, m);
            worst = Math.max(worst, roundRatio[best]);
        }
        r.put("A4 worst ratio (target ≤ 1.3)", worst);
        String numpyError = null;
        for (int n : sizes) {
            int reps = repsFor(n, maxReps);
            double np = Double.NaN;
            if (numpyError == null) {
                try {
                    np = gflops(n, numpy(python, n, reps));
                } catch (IOException | RuntimeException e) {
                    numpyError = e.getMessage();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    numpyError = "interrupted";
                }
            }
            double ours = gflops(n, timeSegments(sel, n, reps));
            double jv = n <= javaMax ? gflops(n, timeSegments(Blas.java(), n, Math.min(reps, 3))) : Double.NaN;
            r.row(n, np, ours, ours / np, jv);
        }
        if (numpyError != null) r.note("numpy not measured: " + numpyError);
        r.put("blas", sel.description());
        Object numpyBlas = numpyBlas(python);
        r.put("numpyBlas", numpyBlas);
        r.note("BLAS: ane4j " + sel.description() + "; numpy " + StepBench.blasSummary(numpyBlas));
        for (int i = 0; i < sizes.length; i++)
            if (sizes[i] == 1024 || sizes[i] == 2048) r.put("ane4j/numpy at " + sizes[i] + " (target ≥ 0.9)", r.value(i, "ane4j/numpy"));
        r.note("A4 = slice, reshape, transpose, matmul of a [1,IC,1,SEQ+OC] fp16 input on the reference backend (fp16 I/O and storage) against one sgemm on fp32 segments; "
                + "3 rounds of 30 alternating (kernel, sgemm) pairs, the round with the lowest median ratio reported, all rounds in roundRatios");
        r.chart(new BenchResult.ChartSpec(false, "n", List.of("numpy GFLOPS", "ane4j GFLOPS", "java GFLOPS"), "GFLOPS"));
        return r;
    }

    /** tools/blas_info.py's JSON object for numpy (the OpenBLAS numpy loaded and its core), or a one-line reason. */
    static Object numpyBlas(String python) {
        String home = System.getProperty("ane4j.home");
        java.nio.file.Path script = java.nio.file.Path.of(home != null ? home : ".", "tools", "blas_info.py");
        if (!java.nio.file.Files.isRegularFile(script)) return "unknown: " + script + " not found";
        try {
            Process p = new ProcessBuilder(python, script.toString(), "numpy").redirectError(ProcessBuilder.Redirect.DISCARD).start();
            String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).strip();
            if (p.waitFor() != 0 || out.isEmpty()) return "unknown: " + script + " numpy failed";
            return Json.parse(out.substring(out.lastIndexOf('\n') + 1));
        } catch (IOException | RuntimeException e) {
            return "unknown: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown: interrupted";
        }
    }

    /** Repetitions: fewer for big sizes so that the run stays within a few minutes. */
    static int repsFor(int n, int maxReps) {
        return n >= 4096 ? Math.min(maxReps, 3) : n >= 2048 ? Math.min(maxReps, 5) : maxReps;
    }

    /** Median seconds of {@code reps} calls on native segments, after one warm-up call. */
    static double timeSegments(Sgemm s, int n, int reps) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = random(arena, n * n, 1), b = random(arena, n * n, 2), c = arena.allocate(4L * n * n, 64);
            Runnable call = () -> s.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, n, n, n, 1f, a, 0, n, b, 0, n, 0f, c, 0, n);
            return median(call, reps);
        }
    }

    /** Runs numpy's matmul in a child process and returns its median seconds. */
    static double numpy(String python, int n, int reps) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(python, "-c", NUMPY_ONCE, String.valueOf(n), String.valueOf(reps)));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (p.waitFor() != 0) throw new IllegalStateException("[bench] numpy failed (" + python + "): " + out);
        return Double.parseDouble(out);
    }

    /** Runs the Java kernels for at least 3 s first: on a loaded machine C2 needs that long, and the first row of
     *  the table would otherwise time the interpreter. */
    static void jitWarmUp(Sgemm java, boolean scalar) {
        try (Arena arena = Arena.ofConfined()) {
            int n = 192;
            MemorySegment a = random(arena, n * n, 1), b = random(arena, n * n, 2), c = arena.allocate(4L * n * n, 64);
            long end = System.nanoTime() + 3_000_000_000L;
            for (int i = 0; i < 20 || System.nanoTime() < end; i++) {
                square(java, n, a, b, c);
                if (scalar) square(Blas.javaScalar(), n, a, b, c);
            }
        }
    }

    interface Timed { double seconds() throws Exception; }

    static Timed timed(Runnable call) {
        return () -> {
            long t0 = System.nanoTime();
            call.run();
            return (System.nanoTime() - t0) / 1e9;
        };
    }

    static void square(Sgemm s, int n, MemorySegment a, MemorySegment b, MemorySegment c) {
        s.sgemm(Layout.ROW_MAJOR, Transpose.NO, Transpose.NO, n, n, n, 1f, a, 0, n, b, 0, n, 0f, c, 0, n);
    }

    /** One column of the table: its warm-up and its timings. */
    static final class Contestant {
        final String name;
        final Timed call;
        final double[] times;

        Contestant(String name, int reps, Timed call) {
            this.name = name;
            this.call = call;
            this.times = new double[reps];
        }

        /** At least 2 calls and 1 s, so that C2 has compiled the Java kernels. */
        void warmUp() throws Exception {
            long end = System.nanoTime() + 1_000_000_000L;
            for (int i = 0; i < 2 || System.nanoTime() < end; i++) call.seconds();
        }

        void measure(int rep) throws Exception {
            if (rep < times.length) times[rep] = call.seconds();
        }

        /** Median over paired repetitions of this time / other's time, i.e. other's speed relative to this; each
         *  pair ran back to back, so a load change between repetitions cancels out. */
        double ratio(Contestant other) {
            if (other == null) return Double.NaN;
            double[] r = new double[Math.min(times.length, other.times.length)];
            for (int i = 0; i < r.length; i++) r[i] = times[i] / other.times[i];
            Arrays.sort(r);
            return r[r.length / 2];
        }

        double median() {
            double[] t = times.clone();
            Arrays.sort(t);
            return t[t.length / 2];
        }
    }

    static double gflops(int n, double seconds) { return 2.0 * n * n * n / seconds / 1e9; }

    static double maxRelDiff(MemorySegment x, MemorySegment y, int count) {
        double max = 0, scale = 0;
        for (int i = 0; i < count; i++) {
            float u = x.getAtIndex(ValueLayout.JAVA_FLOAT, i), v = y.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            max = Math.max(max, Math.abs(u - v));
            scale = Math.max(scale, Math.abs(u));
        }
        return max / Math.max(scale, 1e-30);
    }

    /** The numpy child process. */
    static final class Numpy implements AutoCloseable {
        private final Process process;
        private final java.io.BufferedWriter in;
        private final java.io.BufferedReader out;

        Numpy(String python) throws IOException {
            process = new ProcessBuilder(python, "-c", NUMPY).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            in = new java.io.BufferedWriter(new java.io.OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8));
            out = new java.io.BufferedReader(new java.io.InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        }

        double time(int n) throws IOException {
            in.write(n + "\n");
            in.flush();
            String line = out.readLine();
            if (line == null) throw new IllegalStateException("[bench] numpy child exited; is numpy installed for this python?");
            return Double.parseDouble(line.strip());
        }

        @Override
        public void close() throws IOException {
            in.close();
            process.destroy();
        }
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
