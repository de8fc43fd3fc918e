package ane4j.bench;

import ane4j.backend.Kernel;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.backend.ref.RefBackend;
import ane4j.mil.Mil;
import ane4j.mil.Program;
import ane4j.mil.TensorType;
import ane4j.model.ModelConfig;
import ane4j.train.TrainingKernels;
import ane4j.worker.RemoteKernel;
import ane4j.worker.Supervisor;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * What evaluating through the supervised worker costs on top of evaluating in this JVM, for the same reference-backend
 * kernel: the tensors are shared files mapped on both sides, so the difference is the request/response round trip.
 * Kernels: a Stories110M-sized scale (fp16 [1,768,1,6656], 10.2 MB in and out), the Stories110M ffnFused training
 * kernel (9.8 MB input), and a tiny one (the fixed cost). Each is checked against the local result once, then local
 * and remote evaluations alternate; the table gives medians.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -cp target/classes:target/lib/* \
 *      ane4j.bench.WorkerEvalBench [--reps 40] [--no-ffn]
 * </pre>
 */
public final class WorkerEvalBench {
    private WorkerEvalBench() {}

    @picocli.CommandLine.Command(name = "ane4j.bench.WorkerEvalBench", description = "evaluate in process and through the worker")
    static final class Args {
        @picocli.CommandLine.Option(names = {"-h", "--help"}, usageHelp = true) boolean help;
        @picocli.CommandLine.Option(names = "--reps", paramLabel = "N", defaultValue = "40") int reps;
        @picocli.CommandLine.Option(names = "--no-ffn", description = "skip stories110m's ffnFused") boolean noFfn;
    }

    public static void main(String[] arguments) {
        Args args = BenchOptions.parseMain(new Args(), arguments);
        int reps = args.reps;
        boolean ffn = !args.noFfn;
        Map<String, Program> programs = new LinkedHashMap<>();
        programs.put("tiny fp16[1,8,1,16]", scale(Mil.fp16(1, 8, 1, 16)));
        programs.put("scale fp16[1,768,1,6656]", scale(Mil.fp16(1, 768, 1, 6656)));
        if (ffn) programs.put("stories110m ffnFused", new TrainingKernels(ModelConfig.parse("stories110m")).ffnFused().program());
        RefBackend local = new RefBackend(RefBackend.Options.ANE_LIKE);
        System.out.printf(Locale.ROOT, "%-28s %9s %10s %12s %10s %12s %12s%n", "kernel", "input MB", "local ms", "local-shm ms", "worker ms", "in-worker ms", "round trip");
        try (Supervisor s = new Supervisor(Supervisor.Options.defaults().withBackend("ref").withRefStorage("fp16").withLog(l -> {}))) {
            for (var e : programs.entrySet()) {
                try (Kernel lk = local.compile(e.getValue()); RemoteKernel rk = s.compile(e.getValue())) {
                    TensorSpec in = lk.inputs().getFirst(), out = lk.outputs().getFirst();
                    TensorBuffer lin = TensorBuffer.allocate(in.type()), lout = TensorBuffer.allocate(out.type());
                    TensorBuffer rin = rk.allocateInput(in.name()), rout = rk.allocateOutput(out.name());
                    TensorBuffer sin = s.allocate(in.type()), sout = s.allocate(out.type());
                    fill(lin, 1);
                    rin.copyFrom(lin);
                    sin.copyFrom(lin);
                    Map<String, TensorBuffer> li = Map.of(in.name(), lin), lo = Map.of(out.name(), lout), ri = Map.of(in.name(), rin), ro = Map.of(out.name(), rout);
                    Map<String, TensorBuffer> si = Map.of(in.name(), sin), so = Map.of(out.name(), sout);
                    lk.evaluate(li, lo);
                    rk.evaluate(ri, ro);
                    if (!Arrays.equals(lout.toFloatArray(), rout.toFloatArray())) throw new AssertionError("[bench] " + e.getKey() + ": worker result differs from local");
                    int n = e.getKey().startsWith("stories") ? Math.max(5, reps / 4) : reps;
                    for (int i = 0; i < Math.max(3, n / 4); i++) { lk.evaluate(li, lo); lk.evaluate(si, so); rk.evaluate(ri, ro); }
                    // one block per variant: interleaving them lets the parent's own compute delay the reply's wake-up
                    double[] lt = new double[n], st = new double[n], rt = new double[n], wt = new double[n], trip = new double[n];
                    for (int i = 0; i < n; i++) {
                        long t0 = System.nanoTime();
                        lk.evaluate(li, lo);
                        lt[i] = (System.nanoTime() - t0) / 1e6;
                    }
                    for (int i = 0; i < n; i++) {
                        long t0 = System.nanoTime();
                        lk.evaluate(si, so);
                        st[i] = (System.nanoTime() - t0) / 1e6;
                    }
                    for (int i = 0; i < n; i++) {
                        long t0 = System.nanoTime();
                        rk.evaluate(ri, ro);
                        rt[i] = (System.nanoTime() - t0) / 1e6;
                        wt[i] = rk.lastWorkerNanos() / 1e6;
                        trip[i] = rt[i] - wt[i];
                    }
                    System.out.printf(Locale.ROOT, "%-28s %9.1f %10.3f %12.3f %10.3f %12.3f %12.3f%n", e.getKey(), in.type().byteSize() / 1e6,
                            median(lt), median(st), median(rt), median(wt), median(trip));
                    s.free(sin);
                    s.free(sout);
                }
            }
        }
    }

    /** y = x · 0.5 */
    static Program scale(TensorType t) {
        return Mil.program().function("main", f -> f.output(f.named("y", f.mul(f.input("x", t), 0.5f)))).build();
    }

    static void fill(TensorBuffer b, long seed) {
        Random r = new Random(seed);
        float[] a = new float[(int) b.count()];
        for (int i = 0; i < a.length; i++) a[i] = (float) r.nextGaussian() * 0.1f;
        b.copyFrom(a);
    }

    static double median(double[] a) {
        double[] s = a.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
