package ane4j.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 18 row 9: shared tensor folders of dead processes go at the next start; a live process's never do. */
class StaleSharedMemoryTest {
    @TempDir Path base;

    @Test
    void onlyFoldersOfDeadProcessesAreRemoved() throws Exception {
        Process p = new ProcessBuilder("true").start();
        p.waitFor();
        long dead = p.pid(), live = ProcessHandle.current().pid();
        Path gone = Files.createDirectories(base.resolve("ane4j-" + dead + "-1a2b").resolve("kernels/k1"));
        Files.write(base.resolve("ane4j-" + dead + "-1a2b").resolve("t1.bin"), new byte[4096]);
        Path alive = Files.createDirectories(base.resolve("ane4j-" + live + "-3c4d"));
        Path other = Files.createDirectories(base.resolve("ane4j-notapid-x"));
        Path file = Files.writeString(base.resolve("ane4j-" + dead + "-5e6f"), "a file, not a folder");
        List<String> log = new ArrayList<>();
        List<Path> removed = SharedMemory.removeStale(base, log::add);
        assertEquals(List.of(base.resolve("ane4j-" + dead + "-1a2b")), removed.stream().filter(d -> d.startsWith(base)).toList());
        assertFalse(Files.exists(gone.getParent().getParent()));
        assertTrue(Files.exists(alive) && Files.exists(other) && Files.exists(file));
        assertTrue(log.contains("[worker] removed " + base.resolve("ane4j-" + dead + "-1a2b") + " (0.0 MB of shared tensors of process " + dead + ", which is gone)"), log.toString());
    }
}
