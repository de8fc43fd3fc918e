package ane4j.blas;

import org.junit.jupiter.api.Test;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A JVM started without {@code --add-modules jdk.incubator.vector} still loads ane4j.blas and computes. */
class NoVectorModuleTest {

    /** Run in the child JVM. */
    public static void main(String[] args) {
        Sgemm s = Blas.get();
        float[] c = new float[1];
        s.matmul(new float[]{2, 3}, new float[]{4, 5}, c, 1, 1, 2);
        System.out.println(s.name() + " " + c[0] + " vector=" + Blas.javaVector().isPresent());
    }

    @Test
    void fallsBackToTheScalarLoopAndSaysWhy() throws Exception {
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        Process p = new ProcessBuilder(List.of(java, "-Dane4j.blas=java", "-cp", System.getProperty("java.class.path"),
                NoVectorModuleTest.class.getName())).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), err);
        assertEquals("java-scalar 23.0 vector=false", out, err);
        assertTrue(err.contains("[blas] sgemm: pure Java (java-scalar") && err.contains("not in the boot layer"), err);
    }
}
