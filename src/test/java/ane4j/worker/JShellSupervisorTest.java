package ane4j.worker;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/** {@code jshell --class-path …} drives a supervised worker with the same API as Java code. */
@Tag("process")
class JShellSupervisorTest {
    @TempDir Path dir;

    static final String SCRIPT = """
            import ane4j.worker.*;
            import ane4j.mil.*;
            import java.util.*;
            var s = new Supervisor(Supervisor.Options.defaults().withBackend("ref").withLog(l -> {}));
            var p = Mil.program().function("main", f -> f.output(f.named("y", f.mul(f.input("x", Mil.fp16(1, 4, 1, 4)), 2f)))).build();
            var k = s.compile(p);
            var x = k.allocateInput("x");
            var y = k.allocateOutput("y");
            x.fill(1.5f);
            k.evaluate(Map.of("x", x), Map.of("y", y));
            System.out.println("RESULT y0=" + y.get(0) + " y15=" + y.get(15) + " childPid=" + (s.workerPid() > 0 && s.workerPid() != ProcessHandle.current().pid()) + " kernels=" + s.status().liveKernels());
            s.close();
            /exit
            """;

    @Test
    void jshellDrivesASupervisedWorker() throws Exception {
        Path jshell = Path.of(System.getProperty("java.home"), "bin", "jshell");
        assumeTrue(Files.isExecutable(jshell), "no jshell in " + System.getProperty("java.home"));
        Path script = Files.writeString(dir.resolve("worker.jsh"), SCRIPT);
        Path out = dir.resolve("out.txt");
        Process p = new ProcessBuilder(jshell.toString(), "--class-path", System.getProperty("java.class.path"), script.toString())
                .redirectErrorStream(true).redirectOutput(out.toFile()).start();
        boolean ended = p.waitFor(120, TimeUnit.SECONDS);
        if (!ended) p.destroyForcibly();
        String text = Files.readString(out);
        assertTrue(ended, "jshell did not finish: " + text);
        assertTrue(text.contains("RESULT y0=3.0 y15=3.0 childPid=true kernels=1"), text);
    }
}
