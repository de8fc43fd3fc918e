package ane4j.worker;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Where shared tensors go: ANE4J_SHARED_DIR (a RAM disk on macOS), else /dev/shm, else the temp dir. */
class SharedMemoryPlaceTest {
    @TempDir Path tmp;

    @Test
    void theVariableWinsAndIsCheckedInOneLine() throws Exception {
        Path ram = Files.createDirectories(tmp.resolve("ramdisk"));
        assertEquals(ram, SharedMemory.defaultBase(ram.toString(), tmp));
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> SharedMemory.defaultBase(tmp.resolve("absent").toString(), tmp));
        assertEquals("[worker] ANE4J_SHARED_DIR=" + tmp.resolve("absent") + " is not a writable directory; create it or unset the variable", e.getMessage());
    }

    @Test
    void withoutItDevShmWhereWritableElseTheTempDir() {
        Path shm = Path.of("/dev/shm");
        Path expected = Files.isDirectory(shm) && Files.isWritable(shm) ? shm : tmp;
        assertEquals(expected, SharedMemory.defaultBase(null, tmp));
        assertEquals(expected, SharedMemory.defaultBase(" ", tmp));
    }
}
