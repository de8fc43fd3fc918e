package ane4j.cli;

import ane4j.backend.OutputDiff;
import ane4j.backend.ane.SurfacePlan;
import ane4j.cli.DoctorCommand.Result;
import ane4j.chip.Chip;
import ane4j.cli.DoctorCommand.Status;
import ane4j.model.Json;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * What {@code ane4j doctor} prints and writes from its results: the table, one line per assumption of the audit
 * ({@code docs/ane-audit.md} F1–F14) that the first Mac run must confirm, the verdict for a bug report and the JSON report.
 */
final class DoctorReport {
    private final Map<String, String> host;
    private final boolean aneAvailable;
    private final String reason;
    private final Chip chip;
    private final List<Result> results;
    private final String stopped;

    DoctorReport(Map<String, String> host, boolean aneAvailable, String reason, Chip chip, List<Result> results, String stopped) {
        this.host = host;
        this.aneAvailable = aneAvailable;
        this.reason = reason;
        this.chip = chip;
        this.results = List.copyOf(results);
        this.stopped = stopped;
    }

    /** Every rung passed (probes only observe). */
    boolean passed() { return results.stream().noneMatch(Result::failedRung); }

    private List<Result> rungs() { return results.stream().filter(r -> r.kind() == Probes.Kind.RUNG).toList(); }

    private Optional<Result> find(String probe) { return results.stream().filter(r -> r.probe().equals(probe)).findFirst(); }

    // --- the table ---

    static String header() {
        return String.format(Locale.ROOT, "%-24s %-5s %-4s %-8s %5s %10s %8s %9s %10s %10s  %s",
                "probe", "kind", "on", "vs", "files", "compile ms", "load ms", "eval ms", "max|err|", "max rel", "result");
    }

    /** A row with the program's weight-file count (macOS 27 refuses two or more: every failing rung of that kind has ≥2). */
    static String row(Result r, int weightFiles) {
        String row = row(r);
        int at = String.format(Locale.ROOT, "%-24s %-5s %-4s %-8s ", "", "", "", "").length();
        return row.substring(0, at) + String.format(Locale.ROOT, "%5d ", weightFiles) + row.substring(at);
    }

    static String row(Result r) {
        String result = switch (r.status()) {
            case OK -> r.origin() == null || r.origin().equals("compiled") ? "ok" : "ok (" + r.origin() + ")";
            case DIFFERS, FAILED -> (r.kind() == Probes.Kind.RUNG ? "FAIL" : r.status().toString()) + (r.error() == null ? "" : ": " + r.error());
            case SKIPPED, NOT_RUN -> r.status() + (r.error() == null ? "" : ": " + r.error());
        };
        return String.format(Locale.ROOT, "%-24s %-5s %-4s %-8s %10s %8s %9s %10s %10s  %s", r.probe(),
                r.kind() == Probes.Kind.RUNG ? "rung" : "probe", r.backend(), r.reference(),
                num(r.compileMs(), 1), num(r.loadMs(), 1), num(r.evalMs(), 3),
                r.diff() == null ? "-" : sci(r.diff().maxAbs()), r.diff() == null ? "-" : sci(r.maxRelErr()), result);
    }

    String summary() {
        List<Result> rungs = rungs();
        long ok = rungs.stream().filter(Result::passed).count(), notRun = rungs.stream().filter(r -> r.status() == Status.NOT_RUN).count();
        long failed = rungs.size() - ok - notRun;
        String s = ok == rungs.size() ? "all " + rungs.size() + " rungs passed"
                : (failed > 0 ? failed + " of " + rungs.size() + " rungs FAILED" : ok + " of " + rungs.size() + " rungs passed")
                        + (notRun > 0 ? ", " + notRun + " not run" : "");
        long probes = results.size() - rungs.size();
        return s + "; " + probes + " probes observed" + (stopped == null ? "" : "; " + stopped);
    }

    private static String num(double v, int decimals) { return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%." + decimals + "f", v); }

    private static String sci(double v) { return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.2e", v); }

    // --- the assumptions ---

    /**
     * One line per assumption the first Mac run must confirm, each naming the probe(s) that answer it. Without the ANE
     * the lines say what the reference computed and that the answer needs a Mac.
     */
    List<String> assumptions() {
        List<String> l = new ArrayList<>();
        for (String line : observations()) l.add(aneAvailable || line.contains(noAne()) ? line : line + "; on the reference only, " + noAne());
        return l;
    }

    private List<String> observations() {
        List<String> l = new ArrayList<>();
        l.add("F1  identifier accepted: " + identifier());
        l.add("F2  daemon-cache load without compile: " + daemonCache());
        l.add("F13 unload deletes NSTemporaryDirectory()/<identifier>: " + unloadDir());
        l.add("F7  dialect that compiled: " + dialectLine());
        l.add("F5  16384 axis cap (M1–M3; 65536 on M4/M5): " + statuses("width-16384", "width-32768"));
        l.add("F8  matmul contraction multiple of 32: " + contraction());
        l.add("F4  width-offset slice clamps |v| > 4094 (M1–M3): " + cliff("slice-clamp-4094", "values 4100–6000 read at width offset 64"));
        l.add("F4  matmul output saturates above 32752: " + cliff("matmul-saturation", "outputs of 40000"));
        l.add("F14 multi-I/O surface sizes and order: " + statuses("multi-input-equal", "multi-input-ascending", "multi-input-descending",
                "multi-output-descending", "multi-output-ascending"));
        l.add("F8  minimum surface size: " + minSurface());
        l.add("F12 int8 blob mil_dtype (4 coremltools, 1 maderix): " + statuses("int8-blob-code4", "int8-blob-code1")
                + "; ane4j writes 4 (bench int8 --blob-code 1 for maderix's)");
        l.add("F12 cast (fp32 I/O) and single-blob weights on M1/M2: " + statuses("a2-fp32-cast", "a2-packed-blob")
                + "; ane4j's rungs use neither (on macOS 27 a failure of a program with ≥2 weight files is the bundle check, C2, not the cast)");
        l.add("C2  two weight files compile (macOS 27: Code=10 verifyBundleAtPath expected): " + statuses("weights-2-files"));
        l.add("C3  two blobs in one packed file, the second read by value (what ane4j sends on 27): " + statuses("weights-packed-2"));
        l.add("C7  32-byte I/O rows written packed read back (macOS 27: 64-byte row stride; ane4j strides them there): " + statuses("row-32B"));
        l.add("F9  Objective-C exceptions caught: " + exceptions());
        l.add("F5–F8 chip rules (ane4j.chip) vs what compiled: " + rules());
        return l;
    }

    private String noAne() { return "needs the ANE (not available: " + reason + ")"; }

    private String identifier() {
        if (!aneAvailable) return noAne();
        Optional<String> id = results.stream().map(Result::identifier).filter(s -> s != null).findFirst();
        if (id.isPresent()) {
            String s = id.get();
            return "yes: " + s.length() + " characters, " + s.split("_", -1).length + " parts (" + (s.length() > 20 ? s.substring(0, 20) + "…" : s) + ") [every compiled rung]";
        }
        Optional<Result> rejected = results.stream().filter(r -> r.error() != null && r.error().contains("hexStringIdentifier")).findFirst();
        if (rejected.isPresent()) return "NO: " + rejected.get().error() + " [" + rejected.get().probe() + "]";
        return results.stream().filter(r -> r.error() != null && r.error().matches("\\[(compile|load|evaluate)WithQoS.*")).findFirst()
                .map(r -> "yes: compiles got past it to " + r.error().substring(1, r.error().indexOf(':')) + " [" + r.probe() + "]")
                .orElse("unknown: no rung got as far as the identifier");
    }

    private String daemonCache() {
        if (!aneAvailable) return noAne();
        Optional<Result> first = find("conv"), again = find("conv-reload");
        if (again.isEmpty() || again.get().status() == Status.NOT_RUN || again.get().status() == Status.FAILED)
            return "unknown: conv-reload " + again.map(r -> r.status() + (r.error() == null ? "" : ": " + r.error())).orElse("missing");
        Result r = again.get();
        String times = String.format(Locale.ROOT, "load %.1f ms, compile %s; first compile %s ms", r.loadMs(), r.cacheHit() ? "skipped" : num(r.compileMs(), 1) + " ms",
                first.map(f -> num(f.compileMs(), 1)).orElse("-"));
        return (r.cacheHit() ? "yes: conv reloaded without compiling (" : "no: conv compiled again (") + times + ") [conv-reload]";
    }

    private String unloadDir() {
        if (!aneAvailable) return noAne();
        List<Result> seen = results.stream().filter(r -> r.dirAfterUnload() != null).toList();
        if (seen.isEmpty()) return "unknown: no loaded program was unloaded";
        List<Result> kept = seen.stream().filter(Result::dirAfterUnload).toList();
        return kept.isEmpty() ? "yes: gone after unloadWithQoS for all " + seen.size() + " unloaded programs"
                : "no: still there after unloadWithQoS for " + kept.size() + " of " + seen.size() + " (" + names(kept) + "; ane4j removed them)";
    }

    private String dialectLine() {
        if (!aneAvailable) return noAne();
        var used = results.stream().filter(r -> r.status() == Status.OK || r.status() == Status.DIFFERS).map(Result::dialect)
                .filter(d -> d != null).distinct().toList();
        return (used.isEmpty() ? "none: nothing compiled" : String.join(", ", used) + " [every compiled rung]") + "; " + host.get("dialectChoice");
    }

    private String contraction() {
        String base = statuses("matmul-k32", "matmul-k16");
        if (!aneAvailable) return base;
        Optional<Result> k16 = find("matmul-k16");
        if (k16.isPresent() && k16.get().status() == Status.DIFFERS && k16.get().allZero()) return base + " → k16 gives zeros: rule confirmed";
        if (k16.isPresent() && k16.get().status() == Status.OK) return base + " → k16 matches: not needed on this chip";
        return base;
    }

    private String cliff(String probe, String what) {
        Optional<Result> r = find(probe);
        if (r.isEmpty()) return "missing";
        Result x = r.get();
        String who = aneAvailable ? "" : chip == null ? "the reference: " : "the reference emulating " + chip + ": ";
        if (x.diff() != null && x.diff().nonFinite() > 0)
            return who + x.diff().nonFinite() + " of " + x.diff().count() + " outputs became ±inf/NaN" + (aneAvailable ? ": cliff confirmed" : "") + " [" + probe + "]";
        if (x.status() == Status.OK) return who + "no: " + what + " kept (max rel err " + sci(x.maxRelErr()) + ") [" + probe + "]";
        if (x.status() == Status.NOT_RUN) return "not run [" + probe + "]";
        return who + x.status() + (x.error() == null ? "" : ": " + shorten(x.error())) + " [" + probe + "]";
    }

    /** An error message cut for a summary line (the table and the JSON keep it whole). */
    private static String shorten(String error) {
        return error.length() <= 110 ? error : error.substring(0, 110) + "…";
    }

    private String minSurface() {
        String s = statuses("small-surface");
        return s + "; ane4j pads every surface to " + SurfacePlan.MIN_SURFACE_BYTES / 1024 + " KB (Orion: 0x1d below ~48 KB; ironmill: 16 KB)";
    }

    private String exceptions() {
        if (!aneAvailable) return noAne();
        String guard = host.get("guard");
        String how = guard == null || guard.equals("null") ? "NO guard (no clang at install time): an exception inside the framework aborts the JVM"
                : "guard " + guard;
        List<Result> thrown = results.stream().filter(r -> r.error() != null && r.error().contains("an Objective-C exception inside the framework")).toList();
        return how + "; " + (thrown.isEmpty() ? "no framework exception during the ladder"
                : thrown.size() + " caught as failed rungs, first: " + thrown.get(0).error() + " [" + thrown.get(0).probe() + "]");
    }

    /** The chip rules' predictions (errors: Apple's compiler should refuse) against what compiled. */
    private String rules() {
        if (chip == null) return "no chip family known (--chip m1..m5 checks the ladder against one)";
        List<Result> predicted = results.stream().filter(Result::ruleError).toList();
        String rules = chip + ": " + predicted.size() + " of " + results.size() + " programs break an error rule";
        if (!aneAvailable) {
            List<Result> refused = predicted.stream().filter(r -> r.status() == Status.FAILED).toList();
            return rules + (predicted.isEmpty() ? "" : " (" + names(predicted) + "); the reference emulating " + chip + " refused " + refused.size());
        }
        List<Result> ran = results.stream().filter(r -> r.status() != Status.NOT_RUN && r.status() != Status.SKIPPED
                && !(stopped != null && stopped.startsWith("ladder stopped at " + r.probe() + ":"))).toList();   // a leak is no rule's business
        List<Result> tooStrict = ran.stream().filter(r -> r.ruleError() && r.status() != Status.FAILED).toList();
        List<Result> missed = ran.stream().filter(r -> !r.ruleError() && r.status() == Status.FAILED).toList();
        long agreed = ran.size() - tooStrict.size() - missed.size();
        return rules + "; agreed with Apple's compiler on " + agreed + " of " + ran.size()
                + (tooStrict.isEmpty() ? "" : "; compiled although a rule says no: " + names(tooStrict) + " (" + tooStrict.get(0).violations().stream()
                        .filter(v -> v.startsWith("error")).findFirst().orElse("") + ")")
                + (missed.isEmpty() ? "" : "; failed with no rule predicting it: " + names(missed));
    }

    /** {@code name ok, name failed: msg, …} for these probes. */
    private String statuses(String... probes) {
        List<String> parts = new ArrayList<>();
        for (String p : probes) {
            Optional<Result> r = find(p);
            parts.add(p + " " + r.map(x -> x.status() + (x.status() == Status.OK || x.status() == Status.NOT_RUN || x.error() == null ? ""
                    : " (" + shorten(x.error()) + ")")).orElse("missing"));
        }
        return String.join(", ", parts);
    }

    // --- the verdict ---

    /** A few lines for a bug report: chip, OS, what passed, the first failure with its message, where the ladder stopped. */
    List<String> verdict() {
        List<String> v = new ArrayList<>();
        v.add("ane4j doctor: chip " + host.get("chip") + (chip != null && !aneAvailable ? " (rules and cliffs of " + chip + " emulated)" : "") + ", " + host.get("os") + ", JDK " + host.get("jdk") + ", model " + host.get("model")
                + (aneAvailable ? ", dialect " + String.valueOf(host.getOrDefault("dialectChoice", host.get("dialect"))).replaceFirst(":.*", "") : "")
                + (host.containsKey("aneVersion") ? ", AppleNeuralEngine " + host.get("aneVersion").replaceFirst(" \\(CFBundleVersion.*", "") : ""));
        if (!aneAvailable) v.add("ANE not available (" + reason + "): only the reference half ran");
        List<Result> rungs = rungs();
        List<Result> ok = rungs.stream().filter(Result::passed).toList();
        v.add("passed " + ok.size() + " of " + rungs.size() + " rungs" + (ok.isEmpty() ? "" : " (" + names(ok) + ")"));
        results.stream().filter(r -> r.failedRung() && r.status() != Status.NOT_RUN || stopped != null && stopped.startsWith("ladder stopped at " + r.probe() + ":")).findFirst()
                .ifPresentOrElse(r -> v.add("first failure: " + r.probe() + " — " + r.status() + (r.error() == null ? "" : ": " + r.error())),
                        () -> v.add("no rung failed"));
        if (stopped != null) v.add(stopped + " (" + results.stream().filter(r -> r.status() == Status.NOT_RUN).count() + " not run)");
        List<String> odd = results.stream().filter(r -> r.kind() == Probes.Kind.PROBE && r.status() != Status.OK && r.status() != Status.NOT_RUN)
                .map(r -> r.probe() + " " + r.status()).toList();
        v.add("probes: " + (odd.isEmpty() ? "all matched the reference" : String.join(", ", odd)));
        // where the process ran (macOS 27 restricts background ANE access, docs/macos27-ane.md C10) and the worker rung
        if (host.containsKey("context")) v.add("context: " + host.get("context"));
        if (host.containsKey("worker")) v.add("worker: " + host.get("worker"));
        if (host.containsKey("refused")) v.add("refused before compiling: " + host.get("refused"));
        return v;
    }

    /** Consecutive names shortened: the first three and the count of the rest. */
    private static String names(List<Result> rs) {
        if (rs.size() <= 4) return rs.stream().map(Result::probe).collect(Collectors.joining(", "));
        return rs.stream().limit(3).map(Result::probe).collect(Collectors.joining(", ")) + " … " + rs.get(rs.size() - 1).probe();
    }

    // --- the JSON report ---

    String json() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("tool", "ane4j doctor");
        m.put("host", host);
        m.put("aneAvailable", aneAvailable);
        m.put("aneUnavailableReason", reason);
        List<Map<String, Object>> probes = new ArrayList<>();
        for (Result r : results) {
            OutputDiff d = r.diff();
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("probe", r.probe());
            p.put("kind", r.kind() == Probes.Kind.RUNG ? "rung" : "probe");
            p.put("assumption", r.assumption());
            p.put("rule", r.rule());
            p.put("status", r.status().toString());
            p.put("backend", r.backend());
            p.put("reference", r.reference());
            p.put("compileMs", r.compileMs());
            p.put("loadMs", r.loadMs());
            p.put("evalMs", r.evalMs());
            p.put("maxAbsErr", d == null ? null : d.maxAbs());
            p.put("maxRelErr", d == null ? null : r.maxRelErr());
            p.put("meanAbsErr", d == null ? null : d.meanAbs());
            p.put("maxAbsRef", d == null ? null : d.maxRef());
            p.put("nonFinite", d == null ? null : d.nonFinite());
            p.put("allZero", r.allZero());
            p.put("dialect", r.dialect());
            p.put("identifier", r.identifier());
            p.put("origin", r.origin());
            p.put("cacheHit", r.cacheHit());
            p.put("dirAfterUnload", r.dirAfterUnload());
            p.put("ruleError", r.ruleError());
            p.put("violations", r.violations());
            p.put("passed", r.passed());
            p.put("error", r.error());
            probes.add(p);
        }
        m.put("probes", probes);
        m.put("assumptions", assumptions());
        m.put("verdict", verdict());
        m.put("stopped", stopped);
        m.put("chip", chip == null ? null : chip.name());
        Map<String, Object> tolerance = new LinkedHashMap<>();
        tolerance.put("atol", OutputDiff.FP16_ATOL);
        tolerance.put("rtol", OutputDiff.FP16_RTOL);
        m.put("tolerance", tolerance);
        m.put("passed", passed());
        return Json.pretty(m);
    }
}
