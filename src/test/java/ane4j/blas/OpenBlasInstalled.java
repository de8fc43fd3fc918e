package ane4j.blas;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Whether this machine has an OpenBLAS the loader can find: a test that needs it skips, with how to get it, if not. */
final class OpenBlasInstalled {
    private OpenBlasInstalled() {}

    static final String HOW = "no OpenBLAS on this machine (Debian/Ubuntu: apt-get install libopenblas0-pthread; macOS: brew install openblas)";

    static boolean onThisMachine() {
        for (String lib : OpenBlas.LIBRARIES) if (lib.startsWith("/") && Files.exists(Path.of(lib))) return true;
        for (String dir : List.of("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"))
            for (String lib : OpenBlas.LIBRARIES) if (Files.exists(Path.of(dir, lib))) return true;
        return false;
    }
}
