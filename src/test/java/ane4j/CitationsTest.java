package ane4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Every markdown document a source file names is in the repository, or is another project's named with its owner (the script in docs/). */
class CitationsTest {
    @Test
    void everyCitedDocumentCanBeFollowed() throws Exception {
        Process p = new ProcessBuilder("bash", "docs/check-citations.sh").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(60, TimeUnit.SECONDS);
        assertEquals(0, p.exitValue(), out);
    }
}
