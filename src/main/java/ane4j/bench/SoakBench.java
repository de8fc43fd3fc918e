package ane4j.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * {@code ane4j bench soak}: a long run of tiny steps ({@code ane4j train --model tiny --steps 100000}, supervised worker)
 * in a launcher JVM of its own, started as bin/ane4j starts it, with the launcher's and the worker's resident memory,
 * threads and open descriptors read from /proc at the first step and at the last. Flat figures mean that nothing grows
 * with the step count (the 2026-12-05 reliability report, F52: the launcher grew 77 -> 162 MB over 20,000 steps).
 * Linux only (/proc). Not a test: it takes minutes; docs/reliability.md has its figures.
 */
final class SoakBench {
    private SoakBench() {}

    /** RSS (kB), threads and open descriptors of one process, from /proc/PID/status and /proc/PID/fd. */
    record Sample(long pid, long rssKb, int threads, int fds) {
        static Sample of(long pid) {
            try {
                long rss = -1;
                int threads = -1;
                for (String l : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                    if (l.startsWith("VmRSS:")) rss = Long.parseLong(l.replaceAll("\\D", ""));
                    else if (l.startsWith("Threads:")) threads = Integer.parseInt(l.replaceAll("\\D", ""));
                }
                int fds;
                try (Stream<Path> s = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
                    fds = (int) s.count();
                }
                // a process that is exiting has let go of its memory and descriptors: not a sample of the run
                return rss > 0 && fds > 0 ? new Sample(pid, rss, threads, fds) : null;
            } catch (IOException | RuntimeException e) {
                return null;   // the process has ended
            }
        }
    }

    /**
     * The Java heap in use after a full GC (kB) of process {@code pid}, through jcmd (GC.run, then GC.heap_info): what
     * the process really keeps, where RSS also counts garbage not yet collected and heap the JVM has not given back. -1
     * when jcmd is missing or cannot attach.
     */
    static long liveHeapKb(long pid) {
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        try {
            if (new ProcessBuilder(jcmd.toString(), Long.toString(pid), "GC.run").redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor() != 0) return -1;
            Process p = new ProcessBuilder(jcmd.toString(), Long.toString(pid), "GC.heap_info").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor();
            var m = java.util.regex.Pattern.compile("used (\\d+)K").matcher(out);
            return m.find() ? Long.parseLong(m.group(1)) : -1;
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private static long lines(Path file) {
        try (Stream<String> s = Files.lines(file)) {
            return s.count();
        } catch (IOException | java.io.UncheckedIOException e) {
            return 0;
        }
    }

    static BenchResult run(BenchOptions o) throws IOException, InterruptedException {
        if (!Files.isDirectory(Path.of("/proc/self/fd")))
            throw new IllegalArgumentException("[bench] soak reads /proc (Linux); on macOS watch the run with `ps -o rss,nlwp` instead");
        long steps = Long.parseLong(o.get("steps", o.flag("quick") ? "2000" : "100000"));
        Path runDir = Files.createTempDirectory("ane4j-soak-");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmn64m", "-XX:+ExitOnOutOfMemoryError"));
        String heap = o.get("launcher-heap", "");
        if (!heap.isEmpty()) cmd.add("-Xmx" + heap);
        cmd.addAll(List.of("--enable-native-access=ALL-UNNAMED", "--add-modules", "jdk.incubator.vector", "-Djava.awt.headless=true",
                "-cp", System.getProperty("java.class.path"), "ane4j.cli.Main", "train", "--model", "tiny", "--steps", Long.toString(steps),
                "--checkpoint-every", "1000", "--eval-every", "1000", "--seed", "7", "--run-dir", runDir.resolve("run").toString()));
        if (o.has("backend")) cmd.addAll(List.of("--backend", o.get("backend", "")));
        Path log = runDir.resolve("launcher.log");
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        Path metrics = runDir.resolve("run/metrics.jsonl");
        Sample l0 = null, w0 = null, l1 = null, w1 = null;
        long workerPid = -1, launcherPeak = 0, workerPeak = 0, nextCount = System.nanoTime();
        long[] live = {-1, -1, -1, -1};   // launcher start, end; worker start, end (kB after a full GC)
        while (p.isAlive()) {
            Optional<ProcessHandle> worker = p.toHandle().children().findFirst();
            if (worker.isPresent()) workerPid = worker.get().pid();
            Sample l = Sample.of(p.pid()), w = workerPid > 0 ? Sample.of(workerPid) : null;
            if (l0 == null && w != null && Files.exists(metrics) && Files.size(metrics) > 0) {
                l0 = l;
                w0 = w;
                live[0] = liveHeapKb(p.pid());
                live[2] = liveHeapKb(workerPid);
            }
            // near the end (98% of the steps, counted every 5 s): the live heaps once more
            if (l0 != null && live[1] < 0 && System.nanoTime() > nextCount) {
                nextCount = System.nanoTime() + 5_000_000_000L;
                if (lines(metrics) >= steps * 98 / 100) {
                    live[1] = liveHeapKb(p.pid());
                    live[3] = liveHeapKb(workerPid);
                }
            }
            if (l != null && w != null) {   // the last sample while both live: the end of the run
                l1 = l;
                w1 = w;
                launcherPeak = Math.max(launcherPeak, l.rssKb());
                workerPeak = Math.max(workerPeak, w.rssKb());
            }
            p.waitFor(500, TimeUnit.MILLISECONDS);
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        String tail = String.join("\n", Files.readAllLines(log, StandardCharsets.UTF_8).stream().filter(s -> !s.startsWith("WARNING")).toList());
        if (p.exitValue() != 0 || l0 == null || l1 == null)
            throw new IllegalStateException("[bench] the soak run ended with status " + p.exitValue() + " before it could be sampled:\n" + tail);
        BenchResult r = new BenchResult("soak", "soak: " + steps + " tiny steps (supervised worker), at the first step and at the last",
                List.of("process", "when", "RSS MB", "live heap MB", "threads", "fds"));
        r.row("launcher", "start", l0.rssKb() / 1024.0, live[0] / 1024.0, l0.threads(), l0.fds());
        r.row("launcher", "end", l1.rssKb() / 1024.0, live[1] / 1024.0, l1.threads(), l1.fds());
        r.row("worker", "start", w0.rssKb() / 1024.0, live[2] / 1024.0, w0.threads(), w0.fds());
        r.row("worker", "end", w1.rssKb() / 1024.0, live[3] / 1024.0, w1.threads(), w1.fds());
        r.put("steps", steps).put("seconds", Math.round(seconds * 10) / 10.0)
                .put("launcherRssGrowthMB", (l1.rssKb() - l0.rssKb()) / 1024.0).put("workerRssGrowthMB", (w1.rssKb() - w0.rssKb()) / 1024.0)
                .put("launcherPeakRssMB", launcherPeak / 1024.0).put("workerPeakRssMB", workerPeak / 1024.0);
        r.meta("launcherHeap", heap.isEmpty() ? "default" : heap);
        r.note("live heap: used after a full GC (jcmd GC.run + GC.heap_info) at the first step and at 98% of the steps; -1: jcmd could not attach");
        r.note("run folder " + runDir.resolve("run") + " (delete it when done)");
        return r;
    }
}
