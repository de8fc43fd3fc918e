package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

@Tag("process")
class TrainCommandTest {
    @TempDir Path dir;

    private record Run(int code, String out, String err) {}

    private static Run run(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void trainsWritesThePlotAndASample() {
        Run r = run("train", "--steps", "12", "--run-dir", dir.toString(), "--backend", "ref");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("step 12/12"), r.out());
        assertTrue(r.out().matches("(?s).*loss \\d+\\.\\d+ → \\d+\\.\\d+ .*"), r.out());
        assertTrue(r.out().contains("sample: Once upon a time"), r.out());
        assertTrue(Files.exists(dir.resolve("loss.png")));
        assertTrue(Files.exists(dir.resolve("metrics.jsonl")));
    }

    @Test
    void badInputIsOneLineWithExitCode1() {
        Run r = run("train", "--model", "nosuch", "--run-dir", dir.toString());
        assertEquals(1, r.code());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertTrue(r.err().startsWith("ane4j train: [config] unknown model 'nosuch'"), r.err());
        r = run("train", "--init", dir.resolve("missing.bin").toString(), "--run-dir", dir.toString());
        assertEquals(1, r.code());
        assertTrue(r.err().contains("missing.bin: no such file"), r.err());
        r = run("train", "--compile-budget", "abc", "--run-dir", dir.toString());
        assertEquals(1, r.code());
        assertTrue(r.err().startsWith("ane4j train: [train] compileBudget = 'abc' is not a whole number ≥ 1"), r.err());
        r = run("train", "--heap", "1q", "--run-dir", dir.toString());
        assertEquals(1, r.code());
        assertTrue(r.err().startsWith("ane4j train: [train] heap = '1q' is not a JVM heap size"), r.err());
    }

    private static double[] losses(Path runDir) {
        return ane4j.run.MetricsLog.read(runDir.resolve("metrics.jsonl"), Long.MAX_VALUE, w -> {}).stream().mapToDouble(m -> m.loss()).toArray();
    }

    @Test
    void fromRecordRerunsTheRecordedRunWithTheFlagsOverIt() throws Exception {
        Run a = run("train", "--steps", "3", "--seed", "5", "--lr", "1e-3", "--eval-every", "0", "--in-process", "--backend", "ref", "--run-dir", dir.resolve("a").toString());
        assertEquals(0, a.code(), a.err());
        Path record = dir.resolve("a/run.json");
        assertTrue(Files.readString(record).contains("\"options\""), Files.readString(record));
        Run b = run("train", "--from-record", record.toString(), "--in-process", "--run-dir", dir.resolve("b").toString());
        assertEquals(0, b.code(), b.err());
        org.junit.jupiter.api.Assertions.assertArrayEquals(losses(dir.resolve("a")), losses(dir.resolve("b")), 0.0, "the same run again");
        Run c = run("train", "--from-record", record.toString(), "--seed", "6", "--in-process", "--run-dir", dir.resolve("c").toString());
        assertEquals(0, c.code(), c.err());
        assertTrue(Files.readString(dir.resolve("c/run.txt")).contains("seed = 6"), "the flag is over the record");
        Run bad = run("train", "--from-record", dir.resolve("nothing.json").toString());
        assertEquals(1, bad.code());
        assertTrue(bad.err().startsWith("ane4j train: [run] cannot read ") && bad.err().strip().lines().count() == 1, bad.err());
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> recordedOptions(Path runDir) throws Exception {
        return (Map<String, String>) ((Map<String, Object>) ane4j.model.Json.parse(Files.readString(runDir.resolve("run.json")))).get("options");
    }

    private static Map<String, String> placement(Path runDir) throws Exception {
        Map<String, String> m = new java.util.LinkedHashMap<>(recordedOptions(runDir));
        m.keySet().retainAll(List.of("compileBudget", "inProcess", "heap"));
        return m;
    }

    /**
     * run.json records where and how the run ran (compile budget, worker or this JVM, the worker's heap) beside the
     * training keys, so a rerun from it runs in the same place with the same settings and the same losses; a flag given
     * with the record is over it. In process, static weights recompile after every update, so a budget of 26 replaces
     * the backend every few steps: the rerun restarts as often.
     */
    @Test
    @SuppressWarnings("unchecked")
    void fromRecordRerunsTheBudgetPlacementAndHeap() throws Exception {
        Path a = dir.resolve("worker-a"), b = dir.resolve("worker-b");
        Run first = run("train", "--steps", "2", "--compile-budget", "50", "--heap", "300m", "--eval-every", "0", "--backend", "ref", "--run-dir", a.toString());
        assertEquals(0, first.code(), first.err());
        assertEquals(Map.of("compileBudget", "50", "inProcess", "false", "heap", "300m"), placement(a));
        assertTrue(Files.readString(a.resolve("run.txt")).contains("compileBudget = 50\ninProcess = false\nheap = 300m\n"), Files.readString(a.resolve("run.txt")));
        assertTrue(first.out().contains("in a supervised worker JVM"), first.out());
        Run again = run("train", "--from-record", a.resolve("run.json").toString(), "--run-dir", b.toString());
        assertEquals(0, again.code(), again.err());
        assertTrue(again.out().contains("in a supervised worker JVM"), again.out());
        assertEquals(placement(a), placement(b));
        var machine = (Map<String, Object>) ((Map<String, Object>) ane4j.model.Json.parse(Files.readString(b.resolve("run.json")))).get("machine");
        assertTrue(((Number) machine.get("maxHeapBytes")).longValue() <= 300L << 20, "the rerun's worker ran with -Xmx300m: " + machine);
        org.junit.jupiter.api.Assertions.assertArrayEquals(losses(a), losses(b), 0.0, "the same run again");

        Path c = dir.resolve("local-c"), d = dir.resolve("local-d");
        Run local = run("train", "--steps", "3", "--weights", "static", "--compile-budget", "26", "--in-process", "--eval-every", "0", "--backend", "ref",
                "--run-dir", c.toString());
        assertEquals(0, local.code(), local.err());
        assertEquals(Map.of("compileBudget", "26", "inProcess", "true", "heap", ""), placement(c));
        Run localAgain = run("train", "--from-record", c.resolve("run.json").toString(), "--run-dir", d.toString());
        assertEquals(0, localAgain.code(), localAgain.err());
        assertTrue(localAgain.out().contains("(in process)"), localAgain.out());
        var restartLine = java.util.regex.Pattern.compile("in process: backend ref, \\d+ restarts? at the compile budget");
        var said = restartLine.matcher(local.out());
        assertTrue(said.find(), local.out());
        assertTrue(localAgain.out().contains(said.group()), localAgain.out());
        assertEquals(placement(c), placement(d));
        org.junit.jupiter.api.Assertions.assertArrayEquals(losses(c), losses(d), 0.0, "the same in-process run again");

        Path auto = dir.resolve("auto");
        Run automatic = run("train", "--steps", "1", "--eval-every", "0", "--in-process", "--run-dir", auto.toString());
        assertEquals(0, automatic.code(), automatic.err());
        assertEquals("", recordedOptions(auto).get("backend"), "recorded as given: automatic");
        assertEquals("ref", ane4j.run.RunSpec.of(ane4j.run.RunSpec.overRecord(auto.resolve("run.json"), Map.of())).train().backend(),
                "a rerun gets the backend the run had");
        var over = ane4j.run.RunSpec.of(ane4j.run.RunSpec.overRecord(a.resolve("run.json"), Map.of("heap", "400m", "in-process", "true")));
        assertEquals("400m", over.heap());
        assertTrue(over.inProcess());
        assertEquals(50L, over.compileBudget(), "the record's, where no flag is given");
        assertEquals(2, over.train().steps());
    }

    @Test
    void helpListsEveryKeyOfTheTable() {
        Run r = run("train", "--help");
        assertEquals(0, r.code(), r.err());
        for (var k : ane4j.run.RunSpec.KEYS.keys()) assertTrue(r.out().contains(k.flag()), k.flag() + " in\n" + r.out());
        Run unknown = run("train", "--stepz", "3");
        assertEquals(1, unknown.code());
        assertTrue(unknown.err().startsWith("ane4j train: [train] unknown option '--stepz' (options: model, init, "), unknown.err());
        Run camel = run("train", "--weightDecay=0", "--steps", "0");
        assertTrue(camel.err().startsWith("ane4j train: [train] steps must be at least 1, got 0"), "camelCase and --key=value are read: " + camel.err());
    }
}
