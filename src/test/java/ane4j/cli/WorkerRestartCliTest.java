package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ane4j.model.Llama2Bin;
import ane4j.model.ModelConfig;
import ane4j.model.Parameters;
import ane4j.model.TokenShard;
import ane4j.worker.Supervisor;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's qwen3-0.6b run through the supervised worker, in small: {@code ane4j train} of a model with a vocabulary
 * over 65536 from uint32 tokens, in a worker with its own heap, the worker SIGKILLed once step 1's checkpoint is on
 * disk. The new worker resumes from it; losses and the exported weights equal the same run in process, and the worker
 * has exited before the launcher reads the weights for the sample and the export (at full size the two would add up
 * to 11 + 2.4 GB).
 */
@Tag("process")
class WorkerRestartCliTest {
    @TempDir Path tmp;

    private static final ModelConfig WIDE = ModelConfig.llama("wide", 32, 64, 1, 2, 70_000, 8);

    private String[] args(Path runDir, String... more) throws Exception {
        Path bin = tmp.resolve("wide.bin"), tokens = tmp.resolve("tok.u32");
        if (Files.notExists(bin)) {
            Llama2Bin.write(bin, Parameters.init(WIDE, 3));
            int[] t = new int[400];
            for (int i = 0; i < t.length; i++) t[i] = 65_000 + (i * 37) % 5_000;   // many ids above 65535
            TokenShard.write(tokens, t, TokenShard.Dtype.UINT32);
        }
        var a = new java.util.ArrayList<>(java.util.List.of("--init", bin.toString(), "--data", tokens.toString(), "--data-dtype", "uint32",
                "--steps", "40", "--checkpoint-every", "1", "--keep", "2", "--eval-every", "0", "--backend", "ref", "--run-dir", runDir.toString()));
        a.addAll(java.util.List.of(more));
        return a.toArray(String[]::new);
    }

    /** Worker JVMs this test JVM has running; other test classes in the same JVM may have left theirs. */
    private static java.util.stream.Stream<ProcessHandle> workers() {
        return ProcessHandle.current().children().filter(p -> commandLine(p).contains(Supervisor.MAIN_CLASS));
    }

    // ProcessHandle.Info.commandLine() stops at 4096 characters on Linux (measured with JDK 25), before the main class
    // once the class path is longer; /proc holds all of it
    private static String commandLine(ProcessHandle p) {
        try {
            return java.nio.file.Files.readString(Path.of("/proc/" + p.pid() + "/cmdline"), StandardCharsets.ISO_8859_1).replace('\0', ' ');
        } catch (java.io.IOException | RuntimeException e) {
            return p.info().commandLine().orElse("");
        }
    }

    /** The worker of this test's run: one that was not running before it started. */
    private static java.util.Optional<ProcessHandle> worker(java.util.Set<Long> before) {
        return workers().filter(p -> !before.contains(p.pid())).findFirst();
    }

    private static double[] losses(Path runDir) {
        return ane4j.run.MetricsLog.read(runDir.resolve("metrics.jsonl"), Long.MAX_VALUE, w -> {}).stream().mapToDouble(m -> m.loss()).toArray();
    }

    @Test
    void aKilledWorkerResumesFromItsCheckpointAndExitsBeforeTheLauncherReadsTheWeights() throws Exception {
        Path local = tmp.resolve("local"), supervised = tmp.resolve("supervised");
        var ref = RunFolderTest.train(args(local, "--in-process"));
        assertEquals(0, ref.code(), ref.all());

        java.util.Set<Long> before = workers().map(ProcessHandle::pid).collect(java.util.stream.Collectors.toSet());
        // the launcher's output, watched for the line it prints once it has the weights ("model wide: …")
        var text = new ByteArrayOutputStream();
        AtomicReference<String> workerAtModelLine = new AtomicReference<>();
        var out = new PrintStream(new java.io.OutputStream() {
            @Override public synchronized void write(int b) { write(new byte[] {(byte) b}, 0, 1); }

            @Override public synchronized void write(byte[] b, int off, int len) {
                text.write(b, off, len);
                if (workerAtModelLine.get() == null && text.toString(StandardCharsets.UTF_8).contains("\nmodel wide: "))
                    workerAtModelLine.set(worker(before).map(p -> "worker " + p.pid() + " alive").orElse("none"));
            }
        }, true, StandardCharsets.UTF_8);
        var err = new ByteArrayOutputStream();
        var supervisedArgs = new java.util.ArrayList<>(java.util.List.of("train"));
        supervisedArgs.addAll(java.util.List.of(args(supervised, "--heap", "256m")));
        AtomicReference<Integer> code = new AtomicReference<>();
        Thread launcher = Thread.ofPlatform().start(() -> code.set(Main.run(supervisedArgs.toArray(String[]::new), out, new PrintStream(err, true, StandardCharsets.UTF_8))));
        Path first = supervised.resolve("checkpoints/ckpt-00000001.ane4j");
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (Files.notExists(first) && launcher.isAlive() && System.nanoTime() < deadline) Thread.sleep(1);
        ProcessHandle w = worker(before).orElseThrow(() -> new AssertionError("no worker running at step 1: " + text.toString(StandardCharsets.UTF_8)));
        w.destroyForcibly();
        launcher.join(120_000);
        assertFalse(launcher.isAlive(), "the run did not end");
        String printed = text.toString(StandardCharsets.UTF_8);
        assertEquals(0, code.get(), printed + err.toString(StandardCharsets.UTF_8));
        assertTrue(printed.contains("worker restarted: killed by SIGKILL (exit 137) — restored step "), printed);
        assertTrue(printed.contains("worker: backend ref, ") && printed.contains(", 1 restart\n"), printed);
        assertArrayEquals(losses(local), losses(supervised), 0.0, "the same losses as in process");
        assertArrayEquals(Files.readAllBytes(local.resolve("export/hf/model.safetensors")), Files.readAllBytes(supervised.resolve("export/hf/model.safetensors")),
                "the same weights as in process");
        assertEquals("none", workerAtModelLine.get(), "the worker holds the training state: it exits before the launcher loads the weights");
    }
}
