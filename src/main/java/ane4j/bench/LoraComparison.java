package ane4j.bench;

import ane4j.model.Json;
import ane4j.model.ModelConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * {@code bench step --lora R --compare-full [--compare-torch]}: a LoRA step against the full step of the same model, side
 * by side in one run, for the fine-tuning targets (LoRA ≤ 0.7× the full step's time, ≤ 0.5× its peak RSS). Peak RSS
 * is per process, so each side is a {@code bench step} of its own JVM (the same java, JVM options and class path as this
 * one). The two sides alternate for {@code --rounds} rounds, the order flipped each round (LoRA full, full LoRA, LoRA
 * full …), and the time ratio is the median of the rounds' ratios: a shared machine's speed drifts by more than the
 * margin between the ratio and its target within minutes, and a pair run back to back shares its moment. Then PyTorch
 * LoRA and PyTorch full ({@code tools/torch_lora_step.py}, one process each). This process only starts them and reads
 * their JSON.
 */
final class LoraComparison {
    private LoraComparison() {}

    static final double TIME_TARGET = 0.7, MEMORY_TARGET = 0.5;

    /** The options a side does not get: this comparison's own, and where the parent writes. */
    private static final Set<String> NOT_FORWARDED = Set.of("compare-full", "rounds", "compare-torch", "python", "torch-script", "torch-threads", "json", "no-save");
    private static final Set<String> LORA_OPTIONS = Set.of("lora", "lora-targets", "lora-alpha");

    static BenchResult run(BenchOptions o) {
        int rank = o.getInt("lora", 0);
        if (rank < 1) throw new IllegalArgumentException("[bench] --compare-full compares a LoRA step with the full step: give --lora RANK too (e.g. --lora 8)");
        ModelConfig cfg = StepBench.config(o);
        var adapters = StepBench.lora(o, cfg);   // checks rank and targets here, before any process starts
        String targets = String.join(",", adapters.targets());
        int steps = StepBench.steps(o);
        int rounds = o.getInt("rounds", o.quick() ? 1 : 3);
        if (rounds < 1 || rounds > 20) throw new IllegalArgumentException("[bench] --rounds " + rounds + " must be 1 to 20 (each round runs both sides once)");

        Path tmp;
        try {
            tmp = Files.createTempDirectory("ane4j-bench-lora");
        } catch (IOException e) {
            throw new UncheckedIOException("[bench] cannot create a temporary folder: " + e.getMessage(), e);
        }
        List<Map<String, Object>> loraRuns = new ArrayList<>(), fullRuns = new ArrayList<>();
        Map<String, Object> torchLora = null, torchFull = null;
        try {
            for (int i = 0; i < rounds; i++) {
                // LoRA first in even rounds, full first in odd ones: a drift of the machine's speed falls on both sides
                if (i % 2 == 0) loraRuns.add(side(o, tmp.resolve("lora.json"), true, targets));
                fullRuns.add(side(o, tmp.resolve("full.json"), false, targets));
                if (i % 2 == 1) loraRuns.add(side(o, tmp.resolve("lora.json"), true, targets));
            }
        } finally {
            for (String f : List.of("lora.json", "lora.png", "full.json", "full.png")) tmp.resolve(f).toFile().delete();
            tmp.toFile().delete();
        }
        double[] ratios = new double[rounds];
        for (int i = 0; i < rounds; i++) ratios[i] = num(summary(loraRuns.get(i)), "msPerStep") / num(summary(fullRuns.get(i)), "msPerStep");
        // the round whose ratio is the median (the lower one of an even count) stands for both sides' phases and figures
        int mid = medianIndex(ratios);
        Map<String, Object> lora = loraRuns.get(mid), full = fullRuns.get(mid);
        if (o.flag("compare-torch")) {
            torchLora = StepBench.torchStep(o, cfg, steps, StepBench.torchMode(o, adapters));
            torchFull = StepBench.torchStep(o, cfg, steps, List.of("--mode", "full"));
        }

        Map<String, Object> ls = summary(lora), fs = summary(full);
        String loraName = "LoRA r" + rank;
        BenchResult r = new BenchResult("step", "Training step: " + cfg.name() + " (batch 1, seq " + cfg.seqLen() + "), " + loraName + " on " + targets
                + " vs full fine-tuning, each in its own process", List.of("side", "ms/step", "min ms", "peak RSS MB", "trained parameters", "load (start–end)"));
        r.meta("backend", lora.get("backend"));
        r.meta("model", cfg.name());
        r.meta("parameters", lora.get("parameters"));
        // ms/step: the median of the rounds' medians; min: the fastest step of any round; peak RSS: the largest of any round
        double loraMs = median(each(loraRuns, "msPerStep")), fullMs = median(each(fullRuns, "msPerStep"));
        double loraMin = min(each(loraRuns, "msPerStepMin")), fullMin = min(each(fullRuns, "msPerStepMin"));
        double loraRss = max(each(loraRuns, "peakRssMB")), fullRss = max(each(fullRuns, "peakRssMB"));
        r.row("ane4j full", fullMs, fullMin, fullRss, fs.get("trainedParameters"), load(fullRuns));
        r.row("ane4j " + loraName, loraMs, loraMin, loraRss, ls.get("trainedParameters"), load(loraRuns));
        double msRatio = median(ratios), rssRatio = loraRss / fullRss;
        r.row("ane4j LoRA / full", msRatio, loraMin / fullMin, rssRatio, null, "");
        r.put("lora", rank);
        r.put("loraTargets", targets);
        r.put("rounds", rounds);
        r.put("msPerStep", loraMs);
        r.put("fullMsPerStep", fullMs);
        r.put("msRatio", msRatio);
        r.put("msRatioRounds", java.util.Arrays.stream(ratios).boxed().toList());
        r.put("msPerStepRounds", java.util.Arrays.stream(each(loraRuns, "msPerStep")).boxed().toList());
        r.put("fullMsPerStepRounds", java.util.Arrays.stream(each(fullRuns, "msPerStep")).boxed().toList());
        r.put("msRatioTarget", TIME_TARGET);
        r.put("peakRssMB", loraRss);
        r.put("fullPeakRssMB", fullRss);
        r.put("peakRssRatio", rssRatio);
        r.put("peakRssRatioTarget", MEMORY_TARGET);
        r.put("trainedParameters", ls.get("trainedParameters"));
        r.put("fullTrainedParameters", fs.get("trainedParameters"));
        r.put("firstLoss", ls.get("firstLoss"));
        r.put("fullFirstLoss", fs.get("firstLoss"));
        r.put("compiles", ls.get("compiles"));
        r.put("steps", steps);
        r.put("phases ms (LoRA / full)", phases(lora, full));
        r.meta("loraSide", lora);
        r.meta("fullSide", full);
        if (torchLora != null) {
            double tl = num(torchLora, "ms_per_step_median"), tf = num(torchFull, "ms_per_step_median");
            double tlRss = num(torchLora, "peak_rss_mb"), tfRss = num(torchFull, "peak_rss_mb");
            r.row("PyTorch full", tf, num(torchFull, "ms_per_step_min"), tfRss, torchFull.get("trained_params"), load(torchFull.get("loadavg")));
            r.row("PyTorch " + loraName, tl, num(torchLora, "ms_per_step_min"), tlRss, torchLora.get("trained_params"), load(torchLora.get("loadavg")));
            r.row("PyTorch LoRA / full", tl / tf, num(torchLora, "ms_per_step_min") / num(torchFull, "ms_per_step_min"), tlRss / tfRss, null, "");
            r.put("torchMsPerStep", tl);
            r.put("torchFullMsPerStep", tf);
            r.put("torchPeakRssMB", tlRss);
            r.put("torchFullPeakRssMB", tfRss);
            r.put("torchTrainedParameters", torchLora.get("trained_params"));
            r.put("torchFullTrainedParameters", torchFull.get("trained_params"));
            r.put("torchFirstLoss", torchLora.get("first_loss"));
            r.put("torchFullFirstLoss", torchFull.get("first_loss"));
            r.put("torchThreads", torchLora.get("threads"));
            r.put("torchVersion", torchLora.get("torch"));
            r.put("speedupVsTorchLora", tl / loraMs);
            r.meta("torchLora", torchLora);
            r.meta("torchFull", torchFull);
        }
        r.note(String.format(Locale.ROOT, "LoRA / full: %.2f× the ms/step (target ≤ %.1f×: %s), %.2f× the peak RSS (target ≤ %.1f×: %s)", msRatio, TIME_TARGET,
                msRatio <= TIME_TARGET ? "met" : "not met", rssRatio, MEMORY_TARGET, rssRatio <= MEMORY_TARGET ? "met" : "not met"));
        StringBuilder each = new StringBuilder();
        for (int i = 0; i < rounds; i++)
            each.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.2f (%s first, %.0f / %.0f ms)", ratios[i], i % 2 == 0 ? "LoRA" : "full",
                    num(summary(loraRuns.get(i)), "msPerStep"), num(summary(fullRuns.get(i)), "msPerStep")));
        r.note("the time ratio is the median of " + rounds + " round" + (rounds == 1 ? "" : "s") + "' ratios, each a LoRA and a full process run back to back: " + each
                + "; the phases below are of round " + (mid + 1));
        if (torchLora != null)
            r.note(String.format(Locale.ROOT, "PyTorch %s (%s threads, fp32, tools/torch_lora_step.py): %.1f ms/step; ane4j's LoRA step is %.2f× %s", loraName, torchLora.get("threads"),
                    num(torchLora, "ms_per_step_median"), Math.max(num(torchLora, "ms_per_step_median"), loraMs) / Math.min(num(torchLora, "ms_per_step_median"), loraMs),
                    num(torchLora, "ms_per_step_median") >= loraMs ? "faster" : "slower"));
        r.note("each side is its own process, run one after another (ane4j LoRA and full alternated" + (torchLora != null ? ", then PyTorch LoRA, PyTorch full" : "")
                + "); peak RSS = VmHWM of that process, the largest of the rounds; load = the 1-minute load average at the first start and the last end (a shared machine shifts the ratios: compare loads)");
        r.note("ane4j: " + lora.get("title") + "; " + steps + " measured steps after " + o.getInt("warmup", o.quick() ? 1 : 2) + " warm-up");
        r.chart(new BenchResult.ChartSpec(true, "side", List.of("ms/step"), "ms per step"));
        return r;
    }

    /** Runs one side ({@code bench step} with the LoRA options or without them) in a JVM of its own; its JSON record. */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> side(BenchOptions o, Path json, boolean lora, String targets) {
        List<String> cmd = javaCommand();
        cmd.addAll(List.of("bench", "step"));
        for (var e : o.values().entrySet()) {
            String k = e.getKey();
            if (NOT_FORWARDED.contains(k) || LORA_OPTIONS.contains(k)) continue;
            if (BenchOptions.FLAGS.contains(k)) cmd.add("--" + k + "=" + o.flag(k));
            else cmd.addAll(List.of("--" + k, e.getValue()));
        }
        if (lora) cmd.addAll(List.of("--lora", o.get("lora", ""), "--lora-targets", targets, "--lora-alpha", o.get("lora-alpha", "16")));
        cmd.addAll(List.of("--json", json.toString()));
        String what = lora ? "the LoRA side" : "the full side";
        try {
            Process p = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (p.waitFor() != 0 || !Files.isRegularFile(json)) {
                String last = err.isEmpty() ? "no message" : err.substring(err.lastIndexOf('\n') + 1);
                throw new IllegalStateException("[bench] " + what + " (ane4j bench step in its own JVM) failed: " + last);
            }
            return (Map<String, Object>) Json.parse(Files.readString(json));
        } catch (IOException e) {
            throw new IllegalStateException("[bench] cannot run " + what + " (" + cmd.getFirst() + "): " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("[bench] interrupted while running " + what, e);
        }
    }

    /** This JVM's java, options (without debug agents), ane4j.* properties and class path, running ane4j's CLI. */
    static List<String> javaCommand() {
        List<String> c = new ArrayList<>();
        c.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        List<String> jvm = ManagementFactory.getRuntimeMXBean().getInputArguments();
        for (String a : jvm) if (!a.startsWith("-javaagent") && !a.startsWith("-agentlib") && !a.startsWith("-agentpath") && !a.startsWith("-Xrunjdwp")) c.add(a);
        if (jvm.stream().noneMatch(a -> a.startsWith("--enable-native-access"))) c.add("--enable-native-access=ALL-UNNAMED");
        if (jvm.stream().noneMatch(a -> a.contains("jdk.incubator.vector"))) c.add("--add-modules=jdk.incubator.vector");
        // ane4j's settings made in this JVM (the BLAS calibration cache, the backend …), as the supervisor gives its worker
        for (String k : new java.util.TreeSet<>(System.getProperties().stringPropertyNames())) if (k.startsWith("ane4j.")) c.add("-D" + k + "=" + System.getProperty(k));
        c.addAll(List.of("-cp", System.getProperty("java.class.path"), "ane4j.cli.Main"));
        return c;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> summary(Map<String, Object> record) { return (Map<String, Object>) record.get("summary"); }

    private static double num(Map<String, Object> m, String key) {
        return m.get(key) instanceof Number n ? n.doubleValue() : Double.NaN;
    }

    /** "0.71–0.95": the load average when the side's first run started measuring and when its last one ended. */
    private static String load(List<Map<String, Object>> runs) {
        return String.format(Locale.ROOT, "%.2f–%.2f", num(summary(runs.getFirst()), "loadAverageBefore"), num(summary(runs.getLast()), "loadAverageAfter"));
    }

    private static double[] each(List<Map<String, Object>> runs, String key) {
        return runs.stream().mapToDouble(m -> num(summary(m), key)).toArray();
    }

    /** The median (of an even count: the mean of the middle two). */
    static double median(double[] v) {
        double[] s = v.clone();
        java.util.Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    /** The index of the median value (of an even count: the lower middle one). */
    static int medianIndex(double[] v) {
        Integer[] order = new Integer[v.length];
        for (int i = 0; i < v.length; i++) order[i] = i;
        java.util.Arrays.sort(order, (a, b) -> Double.compare(v[a], v[b]));
        return order[(v.length - 1) / 2];
    }

    private static double min(double[] v) { return java.util.Arrays.stream(v).min().orElse(Double.NaN); }

    private static double max(double[] v) { return java.util.Arrays.stream(v).max().orElse(Double.NaN); }

    private static String load(Object torchLoad) {
        return torchLoad instanceof List<?> l && l.size() == 2 ? String.format(Locale.ROOT, "%.2f–%.2f", ((Number) l.get(0)).doubleValue(), ((Number) l.get(1)).doubleValue()) : "?";
    }

    /** Per phase: "LoRA ms / full ms" from the two sides' tables. */
    @SuppressWarnings("unchecked")
    private static Map<String, String> phases(Map<String, Object> lora, Map<String, Object> full) {
        Map<String, String> out = new LinkedHashMap<>();
        List<Map<String, Object>> lr = (List<Map<String, Object>>) lora.get("rows"), fr = (List<Map<String, Object>>) full.get("rows");
        for (int i = 0; i < Math.min(lr.size(), fr.size()); i++)
            out.put(String.valueOf(lr.get(i).get("phase")), String.format(Locale.ROOT, "%.0f / %.0f", num(lr.get(i), "ms"), num(fr.get(i), "ms")));
        return out;
    }
}
