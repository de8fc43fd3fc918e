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

    public static void main(String[] args) {
        int reps = 40;
        boolean ffn = true;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--reps" -> reps = Integer.parseInt(args[++i]);
                case "--no-ffn" -> ffn = false;
                default -> throw new IllegalArgumentException("[bench] unknown argument " + args[i] + " (--reps N, --no-ffn)");
            }
        }
        Map<String, Program> programs = new LinkedHashMap<>();
        programs.put("tiny fp16[1,8,1,16]", scale(Mil.fp16(1, 8, 1, 16)));
        programs.put("scale fp16[1,768,1,6656]", scale(Mil.fp16(1, 768, 1, 6656)));
        if (ffn) programs.put("stories110m ffnFused", new TrainingKernels(ModelConfig.parse("stories110m")).ffnFused().program());
        RefBackend local = new RefBackend(new RefBackend.Options(false, false, null));
        System.out.printf(Locale.ROOT, "%-28s %10s %12s %12s %12s%n", "kernel", "input MB", "local ms", "worker ms", "overhead ms");
        try (Supervisor s = new Supervisor(Supervisor.Options.defaults().withBackend("ref").withRefStorage("fp16").withLog(l -> {}))) {
            for (var e : programs.entrySet()) {
                try (Kernel lk = local.compile(e.getValue()); RemoteKernel rk = s.compile(e.getValue())) {
                    TensorSpec in = lk.inputs().getFirst(), out = lk.outputs().getFirst();
                    TensorBuffer lin = TensorBuffer.allocate(in.type()), lout = TensorBuffer.allocate(out.type());
                    TensorBuffer rin = rk.allocateInput(in.name()), rout = rk.allocateOutput(out.name());
                    fill(lin, 1);
                    rin.copyFrom(lin);
                    Map<String, TensorBuffer> li = Map.of(in.name(), lin), lo = Map.of(out.name(), lout), ri = Map.of(in.name(), rin), ro = Map.of(out.name(), rout);
                    lk.evaluate(li, lo);
                    rk.evaluate(ri, ro);
                    if (!Arrays.equals(lout.toFloatArray(), rout.toFloatArray())) throw new AssertionError("[bench] " + e.getKey() + ": worker result differs from local");
                    int n = e.getKey().startsWith("stories") ? Math.max(5, reps / 4) : reps;
                    for (int i = 0; i < 3; i++) { lk.evaluate(li, lo); rk.evaluate(ri, ro); }
                    double[] lt = new double[n], rt = new double[n];
                    for (int i = 0; i < n; i++) {
                        long t0 = System.nanoTime();
                        lk.evaluate(li, lo);
                        long t1 = System.nanoTime();
                        rk.evaluate(ri, ro);
                        long t2 = System.nanoTime();
                        lt[i] = (t1 - t0) / 1e6;
                        rt[i] = (t2 - t1) / 1e6;
                    }
                    double lm = median(lt), rm = median(rt);
                    System.out.printf(Locale.ROOT, "%-28s %10.1f %12.3f %12.3f %12.3f%n", e.getKey(), in.type().byteSize() / 1e6, lm, rm, rm - lm);
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
