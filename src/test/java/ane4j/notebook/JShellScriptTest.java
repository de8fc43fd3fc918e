package ane4j.notebook;

import ane4j.session.*;
import static org.junit.jupiter.api.Assertions.*;

import ane4j.backend.ref.RefBackend;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * The notebook API from plain jshell (JDK 25, default remote execution) with the documented start line:
 * {@code jshell --class-path CP -R--enable-native-access=ALL-UNNAMED -R--add-modules=jdk.incubator.vector IMPORTS script}, IMPORTS
 * being the kernel's imports as {@code bin/ane4j jshell} gives them (printed by {@link Ane4jExtension#main}).
 * The script's default session is the supervised worker; its training run must give the same losses as the same run
 * in this JVM (in-process session).
 */
@Tag("process")
class JShellScriptTest {
    @TempDir
    Path dir;

    @Test
    void jshellScriptBuildsCompilesRunsAndTrains() throws Exception {
        Path jshell = Path.of(System.getProperty("java.home"), "bin", "jshell");
        assertTrue(Files.isExecutable(jshell), "JDK without jshell: " + jshell);
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        Path script = dir.resolve("script.jsh"), imports = Files.writeString(dir.resolve("imports.jsh"), Ane4jExtension.importSnippet(true));
        Files.writeString(script, """
                var g = Mil.program().function("main", f -> f.output(f.named("y", f.relu(f.input("x", Mil.fp16(1, 3, 1, 1)))))).build();
                var k = Ane.compile(g);
                System.out.println("relu " + Arrays.toString(k.run(-1f, 0.5f, 2f)));
                var run = Ane.train("steps = 5; seed = 21; backend = ref; runDir = %s");
                System.out.println("losses " + Arrays.toString(run.losses()));
                System.out.println("text " + Ane.generate("Once upon a time", 8, 0.8f, 0.9f, 3).length());
                System.out.println("worker " + Ane.status().worker());
                /exit
                """.formatted(dir.resolve("run").toString().replace("\\", "\\\\")));
        JupyterClientTest.Result r = JupyterClientTest.exec(List.of(jshell.toString(), "--class-path", cp,
                "-R--enable-native-access=ALL-UNNAMED", "-R--add-modules=jdk.incubator.vector", "-R-Djava.awt.headless=true",
                imports.toString(), script.toString()), Map.of(), 300);
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.out().contains("relu [0.0, 0.5, 2.0]"), r.out());
        String line = r.out().lines().filter(l -> l.startsWith("losses ")).findFirst().orElseThrow(() -> new AssertionError(r.out()));
        double[] there = Arrays.stream(line.substring(8, line.length() - 1).split(", ")).mapToDouble(Double::parseDouble).toArray();
        double[] here = TrainingRun.start(new LocalSession(new RefBackend()), "steps = 5; seed = 21; backend = ref; runDir = " + dir.resolve("here")).await().losses();
        assertArrayEquals(here, there, "the jshell run and this JVM's run give the same losses");
        assertTrue(r.out().lines().anyMatch(l -> l.startsWith("text ") && Integer.parseInt(l.substring(5)) > 16), r.out());
        assertFalse(r.out().contains("Exception"), r.out());
        assertTrue(r.out().lines().anyMatch(l -> l.startsWith("worker supervised JVM, pid ")), "the script's default session is the worker:\n" + r.out());
        assertTrue(cp.contains(File.pathSeparator), "a real class path: " + cp);
    }

    /** {@code Ane.fit} from plain jshell: a graph built in the script trains in the script's worker, as the same run does here. */
    @Test
    void jshellScriptFitsAGraph() throws Exception {
        Path jshell = Path.of(System.getProperty("java.home"), "bin", "jshell");
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        Path script = dir.resolve("fit.jsh"), imports = Files.writeString(dir.resolve("imports.jsh"), Ane4jExtension.importSnippet(true));
        Path run = dir.resolve("fit");
        Files.writeString(script, """
                var fit = Ane.fit(ane4j.train.GraphRunFixture.mlp(), ane4j.train.GraphRunFixture.samples(96, 3), Map.of(), "steps = 20; lr = 0.05; backend = ref; runDir = %s");
                System.out.println("losses " + Arrays.toString(fit.history().stream().mapToDouble(m -> m.loss()).toArray()));
                System.out.println("w1 " + fit.param("w1").length);
                /exit
                """.formatted(run.toString().replace("\\", "\\\\")));
        JupyterClientTest.Result r = JupyterClientTest.exec(List.of(jshell.toString(), "--class-path", cp,
                "-R--enable-native-access=ALL-UNNAMED", "-R--add-modules=jdk.incubator.vector", "-R-Djava.awt.headless=true",
                imports.toString(), script.toString()), Map.of(), 300);
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.out().contains("step 20/20"), "progress lines: " + r.out());
        assertTrue(r.out().contains("w1 64"), r.out());
        String line = r.out().lines().filter(l -> l.startsWith("losses ")).findFirst().orElseThrow(() -> new AssertionError(r.out()));
        double[] there = Arrays.stream(line.substring(8, line.length() - 1).split(", ")).mapToDouble(Double::parseDouble).toArray();
        // the same run in this JVM, from the files the script's run folder holds
        try (var t = new ane4j.train.Trainer(ane4j.run.TrainOptions.of(Map.of("graph", run.resolve("graph.mil").toString(), "data", run.resolve("data").toString(),
                "steps", "20", "lr", "0.05", "backend", "ref", "runDir", dir.resolve("here").toString())), new RefBackend(RefBackend.Options.ANE_LIKE), null)) {
            double[] here = t.run(null, 0).stream().mapToDouble(m -> m.loss()).toArray();
            assertArrayEquals(here, there, "the jshell run (in its worker) and this JVM's run give the same losses");
        }
        assertFalse(r.out().contains("Exception"), r.out());
    }
}
