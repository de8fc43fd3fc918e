package ane4j.cli;

import ane4j.backend.TensorBuffer;
import ane4j.mil.DType;
import ane4j.mil.TensorType;
import ane4j.train.GraphRunFixture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ane4j train --graph FILE.mil --data DIR …}: the preset runs' command and run folder (metrics.jsonl, run.json,
 * checkpoints, loss.png; a rerun with --resume continues), plus the trained parameters as .npy; bad input in one line.
 */
@Tag("process")
class GraphTrainCommandTest {
    @TempDir Path dir;

    int cli(ByteArrayOutputStream out, ByteArrayOutputStream err, String... args) {
        return Main.run(args, new PrintStream(out), new PrintStream(err));
    }

    @Test
    void trainsAGraphFromTheCommandLineAndResumes() throws Exception {
        Path graph = GraphRunFixture.write(dir);
        Path run = dir.resolve("run");
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        String[] args = {"train", "--graph", graph.toString(), "--data", dir.resolve("data").toString(), "--steps", "60", "--lr", "0.05", "--eval-every", "20",
                "--backend", "ref", "--in-process", "--run-dir", run.toString()};
        assertEquals(0, cli(out, err, args), err.toString() + out);
        String o = out.toString();
        assertTrue(o.contains("ane4j train: mlp on ref (in process), 60 steps"), o);
        assertTrue(o.contains("graph mlp.mil: 114 parameters; loss "), o);
        assertTrue(o.contains("step 60/60  loss ") && !o.contains("tok/s") && !o.contains("tokens/s"), "a graph's samples are not tokens: " + o);
        assertTrue(o.contains("trained w1, b1, w2, b2 → " + run.resolve("params")), o);
        List<String> lines = Files.readAllLines(run.resolve("metrics.jsonl"));
        assertEquals(60, lines.size());
        for (String f : List.of("params/w1.npy", "params/b2.npy", "loss.png", "run.json", "run.txt")) assertTrue(Files.exists(run.resolve(f)), f);
        TensorBuffer w1 = Npy.read(run.resolve("params/w1.npy"), TensorType.of(DType.FP32, 16, 4), "w1");
        assertTrue(w1.get(0) != 0f);
        double first = Double.parseDouble(lines.get(0).replaceAll(".*\"loss\":([-0-9.eE]+).*", "$1"));
        double val = Double.parseDouble(lines.get(59).replaceAll(".*\"valLoss\":([-0-9.eE]+).*", "$1"));
        assertTrue(val < first * 0.7, "validation loss " + val + " after 60 steps, first loss " + first);
        // the same folder with more steps and --resume continues from the last checkpoint
        args[6] = "80";
        String[] resume = java.util.Arrays.copyOf(args, args.length + 1);
        resume[args.length] = "--resume";
        out.reset();
        assertEquals(0, cli(out, err, resume), err.toString());
        assertEquals(80, Files.readAllLines(run.resolve("metrics.jsonl")).size());
        assertTrue(Files.readString(run.resolve("run.txt")).contains("resumed at step 60"), Files.readString(run.resolve("run.txt")));
    }

    private static double[] losses(Path runDir) {
        return ane4j.run.MetricsLog.read(runDir.resolve("metrics.jsonl"), Long.MAX_VALUE, w -> {}).stream().mapToDouble(m -> m.loss()).toArray();
    }

    /** Worker JVMs of this test JVM that were not running before. */
    private static java.util.Optional<ProcessHandle> newWorker(java.util.Set<Long> before) {
        return ProcessHandle.current().children().filter(p -> !before.contains(p.pid())).filter(p -> {
            try {
                return Files.readString(Path.of("/proc/" + p.pid() + "/cmdline"), java.nio.charset.StandardCharsets.ISO_8859_1).contains(ane4j.worker.Supervisor.MAIN_CLASS);
            } catch (java.io.IOException | RuntimeException e) {
                return p.info().commandLine().orElse("").contains(ane4j.worker.Supervisor.MAIN_CLASS);
            }
        }).findFirst();
    }

    /** In a supervised worker (the default), SIGKILLed once its step-5 checkpoint is on disk: the same losses and parameters as in process. */
    @Test
    void aKilledWorkerResumesTheGraphRunBitIdentical() throws Exception {
        Path graph = GraphRunFixture.write(dir);
        List<String> common = List.of("train", "--graph", graph.toString(), "--data", dir.resolve("data").toString(), "--steps", "1000", "--lr", "0.05",
                "--checkpoint-every", "5", "--keep", "2", "--backend", "ref");
        Path local = dir.resolve("local"), supervised = dir.resolve("supervised");
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        List<String> inProcess = new java.util.ArrayList<>(common);
        inProcess.addAll(List.of("--in-process", "--run-dir", local.toString()));
        assertEquals(0, cli(out, err, inProcess.toArray(String[]::new)), err.toString());
        java.util.Set<Long> before = ProcessHandle.current().children().map(ProcessHandle::pid).collect(java.util.stream.Collectors.toSet());
        List<String> inWorker = new java.util.ArrayList<>(common);
        inWorker.addAll(List.of("--heap", "256m", "--run-dir", supervised.toString()));
        var wout = new ByteArrayOutputStream();
        var werr = new ByteArrayOutputStream();
        var code = new java.util.concurrent.atomic.AtomicReference<Integer>();
        Thread launcher = Thread.ofPlatform().start(() -> code.set(cli(wout, werr, inWorker.toArray(String[]::new))));
        Path first = supervised.resolve("checkpoints/ckpt-00000005.ane4j");
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (Files.notExists(first) && launcher.isAlive() && System.nanoTime() < deadline) Thread.sleep(1);
        ProcessHandle w = newWorker(before).orElseThrow(() -> new AssertionError("no worker running at step 5: " + wout));
        w.destroyForcibly();
        launcher.join(120_000);
        String printed = wout.toString();
        assertEquals(0, code.get(), printed + werr);
        assertTrue(printed.contains("worker restarted: killed by SIGKILL (exit 137) — restored step "), printed);
        org.junit.jupiter.api.Assertions.assertArrayEquals(losses(local), losses(supervised), 0.0, "the same losses as in process");
        for (String p : List.of("w1", "b1", "w2", "b2"))
            org.junit.jupiter.api.Assertions.assertArrayEquals(Files.readAllBytes(local.resolve("params/" + p + ".npy")), Files.readAllBytes(supervised.resolve("params/" + p + ".npy")), p);
    }

    /** --logits and --labels: the CPU loss head from the command line, in a worker, with the trained parameters as .npy. */
    @Test
    void trainsAGraphEndingAtItsLogitsWithTheCpuLossHead() throws Exception {
        GraphRunFixture.writeWithLogits(dir);
        Path run = dir.resolve("run");
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int rc = cli(out, err, "train", "--graph", dir.resolve("logits.mil").toString(), "--logits", "logits", "--labels", "labels", "--data", dir.resolve("data").toString(),
                "--steps", "40", "--lr", "0.05", "--backend", "ref", "--heap", "256m", "--run-dir", run.toString());
        assertEquals(0, rc, err.toString() + out);
        assertTrue(out.toString().contains("trained w1, b1, w2, b2 → " + run.resolve("params")), out.toString());
        double[] l = losses(run);
        assertEquals(40, l.length);
        assertTrue(l[39] < l[0], "learns: " + l[0] + " → " + l[39]);
        assertTrue(Files.readString(run.resolve("run.txt")).contains("loss = cross-entropy(logits, labels) on the CPU"));
        // a logits name that is not an output: one line
        err.reset();
        rc = cli(out, err, "train", "--graph", dir.resolve("logits.mil").toString(), "--logits", "scores", "--labels", "labels", "--data", dir.resolve("data").toString(),
                "--in-process", "--run-dir", dir.resolve("bad").toString());
        assertEquals(1, rc);
        assertEquals(1, err.toString().strip().lines().count(), err.toString());
        assertTrue(err.toString().contains("[train] logits = scores is not an output of graph "), err.toString());
    }

    @Test
    void badInputIsOneLine() throws Exception {
        Path graph = GraphRunFixture.write(dir);
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int rc = cli(out, err, "train", "--graph", graph.toString(), "--data", dir.resolve("data").toString(), "--params", "w1,w", "--in-process",
                "--run-dir", dir.resolve("run").toString());
        assertEquals(1, rc);
        assertEquals(1, err.toString().strip().lines().count(), err.toString());
        assertTrue(err.toString().contains("[train] params: 'w' is not an input of graph " + graph), err.toString());
        err.reset();
        rc = cli(out, err, "train", "--graph", graph.toString(), "--data", dir.resolve("data").toString(), "--model", "stories15m", "--run-dir", dir.resolve("run").toString());
        assertEquals(1, rc);
        assertEquals(1, err.toString().strip().lines().count(), err.toString());
        assertTrue(err.toString().contains("model = stories15m is a setting of the preset transformer"), err.toString());
    }
}
