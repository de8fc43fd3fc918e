package ane4j.cli;

import ane4j.backend.Kernel;
import ane4j.backend.OutputDiff;
import ane4j.backend.TensorBuffer;
import ane4j.backend.TensorSpec;
import ane4j.backend.ane.AneBackend;
import ane4j.backend.ane.AneKernel;
import ane4j.backend.ref.RefBackend;
import ane4j.blas.Blas;
import ane4j.model.Json;
import ane4j.model.ModelConfig;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ane4j doctor [--model tiny|stories110m|…] [--json FILE]}: what this machine is (chip, OS, JDK, MIL dialect, BLAS),
 * then the {@link Probes} ladder. With the ANE, each probe is compiled, loaded and evaluated (twice, the second timed) there and compared with the
 * reference backend (fp16 tolerances, {@link OutputDiff#within}); without it, the reference backend runs each probe with
 * fp16 storage and is compared with itself in fp32 storage (the rounding an fp16 engine must live with). Ends with a table
 * and, with {@code --json}, a report to attach to a bug. Exit code 0 when every probe passes, 1 otherwise.
 */
public final class DoctorCommand {
    private DoctorCommand() {}

    static final String USAGE = "usage: ane4j doctor [--model " + String.join("|", ModelConfig.PRESETS) + "] [--json FILE]";

    /** One probe's outcome; times in milliseconds (load: ANE only), NaN when not measured. */
    public record Result(String probe, String backend, String reference, double compileMs, double loadMs, double evalMs,
                         OutputDiff diff, boolean passed, String error) {}

    public static int run(String[] args, PrintStream out, PrintStream err) {
        AneBackend ane = new AneBackend();
        return run(args, out, err, ane.isAvailable() ? ane : null, ane.isAvailable() ? null : ane.unavailableReason());
    }

    /** With a given ANE backend (null: not available, for {@code reason}). */
    public static int run(String[] args, PrintStream out, PrintStream err, AneBackend ane, String reason) {
        String model = "tiny";
        Path json = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--model" -> model = value(args, ++i, "--model");
                case "--json" -> json = Path.of(value(args, ++i, "--json"));
                case "-h", "--help" -> { out.println(USAGE); return 0; }
                default -> throw new CliException("unknown option '" + args[i] + "'; " + USAGE);
            }
        }
        ModelConfig config;
        try {
            config = ModelConfig.parse(model);
        } catch (IllegalArgumentException e) {
            throw new CliException(e.getMessage());
        }

        Map<String, String> host = new LinkedHashMap<>();
        host.put("chip", ane == null ? "n/a" : safe(ane::chip));
        host.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
        host.put("jdk", System.getProperty("java.vm.vendor") + " " + System.getProperty("java.runtime.version"));
        host.put("dialect", ane == null ? "n/a" : safe(() -> ane.dialect().programVersion() + "/" + ane.dialect().opset()));
        host.put("blas", safe(() -> Blas.get().name()));
        host.put("ane", ane == null ? "not available: " + reason : "available");
        host.put("model", config.name());
        for (var e : host.entrySet()) out.printf(Locale.ROOT, "%-8s %s%n", e.getKey() + ":", e.getValue());
        if (ane == null) out.println("The ANE is not available here (" + reason + "); running the reference-backend half of the probes.");
        out.println();

        List<Result> results = new ArrayList<>();
        for (Probes.Probe p : Probes.ladder(config)) {
            Result r = ane != null ? onAne(ane, p) : onRef(p);
            results.add(r);
            out.println(row(r));
            out.flush();
        }
        boolean passed = results.stream().allMatch(Result::passed);
        out.println();
        out.println(header());
        for (Result r : results) out.println(row(r));
        out.println(passed ? "all " + results.size() + " probes passed" : results.stream().filter(r -> !r.passed()).count() + " of " + results.size() + " probes FAILED");
        if (json != null) {
            try {
                if (json.getParent() != null) Files.createDirectories(json.getParent());
                Files.writeString(json, json(host, ane != null, reason, results, passed));
            } catch (IOException e) {
                throw new CliException("cannot write " + json + ": " + e.getMessage(), e);
            }
            out.println("report written to " + json);
        }
        return passed ? 0 : 1;
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) throw new CliException(option + " needs a value; " + USAGE);
        return args[i];
    }

    private interface Text { String get(); }

    private static String safe(Text t) {
        try {
            return t.get();
        } catch (RuntimeException e) {
            return "unknown (" + e.getMessage() + ")";
        }
    }

    static Map<String, TensorBuffer> inputs(Kernel k, long seed, float scale) {
        Map<String, TensorBuffer> m = new LinkedHashMap<>();
        long n = 0;
        for (TensorSpec s : k.inputs()) m.put(s.name(), TensorBuffer.random(s.type(), seed + n++, scale));
        return m;
    }

    private static OutputDiff diff(Map<String, TensorBuffer> want, Map<String, TensorBuffer> got) {
        OutputDiff d = null;
        for (var e : want.entrySet()) {
            OutputDiff one = OutputDiff.of(e.getValue(), got.get(e.getKey()));
            d = d == null ? one : d.merge(one);
        }
        return d;
    }

    private static double ms(long nanos) { return nanos / 1e6; }

    /** ANE vs reference: compile, load and the second of two evaluations timed on the ANE. */
    static Result onAne(AneBackend ane, Probes.Probe p) {
        RefBackend ref = new RefBackend(new RefBackend.Options(false, false, null));
        try (Kernel r = ref.compile(p.program())) {
            Map<String, TensorBuffer> in = inputs(r, p.name().hashCode(), p.inputScale());
            Map<String, TensorBuffer> want = r.evaluate(in);
            try (AneKernel k = (AneKernel) ane.compile(p.program())) {
                Map<String, TensorBuffer> got = k.evaluate(in);
                got = k.evaluate(in);
                OutputDiff d = diff(want, got);
                boolean ok = d.within(OutputDiff.FP16_ATOL, OutputDiff.FP16_RTOL);
                return new Result(p.name(), "ane", "ref", ms(k.program().compileNanos()), ms(k.program().loadNanos()),
                        ms(k.lastEvaluateNanos()), d, ok, ok ? null : "outside fp16 tolerance");
            }
        } catch (RuntimeException e) {
            return new Result(p.name(), "ane", "ref", Double.NaN, Double.NaN, Double.NaN, null, false, oneLine(e));
        }
    }

    /** Reference (fp16 storage) vs reference (fp32 storage), timing the fp16 one. */
    static Result onRef(Probes.Probe p) {
        RefBackend ref = new RefBackend(new RefBackend.Options(false, false, null));
        RefBackend exact = new RefBackend(new RefBackend.Options(true, false, null));
        try (Kernel e = exact.compile(p.program())) {
            long t0 = System.nanoTime();
            try (Kernel k = ref.compile(p.program())) {
                long t1 = System.nanoTime();
                Map<String, TensorBuffer> in = inputs(k, p.name().hashCode(), p.inputScale());
                Map<String, TensorBuffer> got = k.evaluate(in);   // the first run warms the JIT; the second is timed
                long t2 = System.nanoTime();
                k.evaluate(in, got);
                long t3 = System.nanoTime();
                OutputDiff d = diff(e.evaluate(in), got);
                boolean ok = d.within(OutputDiff.FP16_ATOL, OutputDiff.FP16_RTOL);
                return new Result(p.name(), "ref", "ref-fp32", ms(t1 - t0), Double.NaN, ms(t3 - t2), d, ok, ok ? null : "outside fp16 tolerance");
            }
        } catch (RuntimeException ex) {
            return new Result(p.name(), "ref", "ref-fp32", Double.NaN, Double.NaN, Double.NaN, null, false, oneLine(ex));
        }
    }

    private static String oneLine(Throwable t) {
        String m = t.getMessage() == null ? t.toString() : t.getMessage();
        return m.replace('\n', ' ');
    }

    static String header() {
        return String.format(Locale.ROOT, "%-22s %-4s %-8s %10s %8s %9s %10s %10s  %s",
                "probe", "on", "vs", "compile ms", "load ms", "eval ms", "max|err|", "mean|err|", "result");
    }

    static String row(Result r) {
        String result = r.passed() ? "ok" : "FAIL" + (r.error() == null ? "" : ": " + r.error());
        return String.format(Locale.ROOT, "%-22s %-4s %-8s %10s %8s %9s %10s %10s  %s", r.probe(), r.backend(), r.reference(),
                num(r.compileMs(), 1), num(r.loadMs(), 1), num(r.evalMs(), 3),
                r.diff() == null ? "-" : sci(r.diff().maxAbs()), r.diff() == null ? "-" : sci(r.diff().meanAbs()), result);
    }

    private static String num(double v, int decimals) { return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%." + decimals + "f", v); }

    private static String sci(double v) { return String.format(Locale.ROOT, "%.2e", v); }

    // --- the JSON report ---

    static String json(Map<String, String> host, boolean aneAvailable, String reason, List<Result> results, boolean passed) {
        StringBuilder sb = new StringBuilder("{\n  \"tool\": \"ane4j doctor\",\n  \"host\": {");
        boolean first = true;
        for (var e : host.entrySet()) {
            sb.append(first ? "\n" : ",\n").append("    ").append(Json.quote(e.getKey())).append(": ").append(Json.quote(e.getValue()));
            first = false;
        }
        sb.append("\n  },\n  \"aneAvailable\": ").append(aneAvailable).append(",\n  \"aneUnavailableReason\": ")
                .append(reason == null ? "null" : Json.quote(reason)).append(",\n  \"probes\": [");
        for (int i = 0; i < results.size(); i++) {
            Result r = results.get(i);
            sb.append(i == 0 ? "\n" : ",\n").append("    {\"probe\": ").append(Json.quote(r.probe()))
                    .append(", \"backend\": ").append(Json.quote(r.backend()))
                    .append(", \"reference\": ").append(Json.quote(r.reference()))
                    .append(", \"compileMs\": ").append(jnum(r.compileMs()))
                    .append(", \"loadMs\": ").append(jnum(r.loadMs()))
                    .append(", \"evalMs\": ").append(jnum(r.evalMs()))
                    .append(", \"maxAbsErr\": ").append(r.diff() == null ? "null" : jnum(r.diff().maxAbs()))
                    .append(", \"meanAbsErr\": ").append(r.diff() == null ? "null" : jnum(r.diff().meanAbs()))
                    .append(", \"maxAbsRef\": ").append(r.diff() == null ? "null" : jnum(r.diff().maxRef()))
                    .append(", \"nonFinite\": ").append(r.diff() == null ? "null" : Long.toString(r.diff().nonFinite()))
                    .append(", \"passed\": ").append(r.passed())
                    .append(", \"error\": ").append(r.error() == null ? "null" : Json.quote(r.error())).append('}');
        }
        sb.append("\n  ],\n  \"tolerance\": {\"atol\": ").append(OutputDiff.FP16_ATOL).append(", \"rtol\": ").append(OutputDiff.FP16_RTOL)
                .append("},\n  \"passed\": ").append(passed).append("\n}\n");
        return sb.toString();
    }

    private static String jnum(double v) { return Double.isFinite(v) ? Double.toString(v) : "null"; }

}
